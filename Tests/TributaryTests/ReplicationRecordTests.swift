import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

/// The records of a primary's transactions (docs/failover.md): SQLite's session extension records what each write
/// transaction of the writer changed; applied in order to a snapshot of the store taken before them, they give the
/// same tables, row for row; a standby refuses a record out of order, of another history, damaged, conflicting with
/// its rows, or of an epoch older than it promised.
@Suite("Replication records")
struct ReplicationRecordTests {
    @Test("XXH64 gives the published hashes")
    func xxh64() {
        let cases: [([UInt8], UInt64, UInt64)] = [
            ([], 0, 0xEF46_DB37_51D8_E999),
            (Array("a".utf8), 0, 0xD24E_C4F1_A98C_6E5B),
            (Array("abc".utf8), 0, 0x44BC_2CF5_AD77_0999),
            (Array("Nobody inspects the spammish repetition".utf8), 0, 0xFBCE_A83C_8A37_8BF1),
            (Array((0..<3).flatMap { _ in (0...255).map(UInt8.init) }), 0, 0x8E03_C838_C596_036F),
            (Array((0..<100).map(UInt8.init)), 12_345_678_901_234_567, 0x98F2_7172_9AAC_FCA5),
        ]
        for (bytes, seed, expected) in cases {
            #expect(XXH64.hash(bytes, seed: seed) == expected, "\(bytes.count) bytes, seed \(seed)")
        }
    }

    @Test(
        "the writer's transactions (saves, jobs, schedules, queues), applied to an earlier snapshot, give the same tables"
    )
    func recordsRebuildTheStore() async throws {
        let directory = try TemporaryDirectory()
        let (store, writer, _) = try await LiveResultsTests.storeForRandomCommits(in: directory)
        defer { try? store.close() }
        let snapshot = directory.path("standby.sqlite")
        _ = try await store.backup(to: snapshot)
        let records = Locked<[ReplicationRecord]>([])
        _ = try await store.startRecording(epoch: 7) { record in records.withLock { $0.append(record) } }

        var random = SeededGenerator(seed: 11)
        var number: Int64 = 0
        for round in 0..<120 {
            _ = try await LiveResultsTests.randomCommit(
                writer, logins: LiveResultsTests.logins, number: &number, random: &random)
            switch round % 12 {
            case 0: _ = try await store.jobs.pushJobs((0..<3).map { _ in JobSpec(kind: "noop") }, batch: "b\(round)")
            case 3:
                for job in try await store.jobs.claimJobs(for: "w1", kinds: ["noop"], limit: 2) {
                    try await store.jobs.failJob(
                        id: job.id, attempt: job.attempt, worker: "w1", message: "no", permanent: round % 24 == 3)
                }
            case 5: _ = try await store.jobs.setQueue("slow", paused: round % 24 == 5)
            case 7:
                _ = try await store.jobs.putSchedule(
                    ScheduleSpec(name: "s\(round)", cron: "@every 1s", missed: .all, job: JobSpec(kind: "noop")))
            case 9: _ = try await store.jobs.fireDueSchedules(now: Date().timeIntervalSince1970 + 5, catchingUp: true)
            case 11: _ = try await store.jobs.releaseAllRunningJobs()
            default: break
            }
        }
        let recorded = records.value
        #expect(recorded.count > 100)
        #expect(recorded.map(\.position) == Array(1...UInt64(recorded.count)), "positions run from 1 without a gap")
        #expect(
            zip(recorded.dropFirst(), recorded).allSatisfy { $0.previousHash == $1.hash }, "each chained to the last")
        #expect(recorded.allSatisfy { $0.epoch == 7 && $0.isIntact })
        #expect(try await store.replicationTail() == recorded.last?.tail)

        let standby = try RootStore.open(path: snapshot, model: store.model)
        defer { try? standby.close() }
        for record in recorded {
            #expect(try await standby.run(.applyRecord(record, from: 7)) == record.tail)
        }
        let primaryTables = try await Self.tables(of: store)
        let standbyTables = try await Self.tables(of: standby)
        #expect(primaryTables.keys.sorted() == standbyTables.keys.sorted())
        for (table, rows) in primaryTables.sorted(by: { $0.key < $1.key }) {
            #expect(standbyTables[table] == rows, "table \(table)")
        }
    }

    @Test("a standby refuses a record out of order, of another history, damaged, conflicting, or of an older epoch")
    func refusals() async throws {
        let directory = try TemporaryDirectory()
        let (store, writer, _) = try await LiveResultsTests.storeForRandomCommits(in: directory)
        defer { try? store.close() }
        _ = try await store.backup(to: directory.path("standby.sqlite"))
        let records = Locked<[ReplicationRecord]>([])
        let capture = try await store.startRecording(epoch: 3) { record in records.withLock { $0.append(record) } }
        var random = SeededGenerator(seed: 5)
        var number: Int64 = 0
        while records.value.count < 4 {
            _ = try await LiveResultsTests.randomCommit(
                writer, logins: LiveResultsTests.logins, number: &number, random: &random)
            capture.epoch = Int64(3 + records.value.count / 2)
        }
        let recorded = records.value
        let standby = try RootStore.open(path: directory.path("standby.sqlite"), model: store.model)
        defer { try? standby.close() }

        func refusal(_ record: ReplicationRecord) async -> ReplicationRefusal.Reason? {
            do {
                _ = try await standby.run(.applyRecord(record, from: 3))
                return nil
            } catch {
                return (error as? ReplicationRefusal)?.reason
            }
        }
        #expect(await refusal(recorded[1]) == .gap)
        let damaged = ReplicationRecord(
            epoch: recorded[0].epoch, position: 1, previousHash: 0,
            changes: recorded[0].changes.dropLast() + Data([recorded[0].changes.last! ^ 1]), hash: recorded[0].hash)
        #expect(await refusal(damaged) == .damaged)
        let otherHistory = ReplicationRecord(
            after: ReplicationTail(position: 0, hash: 99, epoch: 3), epoch: 3, changes: recorded[0].changes)
        #expect(await refusal(otherHistory) == .diverged)
        #expect(await refusal(recorded[0]) == nil)
        #expect(await refusal(recorded[0]) == nil, "the last record sent again changes nothing")
        // A record whose rows the standby holds otherwise: the same changes again, as the next record.
        let repeated = ReplicationRecord(after: recorded[0].tail, epoch: 3, changes: recorded[0].changes)
        #expect(await refusal(repeated) == .conflict)
        // Promised a newer epoch than the primary's: its records are refused.
        #expect(try await standby.run(.promise(epoch: 9)) == 9)
        #expect(await refusal(recorded[1]) == .staleEpoch)
        #expect(try await standby.replicationTail() == recorded[0].tail)
    }

    @Test("what a rolled-back savepoint wrote is in no record; a transaction that changed nothing recorded makes none")
    func rolledBackSavepoints() async throws {
        struct Refused: Error {}
        let directory = try TemporaryDirectory()
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: LiveResultsTests.model)
        defer { try? store.close() }
        let records = Locked<[ReplicationRecord]>([])
        _ = try await store.startRecording(epoch: 1) { record in records.withLock { $0.append(record) } }
        try await store.pool.writeWithoutTransaction { db in
            let statements = store.writer.statements
            // Deletes and inserts undone, nothing else: no record.
            try statements.transaction(db) {
                _ = try? statements.savepoint(db) {
                    try db.execute(sql: "DELETE FROM tributary_meta")
                    try db.execute(sql: "INSERT INTO tributary_paused_queues VALUES ('gone', 0)")
                    throw Refused()
                }
            }
            // One undone, one kept: the record holds the kept one only.
            try statements.transaction(db) {
                _ = try? statements.savepoint(db) {
                    try db.execute(sql: "INSERT INTO tributary_paused_queues VALUES ('gone', 0)")
                    throw Refused()
                }
                try db.execute(sql: "INSERT INTO tributary_paused_queues VALUES ('kept', 0)")
            }
        }
        #expect(records.value.count == 1)
        let standby = directory.path("standby.sqlite")
        try FileManager.default.copyItem(atPath: directory.path("store.sqlite"), toPath: standby)
        // The standby as the store was before the record: without the row, at no record.
        let queue = try DatabaseQueue(path: standby)
        try await queue.write { db in
            try db.execute(sql: "DELETE FROM tributary_paused_queues")
            try db.execute(sql: "UPDATE tributary_replication SET position = 0, hash = 0, epoch = 0")
        }
        try queue.close()
        let replica = try RootStore.open(path: standby, model: LiveResultsTests.model)
        defer { try? replica.close() }
        _ = try await replica.run(.applyRecord(records.value[0], from: 1))
        let names = try await replica.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM tributary_paused_queues")
        }
        #expect(names == ["kept"])
        #expect(try await Self.tables(of: replica) == Self.tables(of: store))
    }

    /// Every table's rows, in primary-key order, as text; the inverse index as the set its two halves hold (where an
    /// entry sits depends on when each store folded), and the replication row without the epoch promised.
    static func tables(of store: RootStore) async throws -> [String: [String]] {
        try await store.pool.read { db in
            let names = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            var tables: [String: [String]] = [:]
            for name in names {
                let quoted = "\"\(name)\""
                let columns = name == "tributary_replication" ? "id, position, hash, epoch" : "*"
                let rows = try Row.fetchAll(db, sql: "SELECT \(columns) FROM \(quoted)").map { row in
                    row.databaseValues.map(\.description).joined(separator: "|")
                }
                let key = name.replacingOccurrences(of: "tributary_inverse_recent:", with: "tributary_inverse:")
                tables[key, default: []] += rows
            }
            return tables.mapValues { $0.sorted() }
        }
    }
}

extension RootStore {
    /// Runs `write` on the writer connection in a transaction of its own, as the writer's queue would.
    func run<Output: Sendable>(_ write: StoreWrite<Output>) async throws -> Output {
        try await pool.writeWithoutTransaction { db in
            try self.writer.statements.transaction(db, synced: write.synced) { try write.body(self, db) }
        }
    }
}
