import Foundation
import GRDB
import Testing
import TributaryDemo
import TributaryProtocol

@testable import TributaryCoordinator
@testable import TributaryCore

/// The merger's prepared statements and how an upsert finds the row it wrote, straight on a store's tables.
@Suite("Change set merger: upserts and its statement cache")
struct MergerStatementTests {
    let model = DemoData.model

    /// Pull request rows with `title`, numbers `numbers`, each by `u<number>` and reviewed by the two users after.
    func changeSet(numbers: ClosedRange<Int>, title: String) throws -> Tributary_V1_ChangeSet {
        let entity = try #require(model.entity(named: "PullRequest"))
        let decoder = ImportRowDecoder(entity: entity, model: model)
        var batch = ImportChunk(model: model)
        for number in numbers {
            let row =
                #"{"number": \#(number), "title": "\#(title) \#(number)", "merged": false, "additions": \#(number), "#
                + #""createdAt": "2024-05-01T12:00:00Z", "author": {"login": "u\#(number)"}, "#
                + #""reviewers": [{"login": "u\#(number + 1)"}, {"login": "u\#(number + 2)"}]}"#
            try Array(row.utf8).withUnsafeBufferPointer { line in
                try decoder.apply(line, number: number, to: &batch)
            }
        }
        return batch.changeSet()
    }

    /// A database with the model's tables, and a merger on it keeping at most `cacheLimit` statements.
    func open(_ directory: TemporaryDirectory, cacheLimit: Int) throws -> (DatabaseQueue, ChangeSetMerger) {
        let queue = try DatabaseQueue(path: directory.path("store.sqlite"))
        try queue.write { db in
            for entity in model.entities { try Schema.create(entity, in: db) }
        }
        return (queue, ChangeSetMerger(model: model, statementCacheLimit: cacheLimit))
    }

    /// Each pull request's title, author and reviewers as the tables hold them, by number.
    func stored(_ queue: DatabaseQueue) throws -> [Int: String] {
        try queue.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT p.number, p.title, a.login AS author,
                        (SELECT group_concat(login, ',') FROM (SELECT u.login FROM "PullRequest_reviewers" r
                            JOIN "User" u ON u._rowid = r.destination WHERE r.source = p._rowid ORDER BY u.login))
                            AS reviewers
                    FROM "PullRequest" p LEFT JOIN "User" a ON a._rowid = p.author
                    """)
            return Dictionary(
                uniqueKeysWithValues: rows.map { row -> (Int, String) in
                    (
                        row["number"],
                        "\(row["title"] as String) by \(row["author"] as String) [\(row["reviewers"] as String)]"
                    )
                })
        }
    }

    @Test("rows merged into stored objects by a uniqueness key keep their relationships, even with a cache of one")
    func upsertsMergedByKey() throws {
        for cacheLimit in [1, 256] {
            let directory = try TemporaryDirectory()
            let (queue, merger) = try open(directory, cacheLimit: cacheLimit)
            defer { merger.finalizeStatements() }
            try queue.write { db in _ = try merger.apply(changeSet(numbers: 1...40, title: "first"), version: 1, in: db)
            }
            // The same numbers again under new ids: each row is merged into the stored pull request by `number`,
            // and the merger finds the row it wrote by that key (preparing its query in the middle of the batch).
            let result = try queue.write { db in
                try merger.apply(changeSet(numbers: 21...60, title: "second"), version: 2, in: db)
            }
            let stored = try stored(queue)
            #expect(stored.count == 60, "cache limit \(cacheLimit)")
            for number in 1...60 {
                let title = number <= 20 ? "first" : "second"
                let reviewers = ["u\(number + 1)", "u\(number + 2)"].sorted().joined(separator: ",")
                #expect(
                    stored[number] == "\(title) \(number) by u\(number) [\(reviewers)]",
                    "cache limit \(cacheLimit), number \(number)")
            }
            let changes = result.entities.first { $0.name == "PullRequest" }?.changes
            let updated = changes.map { $0.updated.count / 16 } ?? -1
            let inserted = changes.map { $0.inserted.count / 16 } ?? -1
            #expect(
                updated == 20 && inserted == 20, "cache limit \(cacheLimit): \(updated) updated, \(inserted) inserted")
        }
    }
}
