import Logging
import TributaryCore
import ZeroMQ

/// What a coordinator adds to its commit path while it is its cluster's primary (docs/failover.md): its store
/// promises the leader epoch, records every write transaction from then on, and the ``ReplicationStage`` holds each
/// write until the standbys in sync have it.
struct PrimaryReplication: Sendable {
    /// The cluster's name and this node's, for its status.
    let cluster: String
    let node: String
    /// The leader epoch this primary writes under.
    let epoch: Int64
    /// The how-many-th time this node serves under ``epoch`` (from 1).
    let run: Int
    /// The replication endpoint to bind.
    let listen: String
    /// Release without waiting for a standby (``ClusterSettings/asynchronous``).
    let asynchronous: Bool
    /// How long the jobs earlier primaries leased stay running for their workers to take on
    /// (``ClusterSettings/jobAdoptionWindow``).
    let jobAdoptionWindow: Duration
    /// Whether this node still leads under ``epoch`` (its election's clock): nothing is released once it does not.
    let stillLeads: @Sendable () -> Bool
    /// Told each time the standbys in sync, or those to drop, change (``SyncStateKeeper/syncChanged()``).
    let syncChanged: @Sendable () -> Void
    /// Told the stage and the pipeline once made, so that a lost leadership can stop what they hold.
    let started: @Sendable (ReplicationStage, CommitPipeline) -> Void

    /// What the worker ids this primary grants start with: its epoch (`e12-`), and its run when not the first
    /// (`e12.2-`). No two runs of any primaries grant the same id, and none's prefix starts another's, so a primary
    /// tells the leases it granted from those its predecessors did (``StoreWrite/requeueLeftRunning(grantedBefore:)``).
    var workerIDPrefix: String { run == 1 ? "e\(epoch)-" : "e\(epoch).\(run)-" }

    /// Promises ``epoch`` in `store` (before its writer exists, as opening it writes), gives a store with no record a
    /// history of its own (``RootStore/beginHistory()``), binds the stage and starts recording into it.
    func start(on store: RootStore, context: ZMQContext, logger: Logger) async throws -> ReplicationStage {
        try await store.promise(epoch: epoch)
        let stage = try ReplicationStage(
            endpoint: listen, context: context, tail: try await store.beginHistory(), epoch: epoch,
            schema: try await store.pool.read(SchemaFingerprint.read),
            snapshots: SnapshotSource(store: store, logger: logger), asynchronous: asynchronous,
            stillLeads: stillLeads, syncChanged: syncChanged, logger: logger)
        _ = try await store.startRecording(epoch: epoch) { stage.recorded($0) }
        return stage
    }

    /// The cluster as this primary's status shows it: its stage's standbys, and the writes its pipeline holds.
    func status(of stage: ReplicationStage, pipeline: CommitPipeline) -> ClusterStatus {
        stage.status(cluster: cluster, node: node, heldWrites: pipeline.heldCount)
    }
}
