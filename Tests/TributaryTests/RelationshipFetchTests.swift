import Foundation
import GeneratedEntities
import Synchronization
import Testing
import TributaryCommandSupport
import TributaryProtocol

@testable import TributaryClient
@testable import TributaryCore

/// Fetches across relationships and prefetching through a real coordinator: key-path predicates (format strings and
/// typed keys) answered by the store, a context's unsaved objects judged in memory by the same predicates, and
/// prefetched relationships proven by counting the fetches that reach the coordinator.
@Suite("Fetches across relationships and prefetching, through a real coordinator")
struct RelationshipFetchTests {
    static let logins = ["ada", "Grace", "josé", "linus", "zed"]

    /// Pull request `number`'s author and reviewers (indexes into ``logins``): every user authors some, some have
    /// no author, reviewers vary from none to three.
    static func author(of number: Int) -> Int? { number % 7 == 6 ? nil : number % logins.count }
    static func reviewers(of number: Int) -> [Int] { (0..<(number % 4)).map { (number + $0 + 1) % logins.count } }

    /// Writes 40 pull requests with the typed API.
    struct WritePullRequests: JobHandler {
        let kind = "relationship-samples"

        func run(_ job: JobRun) async throws {
            let context = job.makeContext()
            try await context.perform { context in
                let users = try RelationshipFetchTests.logins.map { try User.findOrCreate(login: $0, in: context) }
                for number in 0..<40 {
                    let pullRequest = try PullRequest.findOrCreate(number: number, in: context)
                    pullRequest.title = "pr \(number)"
                    pullRequest.additions = number * 10
                    pullRequest.merged = number % 2 == 0
                    pullRequest.createdAt = Date(timeIntervalSince1970: 1_700_000_000 + Double(number))
                    pullRequest.author = RelationshipFetchTests.author(of: number).map { users[$0] }
                    pullRequest.reviewers = RelationshipFetchTests.reviewers(of: number).map { users[$0] }
                }
            }
            _ = try await job.complete(context, progress: 40)
        }
    }

    /// A parent that forwards to the coordinator and counts the fetches it sends: each is one round trip.
    final class CountingParent: ChangeSetParent {
        let store: CoordinatorStore
        let fetches = Mutex(0)

        init(_ store: CoordinatorStore) { self.store = store }

        func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt { try await store.save(changes) }

        func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
            fetches.withLock { $0 += 1 }
            return try store.fetch(request)
        }

        var count: Int { fetches.withLock { $0 } }
    }

    @Test(
        "key-path predicates and typed keys select what the data says; unsaved objects are judged in memory; prefetched relationships cost no more round trips"
    )
    func throughCoordinator() async throws {
        let directory = try TemporaryDirectory()
        let modelJSON = try String(
            contentsOf: TypedEntityTests.fixtures.appendingPathComponent("demo-model.json"), encoding: .utf8)
        let model = try Model.decode(Data(modelJSON.utf8))
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0, modelJSON: modelJSON)
        defer { Task { await coordinator.process.stop() } }
        let worker = InProcessWorker.start(
            endpoint: coordinator.process.listenEndpoint, handlers: [WritePullRequests()])
        defer { worker.cancel() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let status = try await client.finish(try await client.push([JobSpec(kind: "relationship-samples")]).batch)
        #expect(status.doneJobs == 1, "\(status)")

        let connection = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await connection.close() } }
        let logins = Self.logins

        // Key paths answered by the store, as format strings and as typed keys.
        let parent = CountingParent(CoordinatorStore(connection: connection))
        let context = ObjectContext(model: model, parent: parent)
        let mismatches = try await context.perform { context -> [String] in
            let cases: [(String, TypedPredicate<PullRequest>, [Int])] = [
                (
                    "author.login ==[cd] 'JOSE'",
                    PullRequest.author[User.login].equals("JOSE", caseInsensitive: true, diacriticInsensitive: true),
                    Self.numbers { Self.author(of: $0) == 2 }
                ),
                ("author == nil", PullRequest.author == nil, Self.numbers { Self.author(of: $0) == nil }),
                (
                    "author.name == nil", PullRequest.author[User.name] == nil, Self.numbers { _ in true }
                ),
                (
                    "ANY reviewers.login == 'ada'", PullRequest.reviewers.any[User.login] == "ada",
                    Self.numbers { Self.reviewers(of: $0).contains(0) }
                ),
                (
                    "ALL reviewers.login BEGINSWITH[c] 'g'",
                    PullRequest.reviewers.all[User.login].beginsWith("g", caseInsensitive: true),
                    Self.numbers { Self.reviewers(of: $0).allSatisfy { logins[$0].lowercased().hasPrefix("g") } }
                ),
                (
                    "NONE reviewers.login IN {'zed', 'linus'}",
                    PullRequest.reviewers.none[User.login].in(["zed", "linus"]),
                    Self.numbers { !Self.reviewers(of: $0).contains { $0 >= 3 } }
                ),
                (
                    "reviewers.@count >= 2", PullRequest.reviewers.count >= 2,
                    Self.numbers { Self.reviewers(of: $0).count >= 2 }
                ),
                (
                    "author.login == 'ada' AND reviewers.@count == 0",
                    PullRequest.author[User.login] == "ada" && PullRequest.reviewers.count == 0,
                    Self.numbers { Self.author(of: $0) == 0 && Self.reviewers(of: $0).isEmpty }
                ),
            ]
            var mismatches: [String] = []
            for (format, typed, expected) in cases {
                let viaFormat = try context.fetch(
                    FetchRequest(
                        entity: "PullRequest", predicate: try FetchPredicate(format: format),
                        sortedBy: [FetchSort("number")])
                ).map { PullRequest(unchecked: $0).number }
                let viaTypes = try PullRequest.fetch(
                    in: context, where: typed, sortedBy: [PullRequest.number.ascending]
                )
                .map(\.number)
                if viaFormat != expected || viaTypes != expected {
                    mismatches.append("\(format): format \(viaFormat), typed \(viaTypes), expected \(expected)")
                }
            }
            return mismatches
        }
        #expect(mismatches.isEmpty, "\(mismatches)")

        // Unsaved changes: a new pull request reviewed by ada, and a stored one whose reviewers become ada's only.
        let unsaved = try await context.perform { context -> [String] in
            let ada = try #require(try User.fetch(in: context, where: User.login == "ada").first)
            let zed = try #require(try User.fetch(in: context, where: User.login == "zed").first)
            let fresh = try PullRequest.insert(into: context)
            fresh.number = 1000
            fresh.title = "unsaved"
            fresh.reviewers = [ada, zed]
            fresh.author = zed
            // Pull request 3 has three reviewers; give it none.
            let changed = try #require(try PullRequest.fetch(in: context, where: PullRequest.number == 3).first)
            changed.reviewers = []
            var problems: [String] = []
            let reviewedByAda = try PullRequest.fetch(
                in: context, where: PullRequest.reviewers.any[User.login] == "ada",
                sortedBy: [PullRequest.number.ascending]
            ).map(\.number)
            let expected = Self.numbers { $0 != 3 && Self.reviewers(of: $0).contains(0) } + [1000]
            if reviewedByAda != expected {
                problems.append("ANY reviewers.login == 'ada': \(reviewedByAda), expected \(expected)")
            }
            let byZed = try PullRequest.fetch(
                in: context, where: PullRequest.author[User.login] == "zed" && PullRequest.reviewers.count == 2,
                sortedBy: [PullRequest.number.ascending]
            ).map(\.number)
            let expectedByZed = Self.numbers { Self.author(of: $0) == 4 && Self.reviewers(of: $0).count == 2 } + [1000]
            if byZed != expectedByZed {
                problems.append("by zed with 2 reviewers: \(byZed), expected \(expectedByZed)")
            }
            let none = try PullRequest.count(in: context, where: PullRequest.reviewers.count == 0)
            let expectedNone = Self.numbers { $0 == 3 || Self.reviewers(of: $0).isEmpty }.count
            if none != expectedNone { problems.append("reviewers.@count == 0: \(none), expected \(expectedNone)") }
            // A destination that no longer exists (an unsaved insert, deleted) is not prefetched into an empty object.
            let ghost = try User.insert(into: context)
            ghost.login = "ghost"
            let haunted = try #require(try PullRequest.fetch(in: context, where: PullRequest.number == 5).first)
            let original = haunted.author
            haunted.author = ghost
            context.delete(ghost.managedObject)
            _ = try PullRequest.fetch(
                in: context, where: PullRequest.number == 5, prefetching: [.path(PullRequest.author)])
            if context.registeredObjects.contains(where: { $0.objectID == ghost.objectID }) {
                problems.append("a deleted insert came back, registered, through prefetching")
            }
            haunted.author = original
            // Sorted by a key path with the unsaved pull request among the stored ones: ordered here, in memory.
            let sorted = try PullRequest.fetch(
                in: context, sortedBy: [PullRequest.author[User.login].descending, PullRequest.number.ascending]
            ).map(\.number)
            func login(_ number: Int) -> [UInt8]? {
                number == 1000 ? Array("zed".utf8) : Self.author(of: number).map { Array(logins[$0].utf8) }
            }
            let expectedSorted = (Self.numbers { _ in true } + [1000]).sorted { a, b in
                switch (login(a), login(b)) {
                case (let x?, let y?) where x != y: return y.lexicographicallyPrecedes(x)
                case (nil, _?): return false
                case (_?, nil): return true
                default: return a < b
                }
            }
            if sorted != expectedSorted {
                problems.append("sorted by author.login: \(sorted), expected \(expectedSorted)")
            }
            context.rollback()
            return problems
        }
        #expect(unsaved.isEmpty, "\(unsaved)")

        // Prefetching: reading every fetched pull request's author and reviewers is one round trip.
        let (prefetched, without, nested) = try await Self.roundTrips(model: model, connection: connection)
        print(
            "round trips reading 40 pull requests' authors and reviewers: \(prefetched) with prefetching, \(without) without, \(nested) through a child context"
        )
        #expect(prefetched.fetches == 1, "with prefetching: \(prefetched)")
        #expect(without.fetches > 1, "without prefetching: \(without)")
        #expect(nested.fetches == 1, "a child context's prefetch through its parent context: \(nested)")
        let expected = (0..<40).map { number in
            "\(Self.author(of: number).map { logins[$0] } ?? "-"):\(Self.reviewers(of: number).map { logins[$0] }.sorted())"
        }
        for result in [prefetched, without, nested] { #expect(result.lines == expected) }
    }

    /// The numbers of the 40 pull requests that `include` selects.
    static func numbers(_ include: (Int) -> Bool) -> [Int] { (0..<40).filter(include) }

    /// Each pull request's author and reviewers, read through its relationships.
    static func read(_ pullRequests: [PullRequest]) -> [String] {
        pullRequests.map { pullRequest in
            "\(pullRequest.author?.login ?? "-"):\(pullRequest.reviewers.map(\.login).sorted())"
        }
    }

    struct RoundTrips: CustomStringConvertible {
        var fetches: Int
        var lines: [String]
        var description: String { "\(fetches) fetches" }
    }

    /// Fetches the pull requests (with and without prefetching, and through a child context) and reads each one's
    /// author and reviewers, counting the fetches that reach the coordinator.
    static func roundTrips(model: Model, connection: CoordinatorConnection) async throws -> (
        RoundTrips, RoundTrips, RoundTrips
    ) {
        var results: [RoundTrips] = []
        for prefetching in [true, false] {
            let parent = CountingParent(CoordinatorStore(connection: connection))
            let context = ObjectContext(model: model, parent: parent)
            let lines = try await context.perform { context in
                Self.read(
                    try PullRequest.fetch(
                        in: context, sortedBy: [PullRequest.number.ascending],
                        prefetching: prefetching ? [.path(PullRequest.author), .path(PullRequest.reviewers)] : []))
            }
            results.append(RoundTrips(fetches: parent.count, lines: lines))
        }
        let parent = CountingParent(CoordinatorStore(connection: connection))
        let middle = ObjectContext(model: model, parent: parent)
        let child = ObjectContext(model: model, parent: middle)
        let lines = try await child.perform { context in
            Self.read(
                try PullRequest.fetch(
                    in: context, sortedBy: [PullRequest.number.ascending],
                    prefetching: [.path(PullRequest.author), .path(PullRequest.reviewers)]))
        }
        results.append(RoundTrips(fetches: parent.count, lines: lines))
        return (results[0], results[1], results[2])
    }

    @Test("prefetch key paths that are not relationships are refused, naming the entity and key")
    func prefetchRefusals() throws {
        let model = try Model.load(contentsOf: TypedEntityTests.fixtures.appendingPathComponent("demo-model.json"))
        let entity = try #require(model.entity(named: "PullRequest"))
        let attribute = #expect(throws: FetchPredicateError.self) { try model.prefetchPath("title", from: entity) }
        #expect(attribute?.message.contains("'PullRequest.title' is an attribute") == true)
        let unknown = #expect(throws: FetchPredicateError.self) { try model.prefetchPath("author.team", from: entity) }
        #expect(unknown?.message.contains("entity 'User' has no relationship named 'team'") == true)
        #expect(try model.prefetchPath("author", from: entity).map(\.name) == ["author"])
    }
}
