import Logging
import TributaryCore

/// What the handlers share: the store, its writer and readers, the configuration, the router's last published state,
/// and where they tell the router what a request changed for the workers it serves.
struct HandlerParts: Sendable {
    let store: RootStore
    let writer: StoreWriter
    let readers: ReaderPool
    let configuration: CoordinatorConfiguration
    /// The router's workers as of its last step (a status, a job's waiting reason).
    let snapshot: RouterSnapshot
    let logger: Logger
    /// Tells the router what changed for its workers (a job cancelled while running, jobs that became due).
    let tell: @Sendable (JobsChange) -> Void
    /// The cluster as this coordinator's status shows it, while it is its cluster's primary; nil alone.
    var cluster: (@Sendable () -> ClusterStatus)?
}

/// What a handler's write changed that the router acts on for the workers it serves, in its next step.
enum JobsChange: Sendable {
    /// Jobs ended (their counters and `$jobs` topic), and jobs may have become due (a retry, a batch's callback).
    case settled([JobEnding])
    /// A running attempt was cancelled: its worker is to stop it, if it still holds it.
    case attemptCancelled(job: Int64, attempt: Int)
    /// Jobs may have become due (a queue resumed).
    case due
}
