import Foundation

/// A condition that did not become true in time.
struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Re-checks `condition` (bounded polling, as swift-nio's integration tests do) until it holds or `timeout`
/// passes. For states observed from outside a process, where there is no event to await.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(30), interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return }
        // Checked after the condition, so that a poll woken late (the machine loaded by the tests running beside
        // it) still sees a condition that became true meanwhile, rather than timing out without a last look.
        if ContinuousClock.now >= deadline { throw TimedOut(what: what) }
        try await Task.sleep(for: interval)
    }
}

/// Runs `body`, failing with ``TimedOut`` if it has not finished within `timeout`.
func withTimeout<T: Sendable>(
    _ what: String, _ timeout: Duration = .seconds(60), _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TimedOut(what: what)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// Runs `body`, which blocks (a socket's wait, a pipe's read), on a thread of its own and returns its result,
/// leaving the cooperative pool free for the tasks that the body waits on.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
