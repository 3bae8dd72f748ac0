import Foundation
import TributaryCore

/// Objects the writer found or created by their uniqueness keys (`User` by `login`), kept across change sets so
/// that the next change set naming the same key does not look it up again: an import's change sets each name
/// thousands of users, most of them found by the change sets before, and each lookup is a search of the key's index.
///
/// An entry is trusted only while nothing could have changed what it says. Entries learned in the open transaction
/// are pending until it commits and dropped if it rolls back (or if a change set fails, which its savepoint or the
/// transaction undoes). An entity's entries are dropped when a change set updates it or inserts rows with more than
/// key columns (an upsert may rewrite a key); an object's entry is dropped when a row naming it is written without
/// a key learned (a null key, or a batch covering several constraints); all entries are dropped when a change set
/// deletes anything (delete rules reach other entities). Only the writer changes entity tables, so nothing else
/// can make an entry stale.
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

    /// An entry, and whether the open transaction learned it (it is dropped if that rolls back).
    private struct Stored {
        let entry: Entry
        var pending: Bool
    }

    /// The entries of one entity, committed and pending together (finding a key is one lookup: the import finds
    /// thousands per change set), and the key each object is known by (to drop it when the key may have changed).
    private struct Table {
        var entries: [Key: Stored] = [:]
        var keys: [UUID: Key] = [:]

        /// Records `entry` under `key` as pending, dropping the object's entry under another key and another
        /// object's entry under this key; the change in the number of entries.
        mutating func learn(_ key: Key, _ entry: Entry) -> Int {
            var change = 0
            if let old = keys[entry.id], old != key, remove(old) { change -= 1 }
            if let previous = entries[key], previous.entry.id != entry.id, remove(key) { change -= 1 }
            if entries.updateValue(Stored(entry: entry, pending: true), forKey: key) == nil { change += 1 }
            keys[entry.id] = key
            return change
        }

        /// Drops a key's entry and its object's key; whether there was one.
        mutating func remove(_ key: Key) -> Bool {
            guard let stored = entries.removeValue(forKey: key) else { return false }
            if keys[stored.entry.id] == key { keys[stored.entry.id] = nil }
            return true
        }
    }

    private var tables: [String: Table] = [:]
    /// Entries kept, all entities together.
    private var count = 0
    /// The (entity, key) pairs learned in the open transaction.
    private var pending: [(entity: String, key: Key)] = []
    /// Entries kept at most; past it they are all dropped and learned again (~120 bytes each).
    let capacity: Int

    init(capacity: Int = 131_072) {
        self.capacity = capacity
    }

    func find(_ key: Key, of entity: String) -> Entry? {
        tables[entity]?.entries[key]?.entry
    }

    /// Records where `key`'s object is, learned in the open transaction. An entry of the same object under another
    /// key (an upsert by id rewrote its key), or of another object under this key, is dropped at once.
    mutating func learn(_ key: Key, of entity: String, _ entry: Entry) {
        count += modify(entity) { $0.learn(key, entry) }
        pending.append((entity, key))
    }

    /// Drops what is known of one object: a write that did not learn its key (the key is null, or the batch covers
    /// several uniqueness constraints) may have changed it.
    mutating func forget(id: UUID, of entity: String) {
        guard let key = tables[entity]?.keys[id] else { return }
        if modify(entity, { $0.remove(key) }) { count -= 1 }
    }

    /// Drops what is known of `entity`.
    mutating func forget(_ entity: String) {
        if let table = tables.removeValue(forKey: entity) { count -= table.entries.count }
    }

    /// Drops everything.
    mutating func forgetAll() {
        tables = [:]
        count = 0
        pending = []
    }

    /// The open transaction committed: what it learned holds from now on.
    mutating func transactionCommitted() {
        for (entity, key) in pending { tables[entity]?.entries[key]?.pending = false }
        pending = []
        if count > capacity { forgetAll() }
    }

    /// The open transaction (or the change set being applied) was undone: what it learned is gone.
    mutating func transactionRolledBack() {
        for (entity, key) in pending where tables[entity]?.entries[key]?.pending == true {
            if modify(entity, { $0.remove(key) }) { count -= 1 }
        }
        pending = []
    }

    /// Runs `body` on `entity`'s table in place (made when missing).
    private mutating func modify<T>(_ entity: String, _ body: (inout Table) -> T) -> T {
        body(&tables[entity, default: Table()])
    }
}
