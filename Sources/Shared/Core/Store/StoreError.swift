/// A failure of the store: SQLite refused a statement, or a change set broke the model's rules.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure, mapped to a wire ``/TributaryProtocol/Tributary_V1_ErrorCode`` when answering a peer.
    public enum Code: String, Sendable {
        /// SQLite reported an error (I/O, corruption, a bug in generated SQL).
        case sqlite
        /// A change set names an entity the model does not have.
        case unknownEntity
        /// A change set names an attribute or relationship the entity does not have.
        case unknownAttribute
        /// A column's values do not match the attribute's type or the row count.
        case wrongType
        /// The change set breaks a constraint: a missing required value, an update of a missing object.
        case constraint
        /// The store was created by another program or a newer Tributary.
        case incompatibleStore
        /// Another process holds the store's writer lock.
        case locked
        /// History after the requested position was pruned.
        case historyPruned
        /// No durable subscriber has that name.
        case unknownSubscriber
        /// A request names a position or value the store cannot have (a sequence number beyond the last commit).
        case invalidRequest
        /// A fetch's predicate or sort does not fit its entity.
        case invalidPredicate
        /// A change set under the error merge policy changed objects changed in the store since it read them.
        case mergeConflict
        /// The store cannot be written now (its disk is full, its file or filesystem is read-only): the write was
        /// rolled back whole, and may be tried again once the store can be written.
        case unwritable
        /// The history differs from the one a subscriber followed, from ``StoreError/seq`` on.
        case feedRewritten
    }

    /// What kind of failure it is.
    public let code: Code
    /// A sentence naming the problem.
    public let message: String
    /// The SQL that failed, when SQLite reported the error.
    public let sql: String?
    /// SQLite's result code, when SQLite reported the error.
    public let sqliteCode: Int32?
    /// The conflicts, for ``Code/mergeConflict``.
    public let conflicts: [MergeConflict]
    /// For ``Code/feedRewritten``: the first sequence number whose commit may differ from the one the subscriber
    /// saw.
    public let seq: UInt64

    /// A failure of `code` described by `message`, with SQLite's statement and code when it reported it.
    public init(
        _ code: Code, _ message: String, sql: String? = nil, sqliteCode: Int32? = nil, conflicts: [MergeConflict] = [],
        seq: UInt64 = 0
    ) {
        self.seq = seq
        self.code = code
        self.message = message
        self.sql = sql
        self.sqliteCode = sqliteCode
        self.conflicts = conflicts
    }

    public var description: String {
        var text = message
        if let sqliteCode { text += " (SQLite code \(sqliteCode))" }
        if let sql { text += " in `\(sql)`" }
        return text
    }
}
