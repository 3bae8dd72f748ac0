/// The built-in `noop` job: completes at once, changing nothing. For health checks and for measuring the job
/// machinery itself (lease, dispatch, durable completion) without any work inside the job.
public struct NoopJobHandler: JobHandler {
    /// The job kind.
    public static let kindName = "noop"
    public let kind = NoopJobHandler.kindName

    /// The handler every worker registers for `noop` jobs.
    public init() {}

    public func run(_ job: JobRun) async throws {
        try await job.complete(progress: job.spec.total)
    }
}
