import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// The log of contexts' save ids (`ContextSaveLog`), in generations: a save sent again within the retention gets its
/// first answer whichever generation holds it, pruning drops whole generations that ended before the cutoff, and a
/// store of format 9 keeps the ids it had.
@Suite("Save-id log: generations, retention, pruning, upgrade")
struct SaveLogTests {
    let directory: TemporaryDirectory
    let model: Model

    init() throws {
        directory = try TemporaryDirectory()
        model = try Model.decode(Data(everyTypeModelJSON.utf8))
    }

    static func save(_ id: Data, label: String) -> Tributary_V1_SaveChanges {
        .with {
            $0.saveID = id
            $0.changes.batches = [.inserting("Tag", "label", label)]
        }
    }

    /// Moves every logged id back by `generations`, as if they were saved that much earlier.
    static func age(_ store: RootStore, by generations: Int64) async throws {
        try await store.pool.write { db in
            try db.execute(sql: "UPDATE tributary_save_log SET generation = generation - ?", arguments: [generations])
        }
    }

    @Test(
        "a save sent again is answered from the log while its generation is within the retention (or the clock stepped back), then is new"
    )
    func generationsWithinRetention() async throws {
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: model)
        defer { try? store.close() }
        let id = UUID().bytes
        guard case .committed(let seq, _, _, _) = try await store.saves.applySave(Self.save(id, label: "a"), from: "v")
        else { throw TimedOut(what: "a commit") }
        // -1: recorded in the generation after the clock's (the clock was stepped back across a generation's start).
        for generations: Int64 in [-1, 1, 1, 1] {
            try await Self.age(store, by: generations)
            let again = try await store.saves.applySave(Self.save(id, label: "a"), from: "v")
            guard case .answeredBefore(let earlier, _, _) = again else {
                Issue.record("aged \(generations): \(again)")
                return
            }
            #expect(earlier == seq)
        }
        // Three generations back it can be older than the retention: pruned, and no longer looked up.
        try await Self.age(store, by: 1)
        let cutoff = Date() - ContextSaveLog.retention.seconds
        #expect(try await store.pool.write { db in try ContextSaveLog.prune(before: cutoff, limit: 10, in: db) } == 1)
        #expect(
            try await store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM tributary_save_log") }
                == 0)
        guard case .committed = try await store.saves.applySave(Self.save(id, label: "b"), from: "v") else {
            Issue.record("a save beyond the retention was answered from the log")
            return
        }
    }

    @Test("a store whose save ids were kept by id alone (format 10 and before) keeps them, in their generations")
    func upgradeKeepsIDs() async throws {
        let path = directory.path("store.sqlite")
        var store = try RootStore.open(path: path, model: model)
        let id = UUID().bytes
        guard case .committed(let seq, _, _, _) = try await store.saves.applySave(Self.save(id, label: "a"), from: "v")
        else { throw TimedOut(what: "a commit") }
        try store.close()
        // Format 10's table, holding the id as that format kept it.
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE tributary_context_saves (
                        save_id BLOB PRIMARY KEY NOT NULL, answer BLOB NOT NULL, saved_at REAL NOT NULL) WITHOUT ROWID;
                    CREATE INDEX tributary_context_saves_by_age ON tributary_context_saves(saved_at);
                    INSERT INTO tributary_context_saves (save_id, answer, saved_at)
                        SELECT save_id, answer, ? FROM tributary_save_log;
                    DROP TABLE tributary_save_log;
                    """, arguments: [Date().timeIntervalSince1970 - 3600])
        }
        try queue.close()
        try await EarlierFormat.rewind(path, to: 10)

        store = try RootStore.open(path: path, model: model)
        defer { try? store.close() }
        try await store.pool.read { db in
            let oldTable = try db.tableExists("tributary_context_saves")
            #expect(!oldTable)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM tributary_save_log") == 1)
        }
        guard
            case .answeredBefore(let earlier, _, _) = try await store.saves.applySave(
                Self.save(id, label: "a"), from: "v")
        else {
            Issue.record("the upgraded log did not answer the save sent again")
            return
        }
        #expect(earlier == seq)
    }
}
