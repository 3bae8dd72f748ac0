import Foundation
import GRDB
import MetricsTestKit
import Testing

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Live aggregates against a real root store in the process: the random commits of ``LiveResultsTests`` (inserts,
/// updates that move objects between groups and in and out of the predicate, deletes, reviewers changed, authors
/// renamed under a grouping key path), each merged into a view context as the feed would bring it; after each, every
/// live aggregate equals a fresh aggregate fetch of its request, and its reported difference turns the previous
/// rows into the new ones.
@Suite("Live aggregates follow commits")
struct LiveAggregateTests {
    static let model = ViewContextTests.model

    /// The requests followed: group keys through a to-one key path, an attribute, a to-one relationship and a
    /// to-many count; predicates on the object and through relationships; having, sorts, limits and offsets; one
    /// without group keys.
    static func requests() throws -> [AggregateRequest] {
        [
            AggregateRequest(
                entity: "PullRequest", groupBy: ["author.login"],
                aggregates: [.count(), .sum("additions"), .max("additions"), .min("createdAt")]),
            AggregateRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "additions > %d", 20),
                groupBy: ["merged"], aggregates: [.count(), .avg("score"), .min("score"), .max("title")]),
            AggregateRequest(
                entity: "PullRequest", groupBy: ["author"], aggregates: [.count(), .sum("reviewers.@count")],
                having: try FetchPredicate(format: "count >= 2"), sortedBy: [FetchSort("count", ascending: false)],
                limit: 3),
            AggregateRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "ANY reviewers.login == %@", "bo"),
                aggregates: [.count(), .sum("additions"), .max("score")]),
            AggregateRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "author.login BEGINSWITH %@", "a"),
                groupBy: ["reviewers.@count"], aggregates: [.count(), .avg("additions")], offset: 1),
            AggregateRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "score == nil"), groupBy: ["title"],
                aggregates: [.count(), .min("additions"), .max("author.login")],
                sortedBy: [FetchSort("min_additions"), FetchSort("title", ascending: false)], limit: 6),
        ]
    }

    /// Rows as comparable text (doubles to 9 significant digits: a live sum of doubles is added up in another order
    /// than the store's).
    static func text(_ rows: [AggregateRow]) -> [String] {
        AggregateFetchTests.text(rows.map(\.values))
    }

    /// `previous` with `snapshot`'s differences applied as a list view applies them: removals and moves out
    /// (highest offset first), then insertions and moves in (lowest first), then the updated rows' values.
    static func replay(_ snapshot: LiveAggregateSnapshot, on previous: [AggregateRow]) -> [AggregateRow] {
        var rows = previous
        let out = snapshot.removed.map(\.offset) + snapshot.moved.map(\.from)
        var movedRows: [Int: AggregateRow] = [:]
        for move in snapshot.moved { movedRows[move.to] = previous[move.from] }
        for offset in out.sorted(by: >) { rows.remove(at: offset) }
        let into = snapshot.inserted + movedRows.map { (offset: $0.key, row: $0.value) }
        for (offset, row) in into.sorted(by: { $0.offset < $1.offset }) { rows.insert(row, at: offset) }
        for offset in snapshot.updated { rows[offset] = snapshot.rows[offset] }
        return rows
    }

    @Test(
        "after each random commit every live aggregate equals a fresh aggregate fetch, and its difference replays",
        arguments: [1, 2, 3])
    func randomCommits(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        var random = SeededGenerator(seed: seed)
        let (store, writer, view) = try await LiveResultsTests.storeForRandomCommits(in: directory)
        defer { try? store.close() }
        let logins = LiveResultsTests.logins
        let requests = try Self.requests()
        let engines = try await view.perform { view in
            try requests.map { try LiveAggregateEngine(request: $0, context: view) }
        }
        var shown = try await view.perform { _ in engines.map(\.rows) }
        var number: Int64 = 0
        var commits = 0
        var changedRows = 0
        for _ in 0..<300 {
            let seq = try await LiveResultsTests.randomCommit(writer, logins: logins, number: &number, random: &random)
            guard seq != 0 else { continue }
            commits += 1
            let history = try await store.feed.history(FeedStore.HistoryQuery(after: seq - 1))
            let save = DidSave(parts: history.parts)
            try await view.perform { view in try view.mergeChanges(from: save, registeringNew: false) }
            for (index, engine) in engines.enumerated() {
                let rows = try await view.perform { view in
                    _ = try engine.apply(save, in: view)
                    return engine.rows
                }
                let fresh = try store.aggregate(requests[index])
                #expect(Self.text(rows) == Self.text(fresh.rows), "request \(index) after commit \(seq)")
                let snapshot = LiveAggregateSnapshot(
                    names: requests[index].columnNames, rows: rows, previous: shown[index], seq: seq, refetched: false)
                #expect(
                    Self.text(Self.replay(snapshot, on: shown[index])) == Self.text(rows),
                    "request \(index): the difference replays after commit \(seq)")
                if Self.text(rows) != Self.text(shown[index]) { changedRows += 1 }
                shown[index] = rows
            }
        }
        let refetches = try await view.perform { _ in engines.map(\.refetches) }
        // Most commits are judged from the feed alone: the requests whose predicates read no related object ask the
        // store only for objects a commit changed that the view did not hold.
        #expect(refetches[0] < commits / 4 && refetches[1] < commits / 4, "\(refetches) refetches of \(commits)")
        #expect(refetches[3] > 0, "a reviewer renamed under the predicate's key path is fetched again")
        #expect(changedRows > commits, "the commits changed the rows \(changedRows) times")
    }
}

extension LiveAggregateTests {
    /// Replays one `tributary watch --group-by … --json` line on the rows before it (each a JSON object).
    static func replay(_ line: String, on rows: [[String: Any]]) throws -> (rows: [[String: Any]], seq: UInt64) {
        let state = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        func offsets(_ key: String, _ field: String) throws -> [[String: Any]] {
            try #require(state[key] as? [[String: Any]]).sorted { ($0[field] as? Int ?? 0) < ($1[field] as? Int ?? 0) }
        }
        var replayed = rows
        let moved = try offsets("moved", "to")
        let out =
            try offsets("removed", "offset").compactMap { $0["offset"] as? Int }
            + moved.compactMap { $0["from"] as? Int }
        for offset in out.sorted(by: >) { replayed.remove(at: offset) }
        var into = try offsets("inserted", "offset").map {
            (try #require($0["offset"] as? Int), try #require($0["row"] as? [String: Any]))
        }
        into += try moved.map { (try #require($0["to"] as? Int), rows[try #require($0["from"] as? Int)]) }
        for (offset, row) in into.sorted(by: { $0.0 < $1.0 }) { replayed.insert(row, at: offset) }
        for update in try offsets("updated", "offset") {
            replayed[try #require(update["offset"] as? Int)] = try #require(update["row"] as? [String: Any])
        }
        #expect(replayed.count == state["count"] as? Int)
        return (replayed, UInt64(try #require(state["seq"] as? Int)))
    }

    @Test("tributary watch --group-by --json follows an import from a worker process; its rows replay to SQL's")
    func watchCommand() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let (feed, listen) = (coordinator.process.feedEndpoint, coordinator.process.listenEndpoint)
        let watch = try StartedProcess.start(
            "tributary",
            [
                "watch", "--entity", "PullRequest", "--where", "merged == NO", "--group-by", "author.login", "--sum",
                "additions", "--max", "score", "--having", "sum_additions > 1000", "--sort", "-sum_additions",
                "--json", "--feed", feed, "--listen", listen,
            ])
        defer { watch.kill() }
        var (rows, _) = try Self.replay(try await watch.waitForOutput { _ in true }, on: [])
        #expect(rows.isEmpty, "an empty store has no groups")
        let file = try directory.write("rows.ndjson", DemoData.pullRequests(count: 3_000, users: 40))
        let pushed = try await Binaries.run(
            "tributary",
            [
                "push", "import", "--entity", "PullRequest", "--file", file, "--chunk", "250", "--wait", "--listen",
                listen,
            ]
                + ["--feed", feed])
        #expect(pushed.status == 0, "\(pushed.error)")
        let client = try JobClient(endpoint: listen)
        let last = try await client.status().lastSeq
        await client.close()
        var seq: UInt64 = 0
        var states = 1
        while seq < last {
            (rows, seq) = try Self.replay(try await watch.waitForOutput { _ in true }, on: rows)
            states += 1
        }
        let expected = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT (SELECT u.login FROM User u WHERE u._rowid = p.author) AS k, COALESCE(SUM(additions), 0) AS s,
                      MAX(score) AS m FROM PullRequest p WHERE merged = 0 GROUP BY k HAVING s > 1000
                    ORDER BY s DESC, k
                    """
            ).map { "\($0["k"] as String) \($0["s"] as Int) \(String(format: "%g", $0["m"] as Double))" }
        }
        #expect(
            rows.map {
                "\($0["author.login"] ?? "?") \($0["sum_additions"] ?? "?") "
                    + String(format: "%g", ($0["max_score"] as? Double) ?? -1)
            }
                == expected)
        #expect(expected.count > 10 && states > 2, "\(expected.count) groups, \(states) states")
    }
}

extension LiveAggregateTests {
    @Test("a view context's live aggregate follows saves from the feed; a refetch is counted in the metric")
    func throughViewContext() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let writer = try BatchChangeTests.context(coordinator)
        @Sendable func insertPull(_ number: Int, author: ManagedObject, in context: ObjectContext) throws {
            let pull = try context.insert("PullRequest")
            pull["number"] = .int(Int64(number))
            pull["title"] = .string("PR \(number)")
            pull["merged"] = .bool(false)
            pull["additions"] = .int(Int64(number * 10))
            pull["createdAt"] = .date(Date(timeIntervalSince1970: 1_700_000_000))
            try pull.setDestination(author, for: "author")
        }
        try await writer.perform { context in
            let users = try ["ann", "bo"].map { login in
                let user = try context.insert("User")
                user["login"] = .string(login)
                return user
            }
            for number in 0..<6 { try insertPull(number, author: users[number % 2], in: context) }
        }
        try await writer.save()
        let view = try await ViewContext.start(
            feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, model: Self.model,
            contents: .fetched)
        let metrics = TestMetrics()
        let results = try await view.results(
            for: AggregateRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "author.login != %@", "zed"),
                groupBy: ["author.login"], aggregates: [.count(), .sum("additions")]),
            metrics: metrics)
        var snapshots = results.makeAsyncIterator()
        func rows(_ snapshot: LiveAggregateSnapshot) -> [String] {
            snapshot.rows.map { row in row.values.map { $0.map { "\($0)" } ?? "nil" }.joined(separator: " ") }
        }
        /// Takes snapshots until one reflects `seq`.
        func follow(to seq: UInt64) async throws -> LiveAggregateSnapshot {
            while true {
                let snapshot = try #require(try await snapshots.next())
                if snapshot.seq >= seq { return snapshot }
            }
        }
        let first = try #require(try await snapshots.next())
        #expect(rows(first) == ["ann 3 60", "bo 3 90"])
        #expect(
            first.inserted.map(\.offset) == [0, 1] && first.result.names == ["author.login", "count", "sum_additions"])

        // A pull request by ann: her group moves by it, judged from the commit's values.
        try await writer.perform { context in
            let ann = try #require(
                try context.fetch(FetchRequest(entity: "User", predicate: try FetchPredicate(format: "login == 'ann'")))
                    .first)
            try insertPull(6, author: ann, in: context)
        }
        let added = try await follow(to: try await writer.save().seq)
        #expect(rows(added) == ["ann 4 120", "bo 3 90"])
        #expect(added.updated == [0] && added.difference.isEmpty && !added.refetched)
        #expect(
            try metrics.expectCounter(LiveAggregateResults.refetchesMetric, [("entity", "PullRequest")]).totalValue == 0
        )

        // Renaming bo changes an object the predicate's key path reaches: the groups are fetched again, counted.
        try await writer.perform { context in
            let bo = try #require(
                try context.fetch(FetchRequest(entity: "User", predicate: try FetchPredicate(format: "login == 'bo'")))
                    .first)
            bo["login"] = .string("zed")
        }
        let renamed = try await follow(to: try await writer.save().seq)
        #expect(rows(renamed) == ["ann 4 120"] && renamed.refetched)
        #expect(renamed.removed.map(\.offset) == [1] && renamed.updated.isEmpty)
        #expect(results.refetches == 1)
        #expect(
            try metrics.expectCounter(LiveAggregateResults.refetchesMetric, [("entity", "PullRequest")]).totalValue == 1
        )
        results.cancel()
        await view.close()

        // A view that follows only PullRequest would never hear of a user's rename: such a live aggregate is refused.
        let partial = try await ViewContext.start(
            feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, model: Self.model,
            contents: .entities(["PullRequest"]))
        await #expect(throws: ContextError.self) {
            try await partial.results(
                for: AggregateRequest(entity: "PullRequest", groupBy: ["author.login"], aggregates: [.count()]))
        }
        await partial.close()
    }
}

extension LiveAggregateTests {
    @Test(
        "a renamed author not held moves its pull requests into a predicate through the key path; a deleted author's pull requests move to the nil group; a double that leaves its sum takes nothing else with it"
    )
    func commitsTheRandomOnesMiss() async throws {
        let directory = try TemporaryDirectory()
        let (store, writer, view) = try await LiveResultsTests.storeForRandomCommits(in: directory)
        defer { try? store.close() }
        let requests = [
            AggregateRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "author.login BEGINSWITH %@", "a"),
                aggregates: [.count()]),
            AggregateRequest(entity: "PullRequest", groupBy: ["author"], aggregates: [.count(), .count("author")]),
            AggregateRequest(
                entity: "PullRequest", groupBy: ["merged"], aggregates: [.sum("score"), .avg("score"), .count()]),
        ]
        // Pull requests by bo and by cy; one with a score of 1e16, which absorbs the 1.0 of the other in a sum.
        try await writer.perform { context in
            let users = try context.fetch(FetchRequest(entity: "User"))
            let bo = users.first { $0["login"] == .string("bo") }!
            let cy = users.first { $0["login"] == .string("cy") }!
            for (number, author, score) in [(1, bo, 1e16), (2, bo, 1.0), (3, cy, 2.0)] {
                let pull = try context.insert("PullRequest")
                pull["number"] = .int(Int64(number))
                pull["title"] = .string("PR \(number)")
                pull["merged"] = .bool(false)
                pull["additions"] = .int(1)
                pull["score"] = .double(score)
                pull["createdAt"] = .date(Date(timeIntervalSince1970: 0))
                try pull.setDestination(author, for: "author")
            }
        }
        try await writer.save()
        // Each live aggregate in a view of its own that holds only what it fetched: nothing else brings bo in.
        let views = (0..<requests.count).map {
            ObjectContext(model: Self.model, parent: LocalRootParent(store: store), name: "view \($0)")
        }
        _ = view
        var engines: [LiveAggregateEngine] = []
        for (index, request) in requests.enumerated() {
            engines.append(try await views[index].perform { try LiveAggregateEngine(request: request, context: $0) })
        }
        /// Commits what `body` does and checks every live aggregate against a fresh fetch.
        func commit(_ what: String, _ body: @escaping @Sendable (ObjectContext) throws -> Void) async throws {
            try await writer.perform { try body($0) }
            let seq = try await writer.save().seq
            let save = DidSave(parts: try await store.feed.history(FeedStore.HistoryQuery(after: seq - 1)).parts)
            for (index, engine) in engines.enumerated() {
                let rows = try await views[index].perform { view in
                    try view.mergeChanges(from: save, registeringNew: false)
                    _ = try engine.apply(save, in: view)
                    return engine.rows
                }
                #expect(
                    Self.text(rows) == Self.text(try store.aggregate(requests[index]).rows),
                    "request \(index) after \(what)")
            }
        }
        @Sendable func user(_ login: String, in context: ObjectContext) throws -> ManagedObject {
            try context.fetch(
                FetchRequest(entity: "User", predicate: try FetchPredicate(format: "login == %@", login)))[0]
        }
        try await commit("renaming bo to abe2") { try user("bo", in: $0)["login"] = .string("abe2") }
        try await commit("deleting cy") { $0.delete(try user("cy", in: $0)) }
        try await commit("deleting the pull request scored 1e16") { context in
            context.delete(
                try context.fetch(
                    FetchRequest(entity: "PullRequest", predicate: try FetchPredicate(format: "number == 1")))[0])
        }
    }
}
