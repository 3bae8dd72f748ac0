import TributaryProtocol

/// The bounds a coordinator puts on what peers send, so that no peer can make it run out of memory or time. Each
/// has a `tributary-coordinator` flag; exceeding one is answered with an error naming the limit and its flag (a
/// message over the size limit cannot be answered: libzmq drops it and disconnects the peer).
public struct CoordinatorLimits: Sendable, Hashable {
    /// The largest message the jobs/control socket accepts (`ZMQ_MAXMSGSIZE`; `--max-message-mb`).
    public var maximumMessageBytes: Int64 = Limits.maximumMessageBytes
    /// The largest job payload a push may carry (`--max-payload-mb`): `TOO_LARGE`.
    public var maximumPayloadBytes: Int = Limits.maximumPayloadBytes
    /// The most rows (NDJSON lines) one import job's payload may carry (`--max-payload-rows`): `TOO_LARGE`.
    public var maximumPayloadRows: Int = 1_000_000
    /// The most rows (objects, over all batches) one change set may carry (`--max-change-set-rows`): `TOO_LARGE`.
    public var maximumChangeSetRows: Int = 1_000_000
    /// The most bytes one save message may take (`--max-change-set-mb`): `TOO_LARGE`.
    public var maximumChangeSetBytes: Int = 32 << 20
    /// The most requests one peer may have in flight: reads (history and snapshot pages, fetches, lists) and commands
    /// waiting for their write (`--max-pending-requests`): `TOO_MANY_REQUESTS`.
    public var maximumPendingRequestsPerPeer: Int = 16

    /// The default limits, as above.
    public init() {}
}
