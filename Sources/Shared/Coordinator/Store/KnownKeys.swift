import Foundation
import TributaryCore

/// Objects the writer found or created by their uniqueness keys (`User` by `login`), kept across change sets so
/// that the next change set naming the same key does not look it up again: on the import benchmark each job's
/// change set names ~2,000 users, and their index lookups were 12% of the writer's time.
///
/// An entry is trusted only while nothing could have changed what it says. Entries learned in the open transaction
/// are pending until it commits and dropped if it rolls back (or if a change set fails, which its savepoint or the
/// transaction undoes). An entity's entries are dropped when a change set updates it or inserts rows with more than
/// key columns (an upsert may rewrite a key); an object's entry is dropped when a row naming it is written without
/// a key learned (a null key, or a batch covering several constraints); all entries are dropped when a change set
/// deletes anything (delete rules reach other entities). Only the writer changes entity tables, so nothing else can make an entry stale.
struct KnownKeys {
    /// A uniqueness key's values as the store compares them, one (the common case) or several, and which of the
    /// entity's constraints they are of (a login and an email of the same text are two keys).
    enum Key: Hashable {
        case one(constraint: Int, UniqueKeyValue)
        case many(constraint: Int, [UniqueKeyValue])
    }

    /// Where the object with a key is.
    struct Entry {
        let rowKey: Int64
        let id: UUID
    }

    /// Entries of one entity, and the key of each id (to drop a key an upsert by id rewrote).
    private struct Table {
        var entries: [Key: Entry] = [:]
        var keys: [UUID: Key] = [:]

        mutating func add(_ key: Key, _ entry: Entry) {
            if let old = keys[entry.id], old != key { entries[old] = nil }
            if let previous = entries[key], previous.id != entry.id { keys[previous.id] = nil }
            entries[key] = entry
            keys[entry.id] = key
        }

        /// Drops `id`'s entry; whether there was one.
        mutating func remove(_ id: UUID) -> Bool {
            guard let key = keys.removeValue(forKey: id) else { return false }
            entries[key] = nil
            return true
        }
    }

    /// Entries of committed transactions, by entity.
    private var committed: [String: Table] = [:]
    /// Entries learned in the open transaction, by entity.
    private var pending: [String: Table] = [:]
    private var committedCount = 0
    /// Committed entries kept at most; past it they are all dropped and learned again (~80 bytes each).
    let capacity: Int

    init(capacity: Int = 131_072) {
        self.capacity = capacity
    }

    func find(_ key: Key, of entity: String) -> Entry? {
        pending[entity]?.entries[key] ?? committed[entity]?.entries[key]
    }

    /// Records where `key`'s object is, learned in the open transaction. A committed entry of the same object
    /// under another key (an upsert by id rewrote its key) is dropped at once.
    mutating func learn(_ key: Key, of entity: String, _ entry: Entry) {
        if let old = committed[entity]?.keys[entry.id], old != key, committed[entity]?.remove(entry.id) == true {
            committedCount -= 1
        }
        pending[entity, default: Table()].add(key, entry)
    }

    /// Drops what is known of one object: a write that did not learn its key (the key is null, or the batch covers
    /// several uniqueness constraints) may have changed it.
    mutating func forget(id: UUID, of entity: String) {
        if committed[entity]?.remove(id) == true { committedCount -= 1 }
        _ = pending[entity]?.remove(id)
    }

    /// Drops what is known of `entity`.
    mutating func forget(_ entity: String) {
        if let table = committed.removeValue(forKey: entity) { committedCount -= table.entries.count }
        pending[entity] = nil
    }

    /// Drops everything.
    mutating func forgetAll() {
        committed = [:]
        pending = [:]
        committedCount = 0
    }

    /// The open transaction committed: what it learned holds from now on.
    mutating func transactionCommitted() {
        for (entity, table) in pending {
            for (key, entry) in table.entries {
                if committed[entity]?.entries[key] == nil { committedCount += 1 }
                committed[entity, default: Table()].add(key, entry)
            }
        }
        pending = [:]
        if committedCount > capacity { forgetAll() }
    }

    /// The open transaction (or the change set being applied) was undone: what it learned is gone.
    mutating func transactionRolledBack() {
        pending = [:]
    }
}
