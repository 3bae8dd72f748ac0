import GRDB

/// A primary's recording of its transactions for standbys (``ReplicationCapture``), switched on the writer's
/// connection between transactions.
extension RootStore {
    /// Records every write transaction from now on, each record going to `deliver` once committed (on the writer's
    /// thread, in order), under `epoch` until ``ReplicationCapture/epoch`` changes. Returns the capture.
    func startRecording(epoch: Int64, deliver: @escaping @Sendable (ReplicationRecord) -> Void)
        async throws -> ReplicationCapture
    {
        try await pool.writeWithoutTransaction { db in
            let capture = ReplicationCapture(tail: try ReplicationTail.read(db), epoch: epoch, deliver: deliver)
            self.writer.statements.capture = capture
            return capture
        }
    }

    /// The store promises to follow leader epoch `epoch` from now on, before its writer exists (a new primary's, as
    /// opening the store writes): records of older epochs are refused from then on.
    func promise(epoch: Int64) async throws {
        _ = try await pool.write { db in try ReplicaApply.promise(epoch, in: db) }
    }

    /// A store that holds no record yet takes a history of its own, before it records one: its replication row's
    /// hash at position 0 becomes a random number, which its first record is chained to. A standby's store that holds
    /// no record either (hash 0: a new one, or one wiped) then differs from it and takes a snapshot, rather than
    /// records that could not bring on the rows this store held before it recorded any. Returns the store's tail.
    func beginHistory() async throws -> ReplicationTail {
        try await pool.write { db in
            var tail = try ReplicationTail.read(db)
            guard tail == .empty else { return tail }
            tail.hash = UInt64.random(in: 1...UInt64.max)
            try db.execute(
                sql: "UPDATE tributary_replication SET hash = ? WHERE id = 1", arguments: [Int64(bitPattern: tail.hash)]
            )
            return tail
        }
    }

    /// Stops recording.
    func stopRecording() async {
        try? await pool.writeWithoutTransaction { _ in self.writer.statements.capture = nil }
    }

    /// The store's replication row: its last record.
    func replicationTail() async throws -> ReplicationTail {
        try await pool.read { db in try ReplicationTail.read(db) }
    }

    /// What a standby named `name` says to its primary: the store's last record, the epoch it promised, its schema.
    func replicationHello(name: String) async throws -> ReplicationMessage.Hello {
        try await pool.read { db in
            ReplicationMessage.Hello(
                name: name, tail: try ReplicationTail.read(db), promised: try ReplicaApply.promised(in: db),
                schema: try SchemaFingerprint.read(db))
        }
    }
}
