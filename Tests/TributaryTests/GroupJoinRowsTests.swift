import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// A group commit applied without savepoints writes the join rows of all its change sets together, sorted, after
/// the last (``ChangeSetMerger/defersJoinRows``). Each test makes a later save of the group read or clear join rows
/// an earlier one gathered, or fail after gathering some, and checks the join table with a separate connection.
@Suite("Group commits: join rows gathered across saves are in the store before anything reads them")
struct GroupJoinRowsTests {
    static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"}], "uniqueness": [["login"]]},
          {"name": "Post", "attributes": [{"name": "title", "type": "string"}],
           "relationships": [{"name": "author", "destination": "User", "optional": true},
                             {"name": "reviewers", "destination": "User", "toMany": true}]}]}
        """

    /// Each post's title → its reviewers' logins, read from the join table with a separate connection; rows whose
    /// source or destination has no object come back as "?".
    static func reviewers(_ store: TemporaryStore) async throws -> [String: Set<String>] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        return try await queue.read { db in
            var reviewers: [String: Set<String>] = [:]
            let join = SQLText.quote(SQLText.joinTable("Post", "reviewers"))
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT coalesce(p.title, '?'), coalesce(u.login, '?') FROM \(join) j
                    LEFT JOIN Post p ON p._rowid = j.source LEFT JOIN User u ON u._rowid = j.destination
                    """)
            {
                reviewers[row[0], default: []].insert(row[1])
            }
            return reviewers
        }
    }

    static func users(_ logins: [String: UUID]) -> Tributary_V1_EntityBatch {
        let sorted = logins.sorted { $0.key < $1.key }
        return .inserting("User", ids: sorted.map(\.value), [.strings("login", sorted.map(\.key))])
    }

    static func post(_ title: String, id: UUID = UUID(), reviewers: [UUID]) -> Tributary_V1_EntityBatch {
        .inserting("Post", ids: [id], [.strings("title", [title]), .destinations("reviewers", [reviewers])])
    }

    static func save(_ batches: Tributary_V1_EntityBatch...) -> (SaveRequest, String) {
        (SaveRequest(changes: .with { $0.batches = batches }), "test")
    }

    @Test("a user deleted by a later save of the group leaves no join row behind from an earlier one")
    func deleteAfterInsert() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let (ada, bea) = (UUID(), UUID())
        let delete = Tributary_V1_EntityBatch.with {
            $0.entity = "User"
            $0.operation = .delete
            $0.ids = ada.bytes
        }
        let results = try await store.store.saves.applySaves([
            Self.save(Self.users(["ada": ada, "bea": bea]), Self.post("hello", reviewers: [ada, bea])),
            Self.save(delete),
        ])
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(try await Self.reviewers(store) == ["hello": ["bea"]])
    }

    @Test("reviewers replaced by a later save of the group are the only ones left")
    func replaceAfterInsert() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let (ada, bea, cid, post) = (UUID(), UUID(), UUID(), UUID())
        let update = Tributary_V1_EntityBatch.with {
            $0.entity = "Post"
            $0.operation = .update
            $0.ids = post.bytes
            $0.columns = [.destinations("reviewers", [[cid]])]
        }
        let results = try await store.store.saves.applySaves([
            Self.save(
                Self.users(["ada": ada, "bea": bea, "cid": cid]), Self.post("hello", id: post, reviewers: [ada, bea])),
            Self.save(update),
        ])
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(try await Self.reviewers(store) == ["hello": ["cid"]])
    }

    @Test("a save of the group that fails after gathering join rows leaves none, and the others' are written once")
    func failedSaveInGroup() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let (ada, bea) = (UUID(), UUID())
        // An author the store does not have: the save is refused, after its reviewers were gathered.
        let refused = Tributary_V1_EntityBatch.inserting(
            "Post", ids: [UUID()],
            [.strings("title", ["refused"]), .references("author", [UUID()]), .destinations("reviewers", [[ada]])])
        let results = try await store.store.saves.applySaves([
            Self.save(Self.users(["ada": ada, "bea": bea]), Self.post("one", reviewers: [ada, bea])),
            Self.save(refused),
            Self.save(Self.post("three", reviewers: [bea])),
        ])
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true])
        #expect(try await Self.reviewers(store) == ["one": ["ada", "bea"], "three": ["bea"]])
    }

    @Test("join rows of many saves in one group are all written, whatever their order")
    func manySaves() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let logins = (0..<50).map { "user\($0)" }
        let ids = Dictionary(uniqueKeysWithValues: logins.map { ($0, UUID()) })
        var saves = [Self.save(Self.users(ids))]
        var expected: [String: Set<String>] = [:]
        for post in 0..<40 {
            // Reviewers descending by login for some posts, ascending for others: the writer sorts them.
            let chosen = (0..<3).map { logins[(post * 7 + $0 * 13) % logins.count] }
            let ordered = post.isMultiple(of: 2) ? chosen.sorted() : chosen.sorted().reversed()
            saves.append(Self.save(Self.post("post\(post)", reviewers: ordered.map { ids[$0]! })))
            expected["post\(post)"] = Set(chosen)
        }
        let results = try await store.store.saves.applySaves(saves)
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(try await Self.reviewers(store) == expected)
    }
}

extension GroupJoinRowsTests {
    @Test("a save without changes that fails in a group leaves the join rows the saves before it gathered")
    func emptySaveFailsInGroup() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let (ada, bea) = (UUID(), UUID())
        // No batches and a merge policy the store does not know: refused, without rolling the group back.
        let refused = SaveRequest(changes: .with { $0.mergePolicy = .UNRECOGNIZED(99) })
        let results = try await store.store.saves.applySaves([
            Self.save(Self.users(["ada": ada, "bea": bea]), Self.post("one", reviewers: [ada, bea])),
            (refused, "test"),
            Self.save(Self.post("three", reviewers: [bea])),
        ])
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true])
        #expect(try await Self.reviewers(store) == ["one": ["ada", "bea"], "three": ["bea"]])
    }
}

extension GroupJoinRowsTests {
    @Test("an update resolved by its merge policy in a group reads back the reviewers it just set")
    func resolvedUpdateReadsItsJoinRows() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let (ada, bea, post) = (UUID(), UUID(), UUID())
        // Read at a version the store never had: a conflict, which object trump resolves in the change set's favour;
        // the store's row of the object comes back with the save's answer.
        let update = Tributary_V1_ChangeSet.with {
            $0.mergePolicy = .objectTrump
            $0.batches = [
                .with {
                    $0.entity = "Post"
                    $0.operation = .update
                    $0.ids = post.bytes
                    $0.versions = [999_999]
                    $0.columns = [.strings("title", ["edited"]), .destinations("reviewers", [[bea]])]
                }
            ]
        }
        let results = try await store.store.saves.applySaves([
            Self.save(Self.users(["ada": ada, "bea": bea]), Self.post("hello", id: post, reviewers: [ada])),
            (SaveRequest(changes: update), "test"),
        ])
        let applied = try results.map { try $0.get() }
        guard case .committed(_, _, _, let resolved) = applied[1].outcome else {
            Issue.record("the update was not committed: \(applied[1].outcome)")
            return
        }
        let column = try #require(resolved.first?.columns.first { $0.name == "reviewers" })
        #expect(column.counts == [1])
        #expect(column.fixed16 == bea.bytes)
        #expect(try await Self.reviewers(store) == ["edited": ["bea"]])
    }
}
