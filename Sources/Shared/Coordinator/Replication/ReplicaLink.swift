import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ZeroMQ

/// A standby's link to its primary (docs/failover.md): it says hello with the last record its store holds, applies
/// the records that follow as they come (all that arrived together in one transaction, through the store's writer,
/// synced) and acknowledges each batch once durable. It says hello again whenever it has heard nothing for
/// ``helloInterval`` (a reconnection, a record lost on the way: the primary then sends what follows its tail again).
/// A record the store refuses (an older epoch than promised, a gap, another history) is answered with the reason and
/// not acknowledged: the primary that sent it cannot release the writes it holds.
final class ReplicaLink: Service, Sendable {
    /// Applies records to the standby's store in one transaction, stopping at the first it refuses; returns the
    /// store's last record after them and the refusal.
    typealias Apply =
        @Sendable ([ReplicationRecord], _ from: Int64) async throws -> (
            ReplicationTail, ReplicationRefusal?
        )

    /// How long the link waits, hearing nothing, before it says hello again.
    static let helloInterval: Duration = .seconds(1)

    private let primary: String
    private let name: String
    private let context: ZMQContext
    private let hello: @Sendable () async throws -> ReplicationMessage.Hello
    private let apply: Apply
    private let snapshotNeeded: @Sendable (String) -> Void
    private let logger: Logger

    /// - Parameters:
    ///   - primary: the primary's replication endpoint.
    ///   - name: this standby's name in the cluster (its socket's routing id).
    ///   - hello: what to say: the store's last record, the epoch it promised, its schema; read each time.
    ///   - snapshotNeeded: told (with why) that the primary cannot bring the store on from its last record: the
    ///     store is to be replaced by the primary's snapshot (``SnapshotFetch``).
    init(
        primary: String, name: String, context: ZMQContext,
        hello: @escaping @Sendable () async throws -> ReplicationMessage.Hello, apply: @escaping Apply,
        snapshotNeeded: @escaping @Sendable (String) -> Void = { _ in }, logger: Logger
    ) {
        self.primary = primary
        self.name = name
        self.context = context
        self.hello = hello
        self.apply = apply
        self.snapshotNeeded = snapshotNeeded
        self.logger = logger
    }

    /// Follows the primary until graceful shutdown.
    func run() async throws {
        let dealer = try context.makeSocket(.dealer)
        try dealer.setLinger(milliseconds: 0)
        try dealer.setRoutingID(Data(name.utf8))
        try dealer.connect(primary)
        let loop = try SocketLoop(name: "replica", sockets: [.init(dealer, receives: true)])
        loop.start()
        loop.send(ReplicationMessage.hello(try await hello()).frames, on: 0)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.sayHelloWhenIdle(loop) }
                group.addTask { await self.follow(loop) }
                await group.next()
                group.cancelAll()
            }
        }
        await loop.stop()
    }

    /// Applies what arrives, acknowledging each batch once durable.
    private func follow(_ loop: SocketLoop) async {
        for await batch in loop.inbound {
            lastHeard.now()
            let messages = batch.compactMap { ReplicationMessage(frames: $0.frames) }
            for case .refused(let reason, _) in messages { logger.error("replication: the primary refused: \(reason)") }
            for case .snapshotNeeded(let reason) in messages { snapshotNeeded(reason) }
            // Records in the order they came, in runs from one sender's epoch.
            var runs: [(epoch: Int64, records: [ReplicationRecord])] = []
            for case .record(let record, let sender) in messages {
                if runs.last?.epoch == sender {
                    runs[runs.count - 1].records.append(record)
                } else {
                    runs.append((sender, [record]))
                }
            }
            do {
                for run in runs {
                    let (tail, refusal) = try await apply(run.records, run.epoch)
                    loop.send(ReplicationMessage.acknowledged(tail.position).frames, on: 0)
                    guard let refusal else { continue }
                    logger.error("replication: \(refusal)")
                    loop.send(
                        ReplicationMessage.refused(refusal.description, staleEpoch: refusal.reason == .staleEpoch)
                            .frames, on: 0)
                    break
                }
            } catch {
                logger.error("replication: cannot apply records: \(error)")
            }
        }
    }

    private let lastHeard = LastHeard()

    /// Says hello again each time nothing arrived for ``helloInterval``.
    private func sayHelloWhenIdle(_ loop: SocketLoop) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.helloInterval)
            guard lastHeard.since >= Self.helloInterval else { continue }
            guard let hello = try? await hello() else { continue }
            loop.send(ReplicationMessage.hello(hello).frames, on: 0)
        }
    }

    /// When the link last heard from the primary.
    private final class LastHeard: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        func now() { instant.withLock { $0 = .now } }
        var since: Duration { instant.withLock { ContinuousClock.now - $0 } }
    }
}
