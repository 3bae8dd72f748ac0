import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// Store epochs: each run's commits carry its epoch, and a history request from a position the store's history
/// does not hold (a lost tail, a restore from an older copy) is refused with FEED_REWRITTEN naming the first seq
/// that may differ. Each "run" is a `RootStore` opened on the file (a writer of its own, as a coordinator start).
@Suite("Store epochs: commits stamped by run, resumes checked against the store's history")
struct StoreEpochTests {
    let directory: TemporaryDirectory
    let model: Model

    init() throws {
        directory = try TemporaryDirectory()
        model = try Model.decode(Data(everyTypeModelJSON.utf8))
    }

    /// Commits `count` saves on `store`, each inserting one Tag; returns their (seq, epoch) as the parts carry them.
    func commit(_ count: Int, on store: RootStore) async throws -> [FeedPosition] {
        var positions: [FeedPosition] = []
        for _ in 0..<count {
            let save = Tributary_V1_SaveChanges.with {
                $0.changes.batches = [.inserting("Tag", "label", UUID().uuidString)]
            }
            guard case .committed(let seq, let events, _, _) = try await store.saves.applySave(save, from: "w1") else {
                throw TimedOut(what: "a commit")
            }
            let part = try Tributary_V1_DidSave(serializedBytes: try #require(events.parts.first).body)
            let summary = try Tributary_V1_CommitSummary(serializedBytes: events.summary)
            #expect(part.epoch == events.epoch && summary.epoch == events.epoch && events.seq == seq)
            positions.append(FeedPosition(seq: seq, epoch: events.epoch))
        }
        return positions
    }

    /// The seq a history request after `position` is refused as rewritten from, or nil when it is answered.
    func rewrittenFrom(_ position: FeedPosition, in store: RootStore) async throws -> UInt64? {
        var query = FeedStore.HistoryQuery(after: position.seq)
        query.afterEpoch = position.epoch
        do {
            _ = try await store.feed.history(query)
            return nil
        } catch let error as StoreError where error.code == .feedRewritten {
            #expect(error.message.contains("rewritten from seq \(error.seq)"), "\(error.message)")
            #expect(ProtocolError(error).code == .feedRewritten && ProtocolError(error).seq == error.seq)
            return error.seq
        }
    }

    @Test(
        "each run stamps its commits with an epoch of its own, recorded with its first commit; history pages carry them"
    )
    func epochsPerRun() async throws {
        let path = directory.path("store.sqlite")
        var store = try RootStore.open(path: path, model: model)
        #expect(try await store.feed.lastPosition() == FeedPosition(seq: 0, epoch: 0))
        let first = try await commit(3, on: store)
        try store.close()
        store = try RootStore.open(path: path, model: model)
        // A run that commits nothing records no epoch.
        try store.close()
        store = try RootStore.open(path: path, model: model)
        let second = try await commit(2, on: store)
        defer { try? store.close() }

        #expect(first.allSatisfy { $0.epoch == first[0].epoch } && first[0].epoch != 0)
        #expect(second.allSatisfy { $0.epoch == second[0].epoch } && second[0].epoch != first[0].epoch)
        let rows = try await store.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT first_seq, epoch FROM tributary_epochs ORDER BY first_seq").map {
                FeedPosition(seq: UInt64($0["first_seq"] as Int64), epoch: UInt64(bitPattern: $0["epoch"] as Int64))
            }
        }
        #expect(rows == [first[0], second[0]])
        #expect(try await store.feed.lastPosition() == second[1])

        // A page from the first run's position crosses into the second run: each part with its own epoch, and the
        // page ends at the last commit's epoch.
        var query = FeedStore.HistoryQuery(after: first[1].seq)
        query.afterEpoch = first[1].epoch
        let page = try await store.feed.history(query)
        #expect(page.parts.map { FeedPosition(seq: $0.seq, epoch: $0.epoch) } == [first[2]] + second)
        #expect(page.throughSeq == 5 && page.throughEpoch == second[0].epoch)
        // A page that ends inside the first run carries its epoch; an empty one the epoch of its position.
        query.until = 3
        #expect(try await store.feed.history(query).throughEpoch == first[0].epoch)
        query = FeedStore.HistoryQuery(after: 5)
        #expect(try await store.feed.history(query).throughEpoch == second[0].epoch)
        for position in first + second { #expect(try await rewrittenFrom(position, in: store) == nil) }
    }

    @Test(
        "a store that lost its last commits (a copy taken before them) refuses positions past them, then the next run's"
    )
    func lostTail() async throws {
        let path = directory.path("store.sqlite")
        let copy = directory.path("copy.sqlite")
        let store = try RootStore.open(path: path, model: model)
        let seen = try await commit(3, on: store)
        _ = try await store.backup(to: copy)
        let lost = try await commit(2, on: store)
        try store.close()

        // The copy as the next run finds it: the same epoch, but commits 4 and 5 missing.
        let restored = try RootStore.open(path: copy, model: model)
        defer { try? restored.close() }
        #expect(try await rewrittenFrom(lost[1], in: restored) == 4)
        #expect(try await rewrittenFrom(lost[0], in: restored) == 4)
        #expect(try await rewrittenFrom(seen[2], in: restored) == nil)
        // A position without its epoch is checked only against the last commit.
        #expect(try await rewrittenFrom(FeedPosition(seq: 5), in: restored) == 4)
        #expect(try await rewrittenFrom(FeedPosition(seq: 3), in: restored) == nil)

        // The restored run commits 4 and 5 again, other commits under its own epoch: still told apart.
        let rewritten = try await commit(2, on: restored)
        #expect(rewritten.map(\.seq) == [4, 5] && rewritten[0].epoch != seen[0].epoch)
        #expect(try await rewrittenFrom(lost[1], in: restored) == 4)
        #expect(try await rewrittenFrom(lost[0], in: restored) == 4)
        #expect(try await rewrittenFrom(seen[2], in: restored) == nil)
        #expect(try await rewrittenFrom(rewritten[1], in: restored) == nil)
        // Without epochs the two histories look alike: the check needs the epoch.
        #expect(try await rewrittenFrom(FeedPosition(seq: 5), in: restored) == nil)

        // A durable position from the lost history is not stored; one the store holds is.
        do {
            _ = try await restored.pool.write { db in
                try restored.feed.updateSubscriber(name: "audit", position: lost[1], registerOnly: false, in: db)
            }
            Issue.record("a position of the lost history was stored")
        } catch let error as StoreError {
            #expect(error.code == .feedRewritten && error.seq == 4, "\(error)")
        }
        #expect(try await restored.feed.subscribers().isEmpty)
        let stored = try await restored.pool.write { db in
            try restored.feed.updateSubscriber(name: "audit", position: rewritten[1], registerOnly: false, in: db)
        }
        #expect(stored.position == 5)
    }

    @Test("a restore from a copy older than the subscriber's run (its epoch unknown to the store) is told too")
    func olderBackup() async throws {
        let path = directory.path("store.sqlite")
        let backup = directory.path("backup.sqlite")
        var store = try RootStore.open(path: path, model: model)
        let before = try await commit(3, on: store)
        _ = try await store.backup(to: backup)
        try store.close()
        store = try RootStore.open(path: path, model: model)
        let later = try await commit(3, on: store)
        try store.close()

        let restored = try RootStore.open(path: backup, model: model)
        defer { try? restored.close() }
        // Nothing committed since the restore: the store is a prefix of the subscriber's history, which parts at 4
        // (the store cannot tell how its runs relate to one it does not know: the seq named is at or before).
        for position in later {
            let from = try await rewrittenFrom(position, in: restored)
            #expect(from != nil && from! <= 4, "\(position): \(String(describing: from))")
        }
        #expect(try await rewrittenFrom(before[2], in: restored) == nil)
        _ = try await commit(4, on: restored)
        #expect(try await rewrittenFrom(later[2], in: restored) == 4)
        #expect(try await rewrittenFrom(later[0], in: restored) == 4)
        #expect(try await rewrittenFrom(before[1], in: restored) == nil)
    }

    @Test("a format-9 store upgrades: its commits belong to no epoch, and the next run's are checked")
    func upgradeFromFormat9() async throws {
        let path = directory.path("store.sqlite")
        var store = try RootStore.open(path: path, model: model)
        _ = try await commit(2, on: store)
        try store.close()
        // As far as epochs go, format 9 is this format without the epochs table, nor epochs in the history's parts.
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            for row in try Row.fetchAll(db, sql: "SELECT seq, record FROM tributary_history") {
                var record = try Tributary_V1_HistoryRecord(serializedBytes: row["record"] as Data)
                for index in record.parts.indices { record.parts[index].epoch = 0 }
                try db.execute(
                    sql: "UPDATE tributary_history SET record = ? WHERE seq = ?",
                    arguments: [try record.serializedData(), row["seq"] as Int64])
            }
        }
        try queue.close()
        try await EarlierFormat.rewind(path, to: 9)

        store = try RootStore.open(path: path, model: model)
        defer { try? store.close() }
        #expect(store.upgrade?.fromFormat == 9)
        var query = FeedStore.HistoryQuery(after: 0)
        #expect(try await store.feed.history(query).parts.allSatisfy { $0.epoch == 0 })
        let next = try await commit(1, on: store)
        query.afterEpoch = 0
        #expect(try await store.feed.history(query).throughEpoch == next[0].epoch)
        #expect(try await rewrittenFrom(FeedPosition(seq: 2), in: store) == nil)
        #expect(try await rewrittenFrom(next[0], in: store) == nil)
        #expect(try await rewrittenFrom(FeedPosition(seq: 3, epoch: 42), in: store) == 3)
    }
}
