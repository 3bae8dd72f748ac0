import Foundation
import TributaryCore
import UnixSignals

/// SIGTERM and SIGINT for a command that is not a `ServiceGroup` (the CLI's long-running commands): they stop
/// the command's work so it can finish its business (store a position, close sockets) and exit 0.
public enum StopSignals {
    /// How long a stopping command may take to finish its business before the process exits anyway (status 1,
    /// saying so): a coordinator that does not answer, or standard output blocked by a reader that stopped
    /// reading, cannot keep it alive.
    public static let gracePeriod: Duration = .seconds(15)

    /// Runs `body` until it returns, or until SIGTERM or SIGINT arrives, which cancels it.
    ///
    /// The signals are trapped before `body` starts, so none arriving once this is called kills the process.
    /// From the first signal on, the process has ``gracePeriod`` to end.
    /// - Returns: `body`'s value, or nil when a signal stopped it.
    /// - Throws: what `body` throws before a signal.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask { try await body() }
            tasks.addTask {
                for await signal in signals {
                    startDeadline(after: signal)
                    return nil
                }
                return nil
            }
            // The first to end decides; the other is cancelled, and the group waits for it to end.
            defer { tasks.cancelAll() }
            return try await tasks.next() ?? nil
        }
    }

    /// Ends the process if it has not ended within ``gracePeriod`` of `signal`.
    private static func startDeadline(after signal: UnixSignal) {
        let thread = Thread {
            Thread.sleep(forTimeInterval: gracePeriod.seconds)
            Terminal.error("Error: not stopped \(gracePeriod) after \(signal); exiting without finishing")
            exit(1)
        }
        thread.name = "tributary-stop-deadline"
        thread.start()
    }
}
