/// Runs one kind of job in a worker. Register handlers with a ``WorkerService`` to add job kinds of your own.
///
/// ```swift
/// struct TouchUsers: JobHandler {
///     let kind = "touch-users"
///     func run(_ job: JobRun) async throws {
///         let context = job.makeContext()
///         try await context.perform { context in _ = try context.findOrCreate("User", matching: ["login": .string("a")]) }
///         try await job.complete(context, progress: 1)
///     }
/// }
/// ```
public protocol JobHandler: Sendable {
    /// The job kind this handler runs, as pushed by clients.
    var kind: String { get }
    /// Runs the job: make contexts from `job`, save them through it, and finish with ``JobRun/complete(_:progress:)``.
    /// Throwing fails the job with the error's description.
    func run(_ job: JobRun) async throws
}
