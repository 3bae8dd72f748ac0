import Logging
import ServiceLifecycle
import TributaryCluster

/// A primary's record of its standbys in etcd (``SyncState``): each standby that comes in sync is added, so that
/// it may take over. Never removes one: the stage is strict, so a standby in sync holds every acknowledged commit
/// from then on, and the record only ever names nodes that do. Ends at graceful shutdown.
final class SyncStateKeeper: Service, Sendable {
    private let record: ClusterSyncRecord
    private let state: SyncState
    private let changes: AsyncStream<[String]>
    private let continuation: AsyncStream<[String]>.Continuation
    private let logger: Logger

    /// Keeps `initial` (written already) up to date in `record`.
    init(record: ClusterSyncRecord, initial: SyncState, logger: Logger) {
        self.record = record
        state = initial
        (changes, continuation) = AsyncStream.makeStream(of: [String].self, bufferingPolicy: .bufferingNewest(1))
        self.logger = logger
    }

    /// The standbys in sync now (from the stage's thread; never waits).
    func inSync(_ names: [String]) { continuation.yield(names) }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var recorded = self.state
            for await names in self.changes {
                let standbys = Set(recorded.standbys).union(names).sorted()
                guard standbys != recorded.standbys else { continue }
                var next = recorded
                next.standbys = standbys
                // Until written, or deposed: a standby not named yet only cannot take over.
                while !Task.isCancelled {
                    do {
                        if try await self.record.record(next) {
                            recorded = next
                            self.logger.notice("standbys in sync recorded in etcd: \(standbys.joined(separator: ", "))")
                        } else {
                            self.logger.warning("the sync state was not recorded: this node no longer leads")
                        }
                        break
                    } catch {
                        self.logger.warning("cannot record the sync state in etcd: \(error)")
                        try? await Task.sleep(for: .seconds(1))
                    }
                }
            }
        }
    }
}
