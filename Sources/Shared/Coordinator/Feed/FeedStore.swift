import GRDB
import TributaryCore

/// The change history's store: the history of commits by sequence number (what the feed resumes from), its
/// pruning, snapshots of the objects at one sequence number, and durable subscribers' positions.
public struct FeedStore: Sendable {
    package let pool: DatabasePool
    let model: Model

    init(pool: DatabasePool, model: Model) {
        self.pool = pool
        self.model = model
    }

    /// The sequence number of the last commit, or 0.
    public func lastSequenceNumber() async throws -> UInt64 {
        try await pool.read { db in try Self.lastSequenceNumber(db) }
    }

    /// The last commit's seq: the history's last record, or the last pruned one when none is kept.
    static func lastSequenceNumber(_ db: Database) throws -> UInt64 {
        UInt64(try Int64.fetchOne(db.cachedStatement(sql: lastSequenceNumberSQL)) ?? 0)
    }

    static let lastSequenceNumberSQL = """
        SELECT max(ifnull((SELECT MAX(seq) FROM tributary_history), 0),
            ifnull((SELECT value FROM tributary_meta WHERE key = 'history_pruned_through'), 0))
        """
}
