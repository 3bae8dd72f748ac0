import Foundation
import Logging
import ServiceLifecycle
import Testing
import ZeroMQ

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo

/// A primary's writer with its replication stage and a standby's link over ZeroMQ, in one process (docs/failover.md):
/// a write is released (answered, published, returned) only once the standby holds its record durably; with the
/// standby gone writes are held, and released once it is back; a standby that promised a newer epoch refuses a
/// deposed primary's records, whose writes then stay held.
@Suite("Replication: the primary's stage and a standby's link", .serialized)
struct ReplicationLinkTests {
    /// A primary store recording into its stage, and a standby store made from its snapshot.
    final class Pair: Sendable {
        let directory: TemporaryDirectory
        let primary: RootStore
        let standby: RootStore
        let stage: ReplicationStage
        let writer: StoreWriter
        let context: ZMQContext
        /// Every record the primary made, as the stage got it.
        let records = Locked<[ReplicationRecord]>([])
        private let stageGroup: ServiceGroup
        private let stageTask: Task<Void, Never>

        init(epoch: Int64 = 3) async throws {
            directory = try TemporaryDirectory()
            primary = try RootStore.open(path: directory.path("primary.sqlite"), model: DemoData.model)
            _ = try await primary.backup(to: directory.path("standby.sqlite"))
            standby = try RootStore.open(path: directory.path("standby.sqlite"), model: DemoData.model)
            context = try ZMQContext()
            let stage = try ReplicationStage(
                endpoint: "tcp://127.0.0.1:*", context: context, tail: try await primary.replicationTail(),
                epoch: epoch, schema: try await primary.pool.read(SchemaFingerprint.read),
                logger: Logger(label: "stage"))
            self.stage = stage
            let records = records
            _ = try await primary.startRecording(epoch: epoch) { record in
                records.withLock { $0.append(record) }
                stage.recorded(record)
            }
            writer = StoreWriter(store: primary, logger: Logger(label: "writer"), stages: [stage], answersWaiting: {})
            let group = ServiceGroup(configuration: .init(services: [stage], logger: Logger(label: "group")))
            stageGroup = group
            stageTask = Task { try? await group.run() }
        }

        /// A standby link to the primary, running until the returned group shuts down.
        func link() -> (ServiceGroup, Task<Void, Never>) {
            let standby = standby
            let link = ReplicaLink(
                primary: stage.endpoint, name: "b", context: context,
                hello: {
                    try await standby.pool.read { db in
                        ReplicationMessage.Hello(
                            name: "b", tail: try ReplicationTail.read(db),
                            promised: try Int64.fetchOne(db, sql: "SELECT promised FROM tributary_replication") ?? 0,
                            schema: try SchemaFingerprint.read(db))
                    }
                },
                apply: { records, epoch in try await standby.run(.applyRecords(records, from: epoch)) },
                logger: Logger(label: "link"))
            let group = ServiceGroup(configuration: .init(services: [link], logger: Logger(label: "link group")))
            return (group, Task { try? await group.run() })
        }

        func stop() async {
            await stageGroup.triggerGracefulShutdown()
            await stageTask.value
            try? primary.close()
            try? standby.close()
            context.terminate()
        }

        /// Waits (bounded) until the stage has released every write it held.
        func released(_ what: String) async throws {
            try await waitUntil(what, timeout: .seconds(30)) { writer.pipeline.heldCount == 0 }
        }

        func paused(in store: RootStore) async throws -> [String] {
            try await store.pool.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM tributary_paused_queues ORDER BY name")
            }
        }
    }

    @Test("a write returns only once the standby holds it; the standby's tables then equal the primary's")
    func releasedOnceCopied() async throws {
        let pair = try await Pair()
        let first = try pair.writer.queue(.setQueue("a", paused: true))
        let firstDone = Task { try await first.value }
        // Committed on the primary, held: no standby has it.
        try await waitUntil("the write to be committed and held") {
            pair.writer.queuedWriteCount == 0 && pair.writer.pipeline.heldCount == 1
        }
        #expect(try await pair.paused(in: pair.primary) == ["a"])
        #expect(try await pair.paused(in: pair.standby) == [])
        let (link, linkTask) = pair.link()

        try await pair.released("the first write")
        #expect(try await firstDone.value)
        // Returned: so the standby holds it.
        #expect(try await pair.paused(in: pair.standby) == ["a"])
        for name in ["b", "c", "d"] {
            let write = try pair.writer.queue(.setQueue(name, paused: true))
            try await pair.released("write \(name)")
            #expect(try await write.value)
        }
        #expect(try await pair.paused(in: pair.standby) == ["a", "b", "c", "d"])
        #expect(try await pair.standby.replicationTail() == pair.primary.replicationTail())
        #expect(
            try await ReplicationRecordTests.tables(of: pair.standby) == ReplicationRecordTests.tables(of: pair.primary)
        )
        await link.triggerGracefulShutdown()
        await linkTask.value
        await pair.stop()
    }

    @Test("with the standby gone a write is held, and released once the standby is back and has it")
    func heldWhileTheStandbyIsGone() async throws {
        let pair = try await Pair()
        var (link, linkTask) = pair.link()
        let first = try pair.writer.queue(.setQueue("a", paused: true))
        try await pair.released("the first write")
        #expect(try await first.value)
        await link.triggerGracefulShutdown()
        await linkTask.value
        let second = try pair.writer.queue(.setQueue("b", paused: true))
        let secondDone = Task { try await second.value }
        try await waitUntil("the write to be committed and held") {
            pair.writer.queuedWriteCount == 0 && pair.writer.pipeline.heldCount == 1
        }
        #expect(try await pair.paused(in: pair.standby) == ["a"])
        (link, linkTask) = pair.link()
        try await pair.released("the second write")
        #expect(try await secondDone.value)
        #expect(try await pair.paused(in: pair.standby) == ["a", "b"])
        await link.triggerGracefulShutdown()
        await linkTask.value
        await pair.stop()
    }

    @Test(
        "a standby that comes holding every record releases the held writes at its hello, with nothing to acknowledge")
    func helloReleases() async throws {
        let pair = try await Pair()
        let write = try pair.writer.queue(.setQueue("a", paused: true))
        let done = Task { try await write.value }
        try await waitUntil("the write to be committed and held") {
            pair.writer.queuedWriteCount == 0 && pair.writer.pipeline.heldCount == 1
        }
        // The standby already holds the record (applied before its link, as a copy that was not acknowledged).
        _ = try await pair.standby.run(.applyRecords(pair.records.value, from: 3))
        let (link, linkTask) = pair.link()
        try await pair.released("the held write")
        #expect(try await done.value)
        await link.triggerGracefulShutdown()
        await linkTask.value
        await pair.stop()
    }

    @Test("a standby whose store's schema differs is not taken: the writes stay held")
    func otherSchemaRefused() async throws {
        let pair = try await Pair()
        try await pair.standby.pool.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE INDEX extra ON tributary_meta(value)")
        }
        let (link, linkTask) = pair.link()
        let write = try pair.writer.queue(.setQueue("a", paused: true))
        let done = Task { try await write.value }
        try await waitUntil("the write to be committed and held") {
            pair.writer.queuedWriteCount == 0 && pair.writer.pipeline.heldCount == 1
        }
        // Said hello (the primary answered it), and was not taken.
        try await waitUntil("the standby's hello to be answered") { pair.stage.helloes > 0 }
        #expect(pair.stage.standbys.isEmpty)
        #expect(try await pair.paused(in: pair.standby) == [])
        await link.triggerGracefulShutdown()
        await linkTask.value
        await pair.stop()
        done.cancel()
    }

    @Test("a standby that promised a newer epoch refuses a deposed primary's records: its writes stay held")
    func deposedPrimaryIsRefused() async throws {
        let pair = try await Pair(epoch: 3)
        #expect(try await pair.standby.run(.promise(epoch: 4)) == 4)
        let (link, linkTask) = pair.link()
        let write = try pair.writer.queue(.setQueue("a", paused: true))
        let done = Task { try await write.value }
        try await waitUntil("the write to be committed and held") {
            pair.writer.queuedWriteCount == 0 && pair.writer.pipeline.heldCount == 1
        }
        // The standby's hello said it follows epoch 4: the primary knows it was deposed and takes no standby.
        try await waitUntil("the primary to learn it was deposed") { pair.stage.deposed != nil }
        #expect(pair.stage.standbys.isEmpty)
        #expect(try await pair.paused(in: pair.standby) == [])
        #expect(pair.writer.pipeline.heldCount == 1)
        await link.triggerGracefulShutdown()
        await linkTask.value
        await pair.stop()
        done.cancel()
    }
}
