import GRDB
import TributaryCore

/// The store's epochs: each coordinator run that commits draws a random epoch id, written in `tributary_epochs` with
/// the sequence number of its first commit (in that commit's transaction), and stamped on every didSave part and
/// summary it publishes. A subscriber that resumes hands back its last commit's (seq, epoch); a store whose history
/// differs from the one it followed — a power loss took back commits it had seen, the store was restored from a
/// replica or a backup — no longer has that commit in that epoch, and the resume is refused with
/// ``StoreError/Code/feedRewritten`` naming the first seq that may differ, rather than read on over a history
/// that reuses its sequence numbers for other commits.
///
/// Why per run: such a store always comes back through a coordinator start (a restore or a power loss restarts it),
/// and the run after it commits under a new epoch from the first sequence number it hands out again.
extension FeedStore {
    /// The epoch of commit `seq`: that of the latest run whose first commit is at or before it; 0 for seq 0 and
    /// for commits older than the store's first epoch (stores of format 9 and before).
    static func epoch(at seq: UInt64, in db: Database) throws -> UInt64 {
        guard seq > 0 else { return 0 }
        let epoch = try Int64.fetchOne(
            db.cachedStatement(
                sql: "SELECT epoch FROM tributary_epochs WHERE first_seq <= ? ORDER BY first_seq DESC LIMIT 1"),
            arguments: [Int64(clamping: seq)])
        return epoch.map { UInt64(bitPattern: $0) } ?? 0
    }

    /// The store's last commit and its epoch (what the feed's heartbeat carries before this run commits).
    public func lastPosition() async throws -> FeedPosition {
        try await pool.read { db in try Self.lastPosition(db) }
    }

    static func lastPosition(_ db: Database) throws -> FeedPosition {
        let seq = try lastSequenceNumber(db)
        return FeedPosition(seq: seq, epoch: try epoch(at: seq, in: db))
    }

    /// Throws ``StoreError/Code/feedRewritten`` unless a subscriber whose last commit was `seq` in `epoch` (0: not
    /// known) followed this store's history up to it.
    static func checkResume(after seq: UInt64, epoch: UInt64, last: UInt64, in db: Database) throws {
        guard let from = try rewrittenFrom(after: seq, epoch: epoch, last: last, in: db) else { return }
        let position = epoch == 0 ? "seq \(seq)" : "seq \(seq) of epoch \(FeedPosition.hex(epoch))"
        throw StoreError(
            .feedRewritten,
            "the feed was rewritten from seq \(from): the store's history is not the one this subscriber followed up "
                + "to \(position) (the store's last commit is \(last); after a power loss, or a restore from a "
                + "replica or a backup); take a snapshot and follow the feed after it",
            seq: from)
    }

    /// The first seq whose commit may differ from the subscriber's, or nil when its history is the store's.
    ///
    /// When the store knows the subscriber's epoch, the answer is exact: the first commit of the next run, or the
    /// one after the store's last commit when the store lacks commits the subscriber saw. When it does not (every
    /// commit of that run was lost, or the store is older than that run), the histories part at the start of the
    /// store's latest run at or before the subscriber's position, or before: that seq is named (exact unless the
    /// store was restarted more than once before the subscriber came back).
    static func rewrittenFrom(after seq: UInt64, epoch: UInt64, last: UInt64, in db: Database) throws -> UInt64? {
        guard epoch != 0 else { return seq > last ? last + 1 : nil }
        let signed = Int64(bitPattern: epoch)
        if let first = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT first_seq FROM tributary_epochs WHERE epoch = ?"), arguments: [signed])
        {
            guard seq >= UInt64(first) else { return seq }
            if let next = try Int64.fetchOne(
                db.cachedStatement(
                    sql: "SELECT first_seq FROM tributary_epochs WHERE first_seq > ? ORDER BY first_seq LIMIT 1"),
                arguments: [first]), UInt64(next) <= seq
            {
                return UInt64(next)
            }
            return seq > last ? last + 1 : nil
        }
        let latest = try Int64.fetchOne(
            db.cachedStatement(
                sql: "SELECT first_seq FROM tributary_epochs WHERE first_seq <= ? ORDER BY first_seq DESC LIMIT 1"),
            arguments: [Int64(clamping: seq)])
        return min(latest.map { UInt64($0) } ?? seq, last + 1)
    }
}
