import ArgumentParser

/// The CPU priority an executable's work runs at. On Linux, libdispatch gives each of its threads the nice value of
/// the work it runs (background 10, utility 2, default 0); in a process allowed to lower its niceness (root, as the
/// benchmarks and tests run) that undoes `nice`, so a priority is set by running the work as a task of that
/// priority, which holds for any user.
///
/// Workers on the coordinator's machine run at ``background``: they yield the CPU to the store's writer, whose
/// single thread paces every import and would otherwise wait in the run queue behind them (see docs/benchmarks.md,
/// 'Import'), and take every cycle it leaves.
public enum ProcessPriority: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Nice 10: runs when nothing of default priority wants the core.
    case background
    /// Nice 2.
    case utility
    /// Nice 0: the system's default.
    case `default`

    var taskPriority: TaskPriority {
        switch self {
        case .background: .background
        case .utility: .low
        case .default: .medium
        }
    }

    /// Runs `body` at this priority until it ends; throws what it throws.
    ///
    /// It runs as a detached task awaited through a continuation: awaiting the task itself would raise its
    /// priority to the caller's (Swift escalates a task that a higher-priority one waits for).
    public func run(_ body: @escaping @Sendable () async throws -> Void) async throws {
        guard self != .default else { return try await body() }
        let priority = taskPriority
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Task.detached(priority: priority) {
                do {
                    try await body()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
