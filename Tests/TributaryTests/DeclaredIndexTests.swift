import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

/// The secondary indexes a model declares (`"indexes"`, docs/model.md): created and dropped as declared each time the
/// store opens, filled from what the tables hold, and used by SQLite's planner.
@Suite("Declared indexes: created and dropped on open")
struct DeclaredIndexTests {
    static func model(indexes: String) throws -> Model {
        try Model.decode(
            Data(
                #"""
                {"entities": [
                  {"name": "User", "attributes": [{"name": "login", "type": "string"}], "uniqueness": [["login"]]},
                  {"name": "Ticket", "attributes": [{"name": "state", "type": "string"}, {"name": "points", "type": "int"}],
                   "relationships": [{"name": "owner", "destination": "User"}], "uniqueness": [["points"]],
                   "indexes": \#(indexes)}]}
                """#.utf8), source: "the test's model")
    }

    /// The indexes on `Ticket` as SQLite lists them, by name.
    static func ticketIndexes(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Ticket' ORDER BY name")
        }
    }

    @Test(
        "an index declared is created (filled from the rows there) and used by the planner; one no longer declared is dropped; uniqueness indexes stay"
    )
    func createdAndDropped() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let created = try RootStore.open(path: path, model: try Self.model(indexes: #"[["state", "owner"]]"#))
        #expect(created.declaredIndexes.created == ["Ticket_index(state,owner)"])
        try created.close()
        let first = try Self.ticketIndexes(path)
        #expect(first.contains("Ticket_index(state,owner)"), "\(first)")
        #expect(first.contains("Ticket_unique_0"), "\(first)")

        // Rows written while the index is not declared yet are in it once it is.
        try DatabaseQueue(path: path).write { db in
            for number in 1...50 {
                try db.execute(
                    sql: "INSERT INTO Ticket (id, state, points) VALUES (?, ?, ?)",
                    arguments: [UUID().bytes, number % 5 == 0 ? "open" : "closed", number])
            }
        }
        let changed = try RootStore.open(
            path: path, model: try Self.model(indexes: #"[["points", "state"], ["state"]]"#))
        #expect(changed.declaredIndexes.created == ["Ticket_index(points,state)", "Ticket_index(state)"])
        #expect(changed.declaredIndexes.dropped == ["Ticket_index(state,owner)"])
        try changed.close()
        let same = try RootStore.open(path: path, model: try Self.model(indexes: #"[["state"], ["points", "state"]]"#))
        #expect(
            same.declaredIndexes.created.isEmpty && same.declaredIndexes.dropped.isEmpty, "declared in another order")
        try same.close()
        let second = try Self.ticketIndexes(path)
        #expect(!second.contains("Ticket_index(state,owner)"), "no longer declared: \(second)")
        #expect(second.contains("Ticket_index(points,state)") && second.contains("Ticket_index(state)"), "\(second)")
        #expect(second.contains("Ticket_unique_0"), "\(second)")
        try DatabaseQueue(path: path).read { db in
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT count(*) FROM Ticket WHERE state = 'open'")
                .map { $0["detail"] as String? ?? "" }
            #expect(plan.contains { $0.contains("Ticket_index(state)") }, "\(plan)")
            #expect(
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM Ticket INDEXED BY \"Ticket_index(state)\" WHERE state = 'open'")
                    == 10)
        }

        try RootStore.open(path: path, model: try Self.model(indexes: "[]")).close()
        #expect(try Self.ticketIndexes(path).filter { $0.contains("_index(") }.isEmpty)
    }

    @Test("a model whose index names no attribute or to-one relationship is refused, naming it")
    func badIndexRefused() throws {
        for (indexes, named) in [
            (#"[["nope"]]"#, "'nope'"), (#"[[]]"#, "1 to 8"), (#"[["state", "state"]]"#, "twice"),
            (#"[["state"], ["state"]]"#, "declared twice"),
        ] {
            #expect {
                _ = try Self.model(indexes: indexes)
            } throws: { error in
                guard let error = error as? ModelError else { return false }
                return error.code == .invalidIndex && error.message.contains(named) && error.message.contains("Ticket")
            }
        }
    }
}
