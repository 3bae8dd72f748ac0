import UnixSignals

/// SIGTERM and SIGINT for a command that is not a `ServiceGroup` (the CLI's long-running commands): they stop
/// the command's work so it can finish its business (store a position, close sockets) and exit 0.
public enum StopSignals {
    /// Runs `body` until it returns, or until SIGTERM or SIGINT arrives, which cancels it.
    ///
    /// The signals are trapped before `body` starts, so none arriving once this is called kills the process.
    /// - Returns: `body`'s value, or nil when a signal stopped it.
    /// - Throws: what `body` throws before a signal.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask { try await body() }
            tasks.addTask {
                for await _ in signals { return nil }
                return nil
            }
            defer { tasks.cancelAll() }
            // The first to end decides; a body cancelled by the signal ends without being waited on here.
            return try await tasks.next() ?? nil
        }
    }
}
