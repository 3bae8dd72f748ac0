import ServiceLifecycle

/// A step between a write's commit and its answer, inserted into the ``CommitPipeline``: it is handed every write
/// the store committed, in the order committed, and says when the writes up to one may go on towards their answer.
///
/// Nothing in a write is acknowledged, published on the feed, dispatched or returned to its caller before every
/// stage has let it go, so a stage that holds writes until another copy of them is durable (a standby's
/// confirmation) makes every answer wait for that copy. A stage releases in order: releasing a position releases
/// every write before it. It runs as a `Service` in the coordinator's group, beside the writer.
protocol CommitStage: Service {
    /// Takes writes the store committed, oldest first; called again with later ones while earlier ones are held.
    /// Never waits: a stage that needs time queues the writes and calls `release` later, from any thread.
    /// - Parameter release: lets every write up to and including the position given go on.
    func committed(_ writes: [CommittedWrite], release: @escaping @Sendable (_ through: UInt64) -> Void)
}

/// A write the store committed, as the ``CommitPipeline`` carries it from the writer to its answer.
struct CommittedWrite: Sendable {
    /// Its place in the writer's order: each write handed to the writer takes the next (from 1).
    let position: UInt64
    /// What the router answers for it: a group commit's saves and claims, or a push; nil for any other write,
    /// whose caller awaits its result.
    let answer: WriterAnswer?
    /// How many saves it holds (a group commit's members), for reads that wait for the saves before them.
    let saves: Int
}
