import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// The inverse index (each relationship by destination, in a folded and a recent half) stays exact through every
/// kind of write, across folds, and what reads it (a delete's clearing of references, a predicate comparing a to-one
/// relationship with an object) finds entries in both halves.
@Suite("Inverse index: exact through inserts, updates, deletes and folds")
struct InverseIndexTests {
    static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"}],
           "relationships": [{"name": "mentor", "destination": "User"}], "uniqueness": [["login"]]},
          {"name": "PullRequest", "attributes": [{"name": "number", "type": "int"}],
           "relationships": [{"name": "author", "destination": "User"},
                             {"name": "reviewers", "destination": "User", "toMany": true}]}]}
        """

    let directory: TemporaryDirectory
    let model: Model
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        model = try Model.decode(Data(Self.modelJSON.utf8))
        store = try RootStore.open(path: directory.path("store.sqlite"), model: model)
    }

    func toOne(_ name: String, _ destination: UUID?) -> Tributary_V1_Column {
        .with {
            $0.name = name
            $0.fixed16 = (destination ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))).bytes
            if destination == nil { $0.nulls = Data([1]) }
        }
    }

    func toMany(_ name: String, _ destinations: [UUID]) -> Tributary_V1_Column {
        .with {
            $0.name = name
            $0.fixed16 = destinations.reduce(Data()) { $0 + $1.bytes }
            $0.counts = [UInt32(destinations.count)]
        }
    }

    func batch(_ entity: String, _ operation: Tributary_V1_Operation, _ id: UUID, _ columns: [Tributary_V1_Column])
        -> Tributary_V1_EntityBatch
    {
        .with {
            $0.entity = entity
            $0.operation = operation
            $0.ids = id.bytes
            $0.columns = columns
        }
    }

    func save(_ batches: [Tributary_V1_EntityBatch]) async throws {
        _ = try await store.saves.applySave(.with { $0.changes.batches = batches }, from: "w1")
    }

    /// Each relationship's pairs as its tables and its inverse index hold them.
    func pairs() async throws -> [String: InverseIndexCheck.Pairs] {
        try await store.pool.read { db in try InverseIndexCheck.pairs(db, model: self.model) }
    }

    func login(_ login: String) -> Tributary_V1_Column {
        .with {
            $0.name = "login"
            $0.strings = [login]
        }
    }

    func number(_ number: Int64) -> Tributary_V1_Column {
        .with {
            $0.name = "number"
            $0.ints = [number]
        }
    }

    /// Inserts users ada and grace, and returns their ids.
    func insertAdaAndGrace() async throws -> (UUID, UUID) {
        let (ada, grace) = (UUID(), UUID())
        try await save([batch("User", .insert, ada, [login("ada")]), batch("User", .insert, grace, [login("grace")])])
        return (ada, grace)
    }

    @Test("random inserts, updates and deletes with folds between them: each entry once, in exactly one half")
    func exactThroughEveryWrite() async throws {
        // Small, so folds happen all through the run (the default waits for millions of changes).
        store.writer.inverseFold.changes = 60
        var random = SplitMix64(seed: 42)
        var users: [UUID] = []
        var pulls: [UUID] = []
        var logins: [UUID: String] = [:]
        var sawRecent = false
        var sawFolded = false
        for step in 0..<300 {
            var batches: [Tributary_V1_EntityBatch] = []
            switch (step < 20 ? 0 : Int.random(in: 0..<12, using: &random)) {
            case 0, 1:
                let user = UUID()
                batches.append(
                    batch(
                        "User", .insert, user,
                        [login("u\(step)"), toOne("mentor", users.randomElement(using: &random))]))
                users.append(user)
                logins[user] = "u\(step)"
            case 2, 3, 4:
                guard let author = users.randomElement(using: &random) else { continue }
                let pull = UUID()
                let reviewers = Array(
                    Set(
                        (0..<Int.random(in: 0...3, using: &random)).compactMap { _ in
                            users.randomElement(using: &random)
                        }))
                batches.append(
                    batch(
                        "PullRequest", .insert, pull,
                        [
                            .with {
                                $0.name = "number"; $0.ints = [Int64(step)]
                            }, toOne("author", author), toMany("reviewers", reviewers),
                        ]))
                pulls.append(pull)
            case 5:
                guard let pull = pulls.randomElement(using: &random) else { continue }
                let author = Bool.random(using: &random) ? users.randomElement(using: &random) : nil
                batches.append(batch("PullRequest", .update, pull, [toOne("author", author)]))
            case 6:
                guard let pull = pulls.randomElement(using: &random) else { continue }
                let reviewers = Array(
                    Set(
                        (0..<Int.random(in: 0...3, using: &random)).compactMap { _ in
                            users.randomElement(using: &random)
                        }))
                batches.append(batch("PullRequest", .update, pull, [toMany("reviewers", reviewers)]))
            case 7:
                guard let user = users.randomElement(using: &random) else { continue }
                batches.append(batch("User", .update, user, [toOne("mentor", users.randomElement(using: &random))]))
            case 8:
                // A user's delete clears its authorships, reviews and mentorships, wherever their entries are.
                guard users.count > 5, let index = users.indices.randomElement(using: &random) else { continue }
                batches.append(batch("User", .delete, users.remove(at: index), []))
            case 9:
                guard let index = pulls.indices.randomElement(using: &random) else { continue }
                batches.append(batch("PullRequest", .delete, pulls.remove(at: index), []))
            case 10:
                // An insert of a login the store has: merged into the stored user by the uniqueness key, its mentor
                // rewritten by the upsert's update.
                guard let user = users.randomElement(using: &random), let login = logins[user] else { continue }
                batches.append(
                    batch(
                        "User", .insert, UUID(),
                        [
                            .with {
                                $0.name = "login"; $0.strings = [login]
                            }, toOne("mentor", users.randomElement(using: &random)),
                        ]))
            default:
                // A pull request whose author the same change set inserts after it: its column is set once the
                // inserts are done.
                let (pull, author) = (UUID(), UUID())
                batches.append(
                    batch(
                        "PullRequest", .insert, pull,
                        [
                            .with {
                                $0.name = "number"; $0.ints = [Int64(step)]
                            }, toOne("author", author),
                        ]))
                batches.append(
                    batch(
                        "User", .insert, author,
                        [
                            .with {
                                $0.name = "login"; $0.strings = ["u\(step)"]
                            }
                        ]))
                pulls.append(pull)
                users.append(author)
                logins[author] = "u\(step)"
            }
            try await save(batches)
            let pairs = try await pairs()
            for (name, pair) in pairs {
                #expect(pair.forward == pair.inverse, "step \(step): \(name)")
                if pair.recent > 0 { sawRecent = true }
                if pair.inverse.count > pair.recent { sawFolded = true }
            }
        }
        #expect(sawRecent && sawFolded, "the run wrote entries to both halves")
        let authored = try await pairs()["PullRequest.author"]!.forward.count
        #expect(authored > 20, "the run left authored pull requests to check: \(authored)")
    }

    @Test("a delete clears references in both halves, and `author == X` finds pull requests in both")
    func readersSeeBothHalves() async throws {
        let (ada, grace) = try await insertAdaAndGrace()
        var early: [UUID] = []
        for number in 0..<3 {
            let pull = UUID()
            early.append(pull)
            try await save([
                batch(
                    "PullRequest", .insert, pull,
                    [
                        .with {
                            $0.name = "number"; $0.ints = [Int64(number)]
                        }, toOne("author", ada), toMany("reviewers", [ada, grace]),
                    ])
            ])
        }
        // Folded: the early pull requests' entries move to the large half.
        try await store.pool.write { db in try InverseIndex.fold(self.model, in: db) }
        var late: [UUID] = []
        for number in 3..<5 {
            let pull = UUID()
            late.append(pull)
            try await save([
                batch(
                    "PullRequest", .insert, pull,
                    [
                        .with {
                            $0.name = "number"; $0.ints = [Int64(number)]
                        }, toOne("author", ada), toMany("reviewers", [ada]),
                    ])
            ])
        }
        let split = try await pairs()["PullRequest.author"]!
        #expect(split.recent == 2 && split.inverse.count == 5, "3 entries folded, 2 recent")

        let entity = try #require(model.entity(named: "PullRequest"))
        func matching(_ format: String) async throws -> Set<UUID> {
            let compiled = try FetchPredicate(format: format, ada).compile(for: entity)
            return try await store.pool.read { db in
                Set(
                    try Data.fetchAll(
                        db, sql: "SELECT id FROM PullRequest WHERE \(compiled.sql)",
                        arguments: StatementArguments(compiled.arguments.map(\.databaseValue))
                    ).map { UUID(bytes: $0, at: $0.startIndex) })
            }
        }
        #expect(try await matching("author == %@") == Set(early + late))
        #expect(try await matching("author != %@").isEmpty)

        try await save([batch("User", .delete, ada, [])])
        let counts = try await store.pool.read { db in
            [
                try Int.fetchOne(db, sql: "SELECT count(*) FROM PullRequest WHERE author IS NOT NULL"),
                try Int.fetchOne(db, sql: "SELECT count(*) FROM PullRequest_reviewers"),
            ]
        }
        #expect(counts == [0, 3], "every authorship and review of the deleted user cleared; grace's 3 reviews stay")
        for (name, pair) in try await pairs() { #expect(pair.forward == pair.inverse, "\(name)") }
    }

    @Test("`author == %@` comparisons as deep as the limits allow, fetched with prefetching, run on SQLite")
    func deepestToOneComparisons() async throws {
        let (ada, grace) = try await insertAdaAndGrace()
        try await save([
            batch(
                "PullRequest", .insert, UUID(),
                [
                    .with {
                        $0.name = "number"; $0.ints = [1]
                    }, toOne("author", ada),
                ])
        ])
        // AND and OR alternating to the depth limit, the nested group last (the parser's worst case), each leaf a
        // to-one comparison (its SQL nests deepest).
        var predicate = try FetchPredicate(format: "author == %@", ada)
        for level in 1..<PredicateLimits.maxDepth - 1 {
            let leaf =
                level % 2 == 0
                ? try FetchPredicate(format: "author == %@", ada) : try FetchPredicate(format: "author != %@", grace)
            predicate = level % 2 == 0 ? .and([leaf, predicate]) : .or([leaf, predicate])
        }
        let reply = try await store.fetch(
            .with {
                $0.entity = "PullRequest"
                $0.predicate = predicate.wire
                $0.prefetch = ["author"]
            })
        #expect(reply.objects.ids.count == 16, "the one pull request by ada")
        #expect(reply.prefetched.first?.ids.count == 16, "its author, prefetched")
    }

    @Test("relationships a model adds get their inverse index, and the entity's other relationships keep theirs")
    func migrationAddsInverseIndexes() async throws {
        // A store of a model without User.mentor and PullRequest.reviewers, holding a pull request with its author.
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let before = try Model.decode(
            Data(
                """
                {"entities": [
                  {"name": "User", "attributes": [{"name": "login", "type": "string"}], "uniqueness": [["login"]]},
                  {"name": "PullRequest", "attributes": [{"name": "number", "type": "int"}],
                   "relationships": [{"name": "author", "destination": "User"}]}]}
                """.utf8))
        let (ada, grace) = (UUID(), UUID())
        var old = try RootStore.open(path: path, model: before)
        _ = try await old.saves.applySave(
            .with {
                $0.changes.batches = [
                    batch("User", .insert, ada, [login("ada")]), batch("User", .insert, grace, [login("grace")]),
                    batch("PullRequest", .insert, UUID(), [number(1), toOne("author", ada)]),
                ]
            }, from: "w1")
        try old.close()
        // Opened with this suite's model, which adds both; then each relationship written.
        old = try RootStore.open(path: path, model: model)
        _ = try await old.saves.applySave(
            .with {
                $0.changes.batches = [
                    batch("User", .update, grace, [toOne("mentor", ada)]),
                    batch(
                        "PullRequest", .insert, UUID(),
                        [number(2), toOne("author", grace), toMany("reviewers", [ada, grace])]),
                ]
            }, from: "w1")
        try old.close()
        #expect(try InverseIndexCheck.mismatches(path: path, model: model).isEmpty)
        var configuration = Configuration()
        configuration.readonly = true
        let counts = try await DatabaseQueue(path: path, configuration: configuration).read { db in
            try InverseIndexCheck.pairs(db, model: self.model).mapValues(\.inverse.count)
        }
        #expect(counts == ["User.mentor": 1, "PullRequest.author": 2, "PullRequest.reviewers": 2])
    }

    @Test("the writer folds the recent half once its schedule's changes are made, after the save's transaction")
    func writerFolds() async throws {
        store.writer.inverseFold.changes = 10
        let user = UUID()
        try await save([batch("User", .insert, user, [login("ada")])])
        for number in 0..<4 {
            try await save([
                batch(
                    "PullRequest", .insert, UUID(),
                    [
                        .with {
                            $0.name = "number"; $0.ints = [Int64(number)]
                        }, toOne("author", user),
                    ])
            ])
        }
        // Each save: the pull request, its author entry, and the history record: 12 changes by the fourth.
        let author = try await pairs()["PullRequest.author"]!
        #expect(author.inverse.count == 4)
        #expect(author.recent < 4, "a fold ran: \(author.recent) entries still recent")
    }
}
