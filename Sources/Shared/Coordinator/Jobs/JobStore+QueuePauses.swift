import Foundation
import GRDB
import TributaryCore

/// Paused queues, kept in `tributary_paused_queues`: a claim leaves their jobs where they are until the queue is
/// resumed (Oban's `pause_queue`, Sidekiq Pro's `Queue#pause!`). A pause is the store's, so it holds across restarts
/// and for every worker.
extension JobStore {
    /// The paused queues, read in the writer's open transaction (the group commit's claims leave them out) or on a
    /// reader (a status lists them).
    static func pausedQueues(in db: Database) throws -> Set<String> {
        try String.fetchSet(db.cachedStatement(sql: "SELECT name FROM tributary_paused_queues"))
    }

    /// Most queues paused at once: every claiming group commit and every status reads them all.
    static let maximumPausedQueues = 1_000

    /// Pauses or resumes `queue` (a queue need not have jobs to be paused: its jobs wait from their push on).
    /// - Returns: whether that changed anything (false: it was paused, or not paused, already).
    /// - Throws: ``StoreError`` when ``maximumPausedQueues`` are paused already.
    func setQueue(_ queue: String, paused: Bool, in db: Database) throws -> Bool {
        if paused {
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_paused_queues") ?? 0
            if count >= Self.maximumPausedQueues, try !Self.isPaused(queue, in: db) {
                throw StoreError(
                    .constraint,
                    "\(Self.maximumPausedQueues) queues are paused already, the most there may be: resume one first")
            }
            try db.execute(
                sql: "INSERT OR IGNORE INTO tributary_paused_queues (name, paused_at) VALUES (?, ?)",
                arguments: [queue, Date().timeIntervalSince1970])
        } else {
            try db.execute(sql: "DELETE FROM tributary_paused_queues WHERE name = ?", arguments: [queue])
        }
        return db.changesCount > 0
    }

    /// One queue as a status shows it: its depth and latency, and whether it is paused.
    public func queue(named name: String, now: Date = Date()) async throws -> QueueDepth {
        try await pool.read { db in try Self.queueDepth(named: name, db, now: now.timeIntervalSince1970) }
    }

    /// Whether the queue `name` is paused.
    public func isPaused(queue name: String) async throws -> Bool {
        try await pool.read { db in try Self.isPaused(name, in: db) }
    }
}
