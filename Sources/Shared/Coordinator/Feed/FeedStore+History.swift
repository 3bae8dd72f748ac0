import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// The change history that feed subscribers catch up from: pages of stored didSave parts, durable subscribers'
/// positions, and pruning by age and count that never passes a durable subscriber's position.
extension FeedStore {
    /// One page of history to read.
    public struct HistoryQuery: Sendable {
        /// Commits after this sequence number ...
        public var after: UInt64
        /// ... which the subscriber saw in this epoch (0: not known): a history that does not hold it is refused as rewritten.
        public var afterEpoch: UInt64 = 0
        /// ... up to this one; 0 = the last commit.
        public var until: UInt64 = 0
        /// The entities and objects the history is read for; everything by default.
        public var filter = FeedFilter()
        /// At most this many commits per page.
        public var maxCommits = 1_000
        /// A page ends once its stored records reach this many bytes (after at least one commit).
        public var maxBytes = 4 << 20

        /// A query for the commits after `after`, with the defaults above.
        public init(after: UInt64) {
            self.after = after
        }
    }

    /// A page of history, read on a reader connection (it never waits on the writer).
    /// - Throws: ``/TributaryCore/StoreError`` `feedRewritten` when the store's commit `query.after` is not the one the
    ///   subscriber saw; `historyPruned` when commits after it are no longer kept.
    public func history(_ query: HistoryQuery) async throws -> Tributary_V1_HistoryReply {
        try await pool.read { db in try Self.history(query, in: db) }
    }

    /// A page of history as ``history(_:)`` reads it, for the handlers.
    package func historyPage(_ query: HistoryQuery) async throws -> HistoryPage {
        HistoryPage(message: try await history(query))
    }

    /// A page of history: the stored didSave records as they are kept, which the wire carries as they are.
    package struct HistoryPage: Sendable {
        package let message: Tributary_V1_HistoryReply
    }

    private static func history(_ query: HistoryQuery, in db: Database) throws -> Tributary_V1_HistoryReply {
        let last = try lastSequenceNumber(db)
        try checkResume(after: query.after, epoch: query.afterEpoch, last: last, in: db)
        let pruned = try prunedThrough(db)
        if query.after < pruned {
            throw StoreError(
                .historyPruned,
                "the history after seq \(query.after) was pruned (the oldest commit kept is \(pruned + 1)): "
                    + "take a snapshot and follow the feed after its seq")
        }
        let until = query.until == 0 ? last : min(query.until, last)
        var reply = Tributary_V1_HistoryReply()
        reply.lastSeq = last
        reply.throughSeq = max(query.after, until)
        guard query.after < until else {
            reply.throughEpoch = try epoch(at: reply.throughSeq, in: db)
            return reply
        }
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: "SELECT seq, record FROM tributary_history WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?"),
            arguments: [Int64(query.after), Int64(until), query.maxCommits])
        var bytes = 0
        var commits = 0
        while let row = try rows.next() {
            let seq = UInt64(row["seq"] as Int64)
            let record: Data = row["record"]
            let parts = try Tributary_V1_HistoryRecord(serializedBytes: record).parts
            reply.parts += parts.filter(query.filter.matches)
            bytes += record.count
            commits += 1
            if bytes >= query.maxBytes || commits == query.maxCommits {
                reply.throughSeq = seq
                break
            }
        }
        reply.throughEpoch = try epoch(at: reply.throughSeq, in: db)
        return reply
    }

    /// The highest sequence number pruned from history, or 0.
    static func prunedThrough(_ db: Database) throws -> UInt64 {
        UInt64(
            try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT value FROM tributary_meta WHERE key = 'history_pruned_through'")) ?? 0)
    }

    /// The oldest sequence number history still holds (1 + the last pruned one).
    public func oldestKeptSequenceNumber() async throws -> UInt64 {
        try await pool.read { db in try Self.prunedThrough(db) + 1 }
    }

    /// Deletes the oldest history: the commits older than `cutoff` or beyond the newest `keep`, but none after
    /// the lowest position of a durable subscriber; at most `limit` commits per call, so the writer is not held.
    /// - Returns: how many commits were deleted (`limit` means more may be due).
    @discardableResult
    func pruneHistory(before cutoff: Date?, keepingNewest keep: Int?, limit: Int = 2_000, in db: Database) throws -> Int
    {
        guard let first = try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM tributary_history") else { return 0 }
        var through: Int64 = 0
        if let keep {
            through = max(through, Int64(try Self.lastSequenceNumber(db)) - Int64(keep))
        }
        if let cutoff,
            let old = try Int64.fetchOne(
                db,
                sql: """
                    SELECT MAX(seq) FROM (SELECT seq, committed_at FROM tributary_history ORDER BY seq LIMIT ?)
                    WHERE committed_at < ?
                    """, arguments: [limit, cutoff.timeIntervalSince1970])
        {
            through = max(through, old)
        }
        if let durable = try Int64.fetchOne(db, sql: "SELECT MIN(position) FROM tributary_subscribers") {
            through = min(through, durable)
        }
        through = min(through, first + Int64(limit) - 1)
        guard through >= first else { return 0 }
        try db.execute(sql: "DELETE FROM tributary_history WHERE seq <= ?", arguments: [through])
        let deleted = db.changesCount
        try db.execute(
            sql: "INSERT OR REPLACE INTO tributary_meta (key, value) VALUES ('history_pruned_through', ?)",
            arguments: [through])
        return deleted
    }

    /// Opens a consistent read of the current objects of `entities` (every entity when empty).
    /// - Throws: ``/TributaryCore/StoreError`` `unknownEntity` naming an entity the model does not have.
    public func makeSnapshot(entities: Set<String>) throws -> StoreSnapshot {
        try StoreSnapshot(pool: pool, model: model, entities: entities)
    }

    // MARK: - Durable subscribers

    /// Registers a durable subscriber at `position`, or moves it there; with `registerOnly`, a registered one
    /// keeps its position.
    /// - Throws: ``StoreError`` `feedRewritten` when the store's history does not hold `position` (its epoch
    ///   differs, or it is past the last commit): a position from a rewritten history is never stored;
    ///   `historyPruned` when `position` is older than the history kept.
    func updateSubscriber(name: String, position given: FeedPosition, registerOnly: Bool, in db: Database) throws
        -> DurableSubscriber
    {
        let now = Date().timeIntervalSince1970
        if registerOnly, let existing = try Self.subscriber(name, in: db) { return existing }
        try Self.checkResume(after: given.seq, epoch: given.epoch, last: try Self.lastSequenceNumber(db), in: db)
        let position = given.seq
        let pruned = try Self.prunedThrough(db)
        guard position >= pruned else {
            throw StoreError(
                .historyPruned,
                "cannot place subscriber '\(name)' at seq \(position): history up to \(pruned) was pruned")
        }
        try db.execute(
            sql: "INSERT OR REPLACE INTO tributary_subscribers (name, position, updated_at) VALUES (?, ?, ?)",
            arguments: [name, Int64(position), now])
        return DurableSubscriber(name: name, position: position, updatedAt: Date(timeIntervalSince1970: now))
    }

    /// The durable subscribers, by name.
    public func subscribers() async throws -> [DurableSubscriber] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM tributary_subscribers ORDER BY name").map(Self.subscriberInfo)
        }
    }

    /// Forgets a durable subscriber.
    /// - Throws: ``StoreError`` `unknownSubscriber` when there is none of that name.
    /// - Returns: the subscriber as it was.
    func deleteSubscriber(name: String, in db: Database) throws -> DurableSubscriber {
        guard let subscriber = try Self.subscriber(name, in: db) else {
            throw StoreError(.unknownSubscriber, "no durable subscriber is named '\(name)'")
        }
        try db.execute(sql: "DELETE FROM tributary_subscribers WHERE name = ?", arguments: [name])
        return subscriber
    }

    private static func subscriber(_ name: String, in db: Database) throws -> DurableSubscriber? {
        try Row.fetchOne(db, sql: "SELECT * FROM tributary_subscribers WHERE name = ?", arguments: [name])
            .map(subscriberInfo)
    }

    private static func subscriberInfo(_ row: Row) -> DurableSubscriber {
        DurableSubscriber(
            name: row["name"], position: UInt64(max(0, row["position"] as Int64)),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]))
    }
}
