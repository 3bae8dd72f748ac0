import Logging
import TributaryCore

/// The coordinator's request handlers, one per area, behind every transport: the ZeroMQ router decodes a client's
/// message, calls one and encodes what it promised; the HTTP routes and the dashboard call the same ones.
///
/// Each takes and returns domain values, checks its requests, and says what it needs before it answers: nothing (a
/// read of what is committed), the saves before it (a read after them), or a write of its own queued behind them
/// (``Promised``). What a write changes for the workers the router serves, it tells the router (``JobsChange``).
package struct CoordinatorHandlers: Sendable {
    /// Job lists, a job's details; retry, cancel, delete.
    package let jobs: JobsHandler
    /// A batch's progress; the recent batches.
    package let batches: BatchesHandler
    /// Pausing and resuming named queues.
    package let queues: QueuesHandler
    /// Periodic jobs.
    package let schedules: SchedulesHandler
    /// History and snapshot pages.
    package let feed: FeedHandler
    /// Durable subscribers' positions.
    package let subscribers: SubscribersHandler
    /// Fetches of the store's objects, and the model.
    package let fetches: FetchHandler
    /// The coordinator's status.
    package let status: StatusHandler
    /// Online backups.
    package let backups: BackupHandler
    /// The checks of a push (which the router writes with the saves it gathers).
    let pushes: PushCheck
    private let readers: ReaderPool

    init(_ parts: HandlerParts) {
        jobs = JobsHandler(parts: parts)
        batches = BatchesHandler(parts: parts)
        queues = QueuesHandler(parts: parts)
        schedules = SchedulesHandler(parts: parts)
        feed = FeedHandler(parts: parts)
        subscribers = SubscribersHandler(parts: parts)
        fetches = FetchHandler(parts: parts)
        status = StatusHandler(parts: parts)
        backups = BackupHandler(parts: parts)
        pushes = PushCheck(configuration: parts.configuration)
        readers = parts.readers
    }

    /// Answers a request of a caller in this process (the HTTP routes): takes its place among the requests in flight,
    /// then calls `make` (a handler's method) and awaits what it promised.
    /// - Throws: the handler's refusal; ``/TributaryProtocol/ProtocolError`` `TOO_MANY_REQUESTS` or
    ///   `SHUTTING_DOWN` when no place is free (and then the handler was not called).
    package func answer<Value: Sendable>(_ make: () throws -> Promised<Value>) async throws -> Value {
        try await readers.run(make)
    }
}
