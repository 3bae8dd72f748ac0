import Foundation
import MetricsTestKit
import Testing

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// Live results against a real root store in the process: random commits (inserts, updates that move rows in and
/// out of the predicate and across the sort, deletes, relationship changes under key-path predicates), each merged
/// into a view context as the feed would bring it; after each, the live result equals a fresh fetch of its request,
/// and its reported difference turns the previous snapshot into the new one.
@Suite("Live results follow commits")
struct LiveResultsTests {
    static let model = ViewContextTests.model

    /// The requests followed: a window with an offset, key paths through a to-one and a to-many relationship, a
    /// sort through a relationship, no limit.
    static func requests() throws -> [FetchRequest] {
        [
            FetchRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "merged == NO AND additions > %d", 30),
                sortedBy: [FetchSort("additions", ascending: false)], limit: 10, offset: 2),
            FetchRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "author.login BEGINSWITH %@", "a"),
                sortedBy: [FetchSort("author.login"), FetchSort("number")], limit: 7),
            FetchRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "ANY reviewers.login == %@", "bo"),
                sortedBy: [FetchSort("title")], limit: 5),
            FetchRequest(
                entity: "PullRequest", sortedBy: [FetchSort("score"), FetchSort("createdAt", ascending: false)]),
            FetchRequest(
                entity: "User", predicate: try FetchPredicate(format: "name != nil"), sortedBy: [FetchSort("name")],
                limit: 4),
            // Most rows match and few show: the window is rarely complete, so rows leaving it run it short.
            FetchRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "additions > %d", 5),
                sortedBy: [FetchSort("additions"), FetchSort("number", ascending: false)], limit: 3),
        ]
    }

    @Test(
        "after each random commit every live result equals a fresh fetch, and its difference replays",
        arguments: [1, 2, 3])
    func randomCommits(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        var random = SeededGenerator(seed: seed)
        let (store, writer, view) = try await Self.storeForRandomCommits(in: directory)
        let logins = Self.logins
        let requests = try Self.requests()
        let engines = try await view.perform { view in
            try requests.map { try LiveResultsEngine(request: $0, context: view) }
        }
        // Sectioned results: by a key path the sort does not start with, and by the first sort key.
        let sectioned = try await view.perform { view in
            [
                try LiveResultsEngine(
                    request: FetchRequest(
                        entity: "PullRequest", predicate: try FetchPredicate(format: "additions > %d", 20),
                        sortedBy: [FetchSort("number", ascending: false)], limit: 12),
                    sectionKey: "author.login", context: view),
                try LiveResultsEngine(
                    request: FetchRequest(
                        entity: "PullRequest", sortedBy: [FetchSort("merged", ascending: false), FetchSort("title")]),
                    sectionKey: "merged", context: view),
                // The section key later in the sort: moved first, keeping its direction.
                try LiveResultsEngine(
                    request: FetchRequest(
                        entity: "PullRequest", sortedBy: [FetchSort("title"), FetchSort("merged", ascending: false)],
                        limit: 9),
                    sectionKey: "merged", context: view),
            ]
        }
        #expect(sectioned[2].request.sortDescriptors == [FetchSort("merged", ascending: false), FetchSort("title")])
        var shown = try await view.perform { _ in engines.map { $0.visible.map { ObjectID(entity: "", uuid: $0) } } }
        var number: Int64 = 0
        var refetches = 0
        for _ in 0..<300 {
            let seq = try await Self.randomCommit(writer, logins: logins, number: &number, random: &random)
            guard seq != 0 else { continue }
            let history = try await store.feed.history(FeedStore.HistoryQuery(after: seq - 1))
            let save = DidSave(parts: history.parts)
            let fresh = try await view.perform { view -> [[UUID]] in
                try view.mergeChanges(from: save, registeringNew: false)
                return try requests.map { try view.fetchObjectIDs($0).map(\.uuid) }
            }
            for (index, engine) in engines.enumerated() {
                let (ids, updated) = try await view.perform { view in
                    let updated = try engine.apply(save, in: view) ?? []
                    return (engine.visible, updated)
                }
                #expect(ids == fresh[index], "request \(index) after commit \(seq)")
                let objects = ids.map { ObjectID(entity: "", uuid: $0) }
                let snapshot = LiveResultsSnapshot(
                    ids: objects, previous: shown[index],
                    updated: Set(updated.map { ObjectID(entity: "", uuid: $0) }), seq: seq, refetched: false)
                #expect(shown[index].applying(snapshot.difference) == objects, "the difference replays")
                // As a list view would: removals and moves out (highest offset first), then insertions and moves in.
                var replayed = shown[index]
                let out = snapshot.removed.map(\.offset) + snapshot.moved.map(\.from)
                for offset in out.sorted(by: >) { replayed.remove(at: offset) }
                let into = snapshot.inserted + snapshot.moved.map { (offset: $0.to, id: $0.id) }
                for (offset, id) in into.sorted(by: { $0.offset < $1.offset }) { replayed.insert(id, at: offset) }
                #expect(replayed == objects, "inserted, removed and moved replay")
                shown[index] = objects
            }
            for engine in sectioned {
                let (sections, expected) = try await view.perform { view in
                    _ = try engine.apply(save, in: view)
                    return (engine.sections, try Self.sections(of: engine.request, in: view))
                }
                #expect(sections == expected, "sections of \(engine.request.sortDescriptors[0].key) after \(seq)")
            }
        }
        refetches = try await view.perform { _ in engines.reduce(0) { $0 + $1.refetches } }
        // Most commits are judged from the feed alone; some needed the store.
        #expect(refetches > 0 && refetches < 300 * requests.count / 2, "\(refetches) refetches")
    }

    /// The sections of a fresh fetch of `request`, grouped by its first sort key (an attribute, or a to-one
    /// relationship's attribute) read from the objects themselves.
    static func sections(of request: FetchRequest, in context: ObjectContext) throws -> [LiveResultsSection] {
        let steps = request.sortDescriptors[0].key.split(separator: ".").map(String.init)
        var sections: [LiveResultsSection] = []
        for (offset, object) in try context.fetch(request).enumerated() {
            var reached: ManagedObject? = object
            for step in steps.dropLast() {
                reached = try reached?.destination(step).map { try context.object(with: $0) }
            }
            let value = try reached?.value(steps.last!)
            if let last = sections.last, last.value == value {
                sections[sections.count - 1] = LiveResultsSection(
                    value: value, range: last.range.lowerBound..<offset + 1)
            } else {
                sections.append(LiveResultsSection(value: value, range: offset..<offset + 1))
            }
        }
        return sections
    }

    /// The users' logins of ``storeForRandomCommits(in:)``; some begin with "a", for the key-path predicates.
    static let logins = ["al", "ann", "bo", "bob", "cy", "amy", "dee", "abe"]

    /// A root store in `directory` holding a user of each of ``logins``; a writer context over it (merge policy
    /// overwrite) for ``randomCommit(_:logins:number:random:)``, and a view context over it.
    static func storeForRandomCommits(in directory: TemporaryDirectory) async throws -> (
        store: RootStore, writer: ObjectContext, view: ObjectContext
    ) {
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: model)
        let writer = ObjectContext(model: model, parent: LocalRootParent(store: store), name: "writer")
        writer.mergePolicy = .overwrite
        let view = ObjectContext(model: model, parent: LocalRootParent(store: store), name: "view")
        try await writer.perform { context in
            for login in logins {
                let user = try context.insert("User")
                user["login"] = .string(login)
            }
        }
        try await writer.save()
        return (store, writer, view)
    }

    /// One random commit of the writer: returns its seq (0 when it changed nothing).
    static func randomCommit(
        _ writer: ObjectContext, logins: [String], number: inout Int64, random: inout SeededGenerator
    ) async throws -> UInt64 {
        let choice = Int.random(in: 0..<10, using: &random)
        let next = number
        let values = (
            additions: Int64.random(in: 0...60, using: &random), merged: Bool.random(using: &random),
            title: "T\(Int.random(in: 0...20, using: &random))",
            score: Bool.random(using: &random) ? nil : Double.random(in: 0...1, using: &random),
            author: logins.randomElement(using: &random)!, reviewer: logins.randomElement(using: &random)!,
            pick: Int.random(in: 0..<1_000, using: &random),
            name: Bool.random(using: &random) ? "N\(Int.random(in: 0...9, using: &random))" : nil
        )
        if choice < 4 { number += 1 }
        try await writer.perform { context in
            let pulls = context.registeredObjects.filter { $0.entity.name == "PullRequest" }
                .sorted { $0.objectID.uuid.uuidString < $1.objectID.uuid.uuidString }
            let users = context.registeredObjects.filter { $0.entity.name == "User" }
                .sorted { $0.objectID.uuid.uuidString < $1.objectID.uuid.uuidString }
            func user(_ login: String) -> ManagedObject? { users.first { $0["login"] == .string(login) } }
            func anyUser(_ pick: Int) -> ManagedObject { users[pick % users.count] }
            switch choice {
            case 0..<4:
                let pull = try context.insert("PullRequest")
                pull["number"] = .int(next)
                pull["title"] = .string(values.title)
                pull["merged"] = .bool(values.merged)
                pull["additions"] = .int(values.additions)
                pull["score"] = values.score.map(AttributeValue.double)
                pull["createdAt"] = .date(Date(timeIntervalSince1970: Double(values.pick)))
                try pull.setDestination(anyUser(values.pick), for: "author")
                try pull.setDestinations([anyUser(values.pick / 3)], for: "reviewers")
            case 4..<7 where !pulls.isEmpty:
                let pull = pulls[values.pick % pulls.count]
                switch values.pick % 4 {
                case 0: pull["additions"] = .int(values.additions)
                case 1: pull["merged"] = .bool(values.merged)
                case 2: try pull.setDestination(anyUser(values.pick / 5), for: "author")
                default:
                    pull["title"] = .string(values.title)
                    pull["score"] = values.score.map(AttributeValue.double)
                }
            case 7 where !pulls.isEmpty:
                context.delete(pulls[values.pick % pulls.count])
            case 8 where !pulls.isEmpty:
                let pull = pulls[values.pick % pulls.count]
                do {
                    let reviewer = anyUser(values.pick / 3)
                    let current = try pull.destinations("reviewers")
                    let others = current.filter { $0.uuid != reviewer.objectID.uuid }.map {
                        try! context.object(with: $0)
                    }
                    try pull.setDestinations(
                        current.count == others.count ? others + [reviewer] : others, for: "reviewers")
                }
            default:
                // A user's name (the User request), or a new login that moves pull requests in and out of the key
                // path predicates.
                let first = users[values.pick % users.count]
                if values.pick % 2 == 0 {
                    first["name"] = values.name.map(AttributeValue.string)
                } else {
                    let login = ["a", "b", "c"][values.pick % 3] + String(values.pick)
                    guard user(login) == nil else { return }
                    first["login"] = .string(login)
                }
            }
        }
        return try await writer.save().seq
    }
}

extension LiveResultsTests {
    /// A pull request as a window reads it: `additions` set, every other attribute nil.
    static func row(_ additions: Int64) -> PredicateSubject {
        let entity = model.entity(named: "PullRequest")!
        var values = [AttributeValue?](repeating: nil, count: entity.attributes.count)
        values[entity.attributes.firstIndex { $0.name == "additions" }!] = .int(additions)
        return PredicateSubject(id: UUID(), values: values, toOne: [], toMany: [])
    }

    @Test("a window that rows leave asks for a fetch once it holds fewer than it shows; a row beyond it stays out")
    func windowRunsShort() throws {
        let entity = try #require(Self.model.entity(named: "PullRequest"))
        let sort = try [FetchSort("additions")].compile(for: entity, in: Self.model)
        let rows = (1...6).map { Self.row(Int64($0) * 10) }
        // Shows 2, keeps 4 of a result of 6.
        var window = LiveResultsWindow(
            fetched: Array(rows.prefix(5)), needed: 2, capacity: 4, predicate: nil, sort: sort)
        #expect(window.ids == rows.prefix(4).map(\.id) && !window.isComplete)
        // A new row after the last kept one is beyond the window: it stays out.
        #expect(
            window.apply(changed: [Self.row(45)], deleted: [], resolver: NoPredicateResolver()) == .applied(updated: [])
        )
        #expect(window.ids == rows.prefix(4).map(\.id))
        // One before it enters, and the last kept one leaves.
        let early = Self.row(5)
        #expect(window.apply(changed: [early], deleted: [], resolver: NoPredicateResolver()) == .applied(updated: []))
        #expect(window.ids == [early.id] + rows.prefix(3).map(\.id))
        // Two rows leave: two are left, still what it shows.
        #expect(
            window.apply(changed: [], deleted: [early.id, rows[0].id], resolver: NoPredicateResolver())
                == .applied(updated: []))
        // A third leaves: the window cannot know which row comes next.
        #expect(window.apply(changed: [], deleted: [rows[1].id], resolver: NoPredicateResolver()) == .needsRefetch)
    }
}

extension LiveResultsTests {
    @Test("a sectioned live result reports its sections' changes, and each refetch is counted in the metric")
    func sectionsAndRefetchMetric() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let writer = try BatchChangeTests.context(coordinator)
        try await writer.perform { context in
            let users = try ["ann", "bo"].map { login in
                let user = try context.insert("User")
                user["login"] = .string(login)
                return user
            }
            for number in 0..<6 {
                let pull = try context.insert("PullRequest")
                pull["number"] = .int(Int64(number))
                pull["title"] = .string("PR \(number)")
                pull["merged"] = .bool(false)
                pull["additions"] = .int(1)
                pull["createdAt"] = .date(Date(timeIntervalSince1970: 1_700_000_000))
                try pull.setDestination(users[number % 2], for: "author")
            }
        }
        try await writer.save()
        let view = try await ViewContext.start(
            feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, model: Self.model,
            contents: .fetched)
        let metrics = TestMetrics()
        let results = try await view.results(
            for: FetchRequest(entity: "PullRequest", sortedBy: [FetchSort("number")]), sectionedBy: "author.login",
            metrics: metrics)
        var snapshots = results.makeAsyncIterator()
        let first = try #require(try await snapshots.next())
        #expect(first.sections.map(\.name) == ["ann", "bo"] && first.sections.map(\.count) == [3, 3])
        #expect(first.section(ofRowAt: 4)! == (1, 1) && first.sectionDifference.insertions.count == 2)

        /// Takes snapshots until one reflects `seq`.
        func follow(to seq: UInt64) async throws -> LiveResultsSnapshot {
            while true {
                let snapshot = try #require(try await snapshots.next())
                if snapshot.seq >= seq { return snapshot }
            }
        }
        // A pull request by a new author: a section is inserted before the two. The commit inserts a User, an entity
        // the key path reaches, so the result is fetched again: one refetch, counted.
        try await writer.perform { context in
            let user = try context.insert("User")
            user["login"] = .string("amy")
            let pull = try #require(
                try context.fetch(
                    FetchRequest(
                        entity: "PullRequest", predicate: try FetchPredicate(format: "number == 5"))
                ).first)
            try pull.setDestination(user, for: "author")
        }
        let added = try await follow(to: try await writer.save().seq)
        #expect(added.sections.map(\.name) == ["amy", "ann", "bo"] && added.sections.map(\.count) == [1, 3, 2])
        #expect(added.sectionDifference.insertions.count == 1 && added.sectionDifference.removals.isEmpty)
        #expect(added.moved.count == 1 && added.moved[0].to == 0 && added.refetched)
        // Refetched, yet only the row whose own values changed is reported updated.
        #expect(added.updated == [0])
        #expect(try metrics.expectCounter(LiveResults.refetchesMetric, [("entity", "PullRequest")]).totalValue == 1)

        // Renaming a user changes a related object under the key path: another refetch.
        try await writer.perform { context in
            let bo = try #require(
                try context.fetch(
                    FetchRequest(
                        entity: "User", predicate: try FetchPredicate(format: "login == 'bo'"))
                ).first)
            bo["login"] = .string("zed")
        }
        let renamed = try await follow(to: try await writer.save().seq)
        #expect(renamed.sections.map(\.name) == ["amy", "ann", "zed"] && renamed.refetched)
        #expect(renamed.sectionDifference.removals.count == 1 && renamed.sectionDifference.insertions.count == 1)
        #expect(renamed.updated.isEmpty && renamed.difference.isEmpty)
        #expect(results.refetches == 2)
        #expect(try metrics.expectCounter(LiveResults.refetchesMetric, [("entity", "PullRequest")]).totalValue == 2)
        results.cancel()
        await view.close()

        // A view that follows only PullRequest would never hear of a user's rename: such a live result is refused.
        let partial = try await ViewContext.start(
            feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, model: Self.model,
            contents: .entities(["PullRequest"]))
        await #expect(throws: ContextError.self) {
            try await partial.results(
                for: FetchRequest(entity: "PullRequest", sortedBy: [FetchSort("number")]), sectionedBy: "author.login")
        }
        _ = try await partial.results(for: FetchRequest(entity: "PullRequest", sortedBy: [FetchSort("number")]))
        await partial.close()
    }

    @Test("a live result in a view that holds only what it fetched follows an import and saves made in other processes")
    func acrossProcesses() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let (feed, listen) = (coordinator.process.feedEndpoint, coordinator.process.listenEndpoint)
        try await BatchChangeTests.insertPullRequests(200, into: try BatchChangeTests.context(coordinator))
        let view = try await ViewContext.start(feed: feed, jobs: listen, model: Self.model, contents: .fetched)
        let request = FetchRequest(
            entity: "PullRequest", predicate: try FetchPredicate(format: "merged == NO"),
            sortedBy: [FetchSort("additions", ascending: false), FetchSort("number")], limit: 5)
        let results = try await view.results(for: request)
        var snapshots = results.makeAsyncIterator()
        let first = try #require(try await snapshots.next())
        #expect(first.ids.count == 5 && first.inserted.count == 5)
        // The view holds the window and its spare rows, not the entity.
        #expect(try await view.context.perform { $0.registeredObjects.count } < 50)

        /// The result as the store holds it, read with the test's own connection.
        func stored() throws -> [UUID] {
            try BatchChangeTests.ids(
                coordinator.storePath,
                "SELECT id FROM PullRequest WHERE merged = 0 ORDER BY additions DESC, number LIMIT 5")
        }
        #expect(first.ids.map(\.uuid) == (try stored()))
        var shown = first.ids
        /// Takes snapshots until one reflects `seq`, checking that each difference replays.
        func follow(to seq: UInt64) async throws -> LiveResultsSnapshot {
            while true {
                let snapshot = try #require(try await snapshots.next())
                #expect(shown.applying(snapshot.difference) == snapshot.ids)
                shown = snapshot.ids
                if snapshot.seq >= seq { return snapshot }
            }
        }

        // An import job run by a worker process: 300 pull requests, some with more additions than any before.
        let rows = (1_000..<1_300).map { number in
            #"{"number": \#(number), "title": "imported \#(number)", "merged": \#(number % 3 == 0), "additions": \#(number % 7 * 40), "createdAt": "2024-05-01T12:00:00Z", "author": {"login": "u\#(number % 5)"}}"#
        }
        let file = try directory.write("import.ndjson", rows.joined(separator: "\n"))
        let pushed = try await Binaries.run(
            "tributary",
            ["push", "import", "--entity", "PullRequest", "--file", file, "--wait", "--listen", listen, "--feed", feed])
        #expect(pushed.status == 0, "\(pushed.error)")
        let imported = try BatchChangeTests.count(coordinator.storePath, "SELECT MAX(seq) FROM tributary_history")
        let afterImport = try await follow(to: UInt64(imported))
        #expect(afterImport.ids.map(\.uuid) == (try stored()))
        #expect(try BatchChangeTests.count(coordinator.storePath, "SELECT COUNT(*) FROM PullRequest") == 500)

        // Another process's view context saves: a pull request with few additions moves to the top.
        let editor = try await ViewEditorProcess.start(listen: listen, feed: feed, entities: ["PullRequest"])
        defer { editor.stop() }
        let saved = try await editor.send("edit PullRequest number=3 additions=500")
        let seq = try #require(saved.hasPrefix("saved ") ? UInt64(saved.dropFirst(6)) : nil, "\(saved)")
        let moved = try await follow(to: seq)
        #expect(moved.ids.first?.uuid == (try stored()).first && moved.inserted.count == 1 && moved.removed.count == 1)
        #expect(moved.ids.map(\.uuid) == (try stored()))

        // A batch update from the shell takes the top rows out; the ones after come in.
        let merged = try await Binaries.run(
            "tributary",
            ["update", "--entity", "PullRequest", "--where", "additions >= 200", "--set", "merged=true", "--json"]
                + ["--listen", listen])
        #expect(merged.status == 0, "\(merged.error)")
        let commits = try #require(
            (try JSONSerialization.jsonObject(with: Data(merged.output.utf8)) as? [String: Any])?["commits"] as? [Int])
        let after = try await follow(to: UInt64(try #require(commits.last)))
        #expect(after.ids.map(\.uuid) == (try stored()))
        #expect(results.refetches <= 3, "\(results.refetches) refetches")
        results.cancel()
        await view.close()
    }
}

extension LiveResultsTests {
    /// Replays one `tributary watch --json` line on the ids before it.
    static func replay(_ line: String, on ids: [String]) throws -> (ids: [String], seq: UInt64) {
        let state = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        var ids = ids
        let removed = try #require(state["removed"] as? [[String: Any]])
        for offset in removed.compactMap({ $0["offset"] as? Int }).sorted(by: >) { ids.remove(at: offset) }
        let inserted = try #require(state["inserted"] as? [[String: Any]])
        for change in inserted.sorted(by: { ($0["offset"] as? Int ?? 0) < ($1["offset"] as? Int ?? 0) }) {
            ids.insert(try #require(change["id"] as? String), at: try #require(change["offset"] as? Int))
        }
        #expect(ids.count == state["count"] as? Int)
        return (ids, UInt64(try #require(state["seq"] as? Int)))
    }

    @Test("tributary watch --json prints differences that replay to the store's result")
    func watchCommand() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let (feed, listen) = (coordinator.process.feedEndpoint, coordinator.process.listenEndpoint)
        let context = try BatchChangeTests.context(coordinator)
        try await BatchChangeTests.insertPullRequests(100, into: context)
        let watch = try StartedProcess.start(
            "tributary",
            [
                "watch", "--entity", "PullRequest", "--where", "merged == NO", "--sort", "-additions,number",
                "--limit", "6", "--json", "--feed", feed, "--listen", listen,
            ])
        defer { watch.kill() }
        var (ids, _) = try Self.replay(try await watch.waitForOutput { _ in true }, on: [])
        func stored() throws -> [String] {
            try BatchChangeTests.ids(
                coordinator.storePath,
                "SELECT id FROM PullRequest WHERE merged = 0 ORDER BY additions DESC, number LIMIT 6"
            ).map { $0.uuidString.lowercased() }
        }
        #expect(ids == (try stored()))
        // Two commits: a batch update takes rows out, a context's save moves one in.
        let batch = try await context.execute(
            BatchUpdate(
                entity: "PullRequest", predicate: try FetchPredicate(format: "additions >= %d", 98),
                set: ["merged": .bool(true)]))
        try await context.perform { context in
            let pull = try #require(
                try context.fetch(
                    FetchRequest(entity: "PullRequest", predicate: try FetchPredicate(format: "number == 5"))
                )
                .first)
            pull["additions"] = .int(1_000)
        }
        let last = try await context.save().seq
        #expect(last > (batch.commits.last ?? 0))
        var seq: UInt64 = 0
        while seq < last {
            (ids, seq) = try Self.replay(try await watch.waitForOutput { _ in true }, on: ids)
        }
        #expect(ids == (try stored()))

        // Sectioned by `merged`: the rows with 95 additions or more (98 and 99 merged, 5 now with 1,000).
        let sectioned = try StartedProcess.start(
            "tributary",
            [
                "watch", "--entity", "PullRequest", "--where", "additions >= 95", "--sort", "number", "--section",
                "merged", "--json", "--feed", feed, "--listen", listen,
            ])
        defer { sectioned.kill() }
        let line = try await sectioned.waitForOutput { _ in true }
        let sections = try #require(
            (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["sections"] as? [[String: Any]]
        )
        #expect(sections.map { $0["name"] as? String } == ["false", "true"])
        #expect(sections.map { $0["count"] as? Int } == [4, 2])
    }
}

extension LiveResultsTests {
    @Test("the live-list example shows the live list and saves an edit through its view context")
    func liveListExample() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let (feed, listen) = (coordinator.process.feedEndpoint, coordinator.process.listenEndpoint)
        try await BatchChangeTests.insertPullRequests(40, into: try BatchChangeTests.context(coordinator))
        let (started, input) = try StartedProcess.startTalking(
            "live-list", ["--listen", listen, "--feed", feed, "--limit", "3"])
        defer { started.kill() }
        #expect(try await started.waitForOutput { $0.hasPrefix("1. #39 ") }.contains("+39  PR 39"))
        input.write(Data("title 39 A better title\n".utf8))
        _ = try await started.waitForOutput { $0.hasPrefix("1. #39 ") && $0.contains("A better title") }
        #expect(
            try BatchChangeTests.count(
                coordinator.storePath, "SELECT COUNT(*) FROM PullRequest WHERE number = 39 AND title = 'A better title'"
            )
                == 1)
    }
}

extension LiveResultsTests {
    @Test("a deleted object a key reaches (its references cleared by the store, not listed) is judged by a fetch")
    func deletedObjectsKeysReach() async throws {
        let directory = try TemporaryDirectory()
        let (store, writer, _) = try await Self.storeForRandomCommits(in: directory)
        defer { try? store.close() }
        try await writer.perform { context in
            let users = try context.fetch(FetchRequest(entity: "User"))
            let bo = users.first { $0["login"] == .string("bo") }!
            let cy = users.first { $0["login"] == .string("cy") }!
            for (number, author) in [(1, bo), (2, cy), (3, cy)] {
                let pull = try context.insert("PullRequest")
                pull["number"] = .int(Int64(number))
                pull["title"] = .string("PR \(number)")
                pull["merged"] = .bool(false)
                pull["additions"] = .int(1)
                pull["createdAt"] = .date(Date(timeIntervalSince1970: 0))
                try pull.setDestination(author, for: "author")
                try pull.setDestinations(number == 1 ? [cy] : [], for: "reviewers")
            }
        }
        try await writer.save()
        let requests = [
            FetchRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "author == nil"),
                sortedBy: [FetchSort("number")]),
            FetchRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "reviewers.@count == 0"),
                sortedBy: [FetchSort("number")]),
            FetchRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "author != nil"),
                sortedBy: [FetchSort("number")], limit: 2),
        ]
        // Each live result in a view of its own that holds only what it fetched.
        let views = (0..<requests.count).map {
            ObjectContext(model: Self.model, parent: LocalRootParent(store: store), name: "view \($0)")
        }
        var engines: [LiveResultsEngine] = []
        for (index, request) in requests.enumerated() {
            engines.append(try await views[index].perform { try LiveResultsEngine(request: request, context: $0) })
        }
        let fresh = ObjectContext(model: Self.model, parent: LocalRootParent(store: store), name: "fresh")
        try await writer.perform { context in
            context.delete(
                try context.fetch(
                    FetchRequest(entity: "User", predicate: try FetchPredicate(format: "login == %@", "cy")))[0])
        }
        let seq = try await writer.save().seq
        let save = DidSave(parts: try await store.feed.history(FeedStore.HistoryQuery(after: seq - 1)).parts)
        for (index, engine) in engines.enumerated() {
            let shown = try await views[index].perform { view in
                try view.mergeChanges(from: save, registeringNew: false)
                _ = try engine.apply(save, in: view)
                return engine.visible
            }
            let expected = try await fresh.perform { try $0.fetchObjectIDs(requests[index]).map(\.uuid) }
            #expect(shown == expected, "request \(index) after deleting cy")
        }
    }
}
