import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// The history as the store keeps it: what a commit records, pages, pruning rules, durable positions, snapshots.
@Suite("History in the store: records with values, pages, pruning, durable subscribers, snapshots")
struct HistoryStoreTests {
    let directory: TemporaryDirectory
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try RootStore.open(
            path: directory.path("store.sqlite"), model: try Model.decode(Data(everyTypeModelJSON.utf8)))
    }

    /// Commits `count` saves, each inserting one Tag, and returns their sequence numbers.
    @discardableResult
    func commitTags(_ count: Int, prefix: String = "tag") async throws -> [UInt64] {
        var seqs: [UInt64] = []
        for index in 0..<count {
            let save = Tributary_V1_SaveChanges.with {
                $0.changes.batches = [.inserting("Tag", "label", "\(prefix)-\(index)")]
            }
            guard case .committed(let seq, _, _, _) = try await store.saves.applySave(save, from: "w1") else {
                throw TimedOut(what: "a commit")
            }
            seqs.append(seq)
        }
        return seqs
    }

    @Test(
        "a commit's history part carries its values keyed by the stored ids, and leaves out rows that changed nothing")
    func historyCarriesValues() async throws {
        try await commitTags(1, prefix: "existing")
        // Find-or-create of an existing tag (changes nothing) next to a new one.
        let save = Tributary_V1_SaveChanges.with {
            $0.changes.batches = [
                .with {
                    $0.entity = "Tag"
                    $0.operation = .insert
                    $0.ids = UUID().bytes + UUID().bytes
                    $0.columns = [
                        .with {
                            $0.name = "label"; $0.strings = ["existing-0", "new"]
                        }
                    ]
                }
            ]
        }
        _ = try await store.saves.applySave(save, from: "w1")
        let page = try await store.feed.history(.init(after: 1))
        let part = try #require(page.parts.first)
        #expect(page.parts.count == 1 && part.seq == 2 && part.entity == "Tag")
        #expect(part.insertedIds.count == 16 && part.updatedIds.isEmpty)
        let values = try #require(part.values.first)
        #expect(values.ids == part.insertedIds, "only the row that changed something, under its stored id")
        #expect(values.columns.first?.strings == ["new"])
    }

    @Test("pages end at max_commits, say where they got to, and filter by entity and attribute")
    func pages() async throws {
        try await commitTags(5)
        var query = FeedStore.HistoryQuery(after: 0)
        query.maxCommits = 2
        let first = try await store.feed.history(query)
        #expect(first.parts.map(\.seq) == [1, 2] && first.throughSeq == 2 && first.lastSeq == 5)
        query.after = 2
        query.until = 4
        query.maxCommits = 10
        let second = try await store.feed.history(query)
        #expect(second.parts.map(\.seq) == [3, 4] && second.throughSeq == 4)
        do {
            _ = try await store.feed.history(.init(after: 6))
            Issue.record("a position beyond the last commit was answered")
        } catch let error as StoreError {
            #expect(
                error.code == .feedRewritten && error.seq == 6 && error.message.contains("the store's last commit is 5")
            )
        }

        query = FeedStore.HistoryQuery(after: 0)
        query.filter = FeedFilter(entities: ["Thing"])
        let otherEntity = try await store.feed.history(query)
        #expect(otherEntity.parts.isEmpty && otherEntity.throughSeq == 5, "nothing matches, every commit looked at")
        query.filter = FeedFilter(entities: ["Tag"], attributes: ["label"])
        #expect(try await store.feed.history(query).parts.count == 5)
    }

    @Test("an attribute filter passes the parts that set one of its attributes, and deletes")
    func attributeFilter() async throws {
        let tag = Tributary_V1_EntityBatch.inserting("Tag", "label", "a")
        let relabel = Tributary_V1_EntityBatch.with {
            $0.entity = "Tag"
            $0.operation = .update
            $0.ids = tag.ids
            $0.columns = [
                .with {
                    $0.name = "label"; $0.strings = ["b"]
                }
            ]
        }
        let delete = Tributary_V1_EntityBatch.with {
            $0.entity = "Tag"
            $0.operation = .delete
            $0.ids = tag.ids
        }
        for batch in [tag, relabel, delete] {
            _ = try await store.saves.applySave(.with { $0.changes.batches = [batch] }, from: "w1")
        }
        var query = FeedStore.HistoryQuery(after: 0)
        query.filter = FeedFilter(attributes: ["label"])
        #expect(try await store.feed.history(query).parts.map(\.seq) == [1, 2, 3])
        query.filter = FeedFilter(attributes: ["primary"])
        #expect(try await store.feed.history(query).parts.map(\.seq) == [3], "only the delete: nothing set `primary`")
    }

    @Test("pruning keeps the newest commits and never passes a durable subscriber; a pruned position is refused")
    func pruning() async throws {
        try await commitTags(10)
        _ = try await store.feed.updateSubscriber(name: "audit", position: 4, registerOnly: false)
        #expect(try await store.feed.pruneHistory(before: nil, keepingNewest: 3) == 4, "held at the subscriber's 4")
        #expect(try await store.feed.oldestKeptSequenceNumber() == 5)
        await #expect(throws: StoreError.self) { try await store.feed.history(.init(after: 3)) }
        #expect(try await store.feed.history(.init(after: 4)).parts.map(\.seq) == [5, 6, 7, 8, 9, 10])

        _ = try await store.feed.updateSubscriber(name: "audit", position: 9, registerOnly: false)
        #expect(try await store.feed.pruneHistory(before: nil, keepingNewest: 3) == 3, "now down to the newest 3")
        do {
            _ = try await store.feed.history(.init(after: 6))
            Issue.record("a pruned position was answered")
        } catch let error as StoreError {
            #expect(error.code == .historyPruned && error.message.contains("oldest commit kept is 8"))
        }
        await #expect(throws: StoreError.self, "a subscriber cannot be placed before the history kept") {
            try await store.feed.updateSubscriber(name: "late", position: 2, registerOnly: false)
        }
        _ = try await store.feed.deleteSubscriber(name: "audit")
        #expect(try await store.feed.subscribers().isEmpty)
    }

    @Test("pruning by age deletes only commits older than the cutoff")
    func pruningByAge() async throws {
        try await commitTags(3)
        #expect(try await store.feed.pruneHistory(before: Date() - 3600, keepingNewest: nil) == 0)
        #expect(try await store.feed.pruneHistory(before: Date() + 1, keepingNewest: nil) == 3)
        // With every record pruned, the sequence goes on from the last pruned one.
        #expect(try await store.feed.lastSequenceNumber() == 3)
        #expect(try await commitTags(1, prefix: "after") == [4])
        #expect(try await store.feed.history(.init(after: 3)).parts.map(\.seq) == [4])
    }

    @Test("a registered durable subscriber keeps its position when registered again")
    func registerOnly() async throws {
        try await commitTags(7)
        _ = try await store.feed.updateSubscriber(name: "s", position: 3, registerOnly: true)
        let again = try await store.feed.updateSubscriber(name: "s", position: 7, registerOnly: true)
        #expect(again.position == 3)
        #expect(try await store.feed.updateSubscriber(name: "s", position: 7, registerOnly: false).position == 7)
    }

    @Test("a snapshot pages through every object as of its first page, whatever commits meanwhile")
    func snapshot() async throws {
        try await commitTags(25)
        let snapshot = try store.feed.makeSnapshot(entities: ["Tag"])
        var labels: [String] = []
        var pages = 0
        var seqs: Set<UInt64> = []
        while true {
            let page = try await snapshot.nextPage(maxRows: 10)
            if pages == 0 { try await commitTags(5, prefix: "after") }
            seqs.insert(page.seq)
            pages += 1
            for batch in page.objects {
                #expect(batch.operation == .insert && batch.ids.count == batch.columns[0].strings.count * 16)
                labels += batch.columns.first { $0.name == "label" }?.strings ?? []
            }
            if page.done { break }
        }
        #expect(seqs == [25])
        #expect(labels.count == 25 && Set(labels).count == 25 && !labels.contains { $0.hasPrefix("after") })
        #expect(pages == 3 || pages == 4)
        #expect(throws: StoreError.self) { try store.feed.makeSnapshot(entities: ["Nope"]) }
    }
}
