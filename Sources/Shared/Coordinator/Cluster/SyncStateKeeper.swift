import Logging
import ServiceLifecycle
import Synchronization
import TributaryCluster

/// A primary's record of its standbys in etcd (``SyncState``): the standbys its stage counts in sync, so that one of
/// them may take over. A standby that comes in sync is named once the stage waits for it; one the stage drops (silent,
/// or back without records it acknowledged) is removed from the record first, and only then does the stage stop
/// waiting for it (``ReplicationStage/dropped(_:)``), so that the record only ever names standbys that hold every
/// acknowledged commit. Ends at graceful shutdown.
final class SyncStateKeeper: Service, Sendable {
    private let record: ClusterSyncRecord
    private let initial: SyncState
    private let stage = Mutex<ReplicationStage?>(nil)
    private let wakes: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let logger: Logger

    /// Keeps `initial` (written already) up to date in `record`.
    init(record: ClusterSyncRecord, initial: SyncState, logger: Logger) {
        self.record = record
        self.initial = initial
        (wakes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.logger = logger
    }

    /// The stage whose standbys it records, once it exists.
    func attach(_ stage: ReplicationStage) {
        self.stage.withLock { $0 = stage }
        continuation.yield()
    }

    /// The stage's standbys in sync, or those to drop, changed (from the stage's thread; never waits).
    func syncChanged() { continuation.yield() }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var recorded = self.initial
            for await _ in self.wakes {
                while !Task.isCancelled, let stage = self.stage.withLock({ $0 }) {
                    let (inSync, dropping) = stage.syncSet
                    var next = recorded
                    next.standbys = inSync.filter { !dropping.contains($0) }
                    guard next.standbys != recorded.standbys else {
                        if !dropping.isEmpty { stage.dropped(dropping) }
                        break
                    }
                    do {
                        guard try await self.record.record(next) else {
                            // Deposed: the stage releases nothing more anyway.
                            self.logger.warning("the sync state was not recorded: this node no longer leads")
                            break
                        }
                        recorded = next
                        self.logger.notice(
                            "standbys in sync recorded in etcd: \(next.standbys.isEmpty ? "none" : next.standbys.joined(separator: ", "))"
                        )
                        if !dropping.isEmpty { stage.dropped(dropping) }
                    } catch {
                        // Until written, or deposed: meanwhile a standby not named yet only cannot take over, and one
                        // to drop still holds the writes.
                        self.logger.warning("cannot record the sync state in etcd: \(error)")
                        try? await Task.sleep(for: .seconds(1))
                    }
                }
            }
        }
    }
}
