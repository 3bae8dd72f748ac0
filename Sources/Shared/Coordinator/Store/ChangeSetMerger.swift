import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// Applies change sets to the store, inside a write transaction the caller opened (the root writer's merge).
///
/// Inserts run first, destinations before the entities that point to them, so that a duplicate insert merged
/// into an existing object by a uniqueness constraint re-points every relationship in the same change set.
/// Then updates, then deletes (which nullify the relationships that pointed to the deleted objects).
/// Statements are prepared once per distinct SQL and reused; values are bound straight from the wire arrays.
final class ChangeSetMerger {
    private let model: Model
    private let insertionOrder: [String: Int]
    private var statements: [String: SQLiteStatement] = [:]
    /// Statements of to-many relationships, by entity and relationship (they are also in `statements`).
    private var joinStatements: [String: [String: (clear: SQLiteStatement, add: SQLiteStatement)]] = [:]
    private var deletePlans: [String: DeletePlan] = [:]
    /// Upsert SQL by entity name and column names (see ``cachedUpsertSQL(_:)``).
    private var upsertSQLs: [[String]: String] = [:]
    /// The version the change set being applied gives every object it writes: its commit's sequence number.
    var version: Int64 = 0
    /// How the change set being applied resolves conflicts.
    var policy = MergePolicy.error
    /// The change set's rows in conflict: by batch position, row → the stored version (0: deleted in the store).
    var conflicts: [Int: [Int: UInt64]] = [:]
    /// Row keys known while one change set is applied, by entity and id (see ChangeSetMerger+RowKeys.swift).
    var rowKeys = RowKeyTable()
    /// The statement finding an object's row key, by entity.
    var rowKeyStatements: [String: SQLiteStatement] = [:]
    /// References written before their destination was (see ``PendingReference``), set after the inserts.
    var pendingReferences: [PendingReference] = []
    /// Objects found or created by their uniqueness keys in earlier change sets (see ``KnownKeys``).
    var knownKeys = KnownKeys()
    /// Join rows inserted and not written yet, one buffer per join table (see ``JoinRows``).
    private var joinBuffers: [JoinRows] = []
    /// Each join table's buffer in `joinBuffers`, by entity and relationship.
    private var joinBufferIndex: [String: [String: Int]] = [:]
    /// When set, the join rows of change sets that only insert wait in their buffers across change sets until
    /// ``writeGatheredJoinRows(in:)``; otherwise each change set writes its own at its end. Either way they are
    /// written before anything reads or clears a join table (a change set with updates or deletes, a to-many
    /// relationship replaced).
    var defersJoinRows = false

    /// The SQL of deleting an object of one entity, built once: the row, the references to clear, and a query per
    /// relationship whose delete rule is not nullify.
    private struct DeletePlan {
        let deleteRow: String
        let clearReferences: [String]
        let ruled: [(relationship: Relationship, destination: Entity, sql: String)]
    }

    /// The most statements kept prepared; past it the cache starts again.
    private let statementCacheLimit: Int

    /// Where its statements note a failure that means the store cannot be written (the writer's).
    var transactionFault: TransactionFault?

    init(model: Model, statementCacheLimit: Int = 256) {
        self.model = model
        self.insertionOrder = Self.insertionOrder(of: model)
        self.statementCacheLimit = max(1, statementCacheLimit)
    }

    /// Finalizes the cached statements; call before the connection closes.
    func finalizeStatements() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        joinStatements.removeAll()
        rowKeyStatements.removeAll()
    }

    /// Applies `changeSet` in `db`'s open transaction, giving each object it writes `version`.
    ///
    /// Rows of updates and deletes that carry the version their context read are checked first: a row whose object
    /// has another version now is a conflict, resolved by the change set's merge policy (see ``MergePolicy``).
    /// - Throws: ``StoreError`` naming the entity, attribute or row at fault, or `mergeConflict` listing the
    ///   conflicts under the error policy; the caller rolls back.
    func apply(_ changeSet: Tributary_V1_ChangeSet, version: UInt64, in db: Database) throws -> MergeResult {
        guard let connection = db.sqliteConnection else {
            throw StoreError(.sqlite, "the store connection is closed")
        }
        self.version = Int64(clamping: version)
        policy = try MergePolicy(wire: changeSet.mergePolicy)
        var batches: [(position: Int, reader: EntityBatchReader)] = []
        for (position, batch) in changeSet.batches.enumerated() {
            batches.append((position, try EntityBatchReader(batch, model: model)))
        }
        let readers = batches.map(\.reader)
        forgetKeys(changedBy: readers)
        do {
            let result = try apply(batches, connection: connection, in: db)
            // Again after: its updates, deletes and upserts may have changed keys its inserts just learned.
            forgetKeys(changedBy: readers)
            return result
        } catch {
            transactionRolledBack()
            throw error
        }
    }

    /// The transaction (or savepoint) the merger wrote in was rolled back: what it learned and the join rows it
    /// gathered are gone.
    func transactionRolledBack() {
        knownKeys.transactionRolledBack()
        for index in joinBuffers.indices { joinBuffers[index].removeAll() }
    }

    /// Writes the join rows gathered so far (see ``defersJoinRows``).
    func writeGatheredJoinRows(in db: Database) throws {
        guard let connection = db.sqliteConnection else {
            throw StoreError(.sqlite, "the store connection is closed")
        }
        try writeGatheredJoinRows(connection: connection)
    }

    private func writeGatheredJoinRows(connection: OpaquePointer) throws {
        for index in joinBuffers.indices {
            try writeJoinRows(&joinBuffers[index], connection: connection)
        }
    }

    /// The index in `joinBuffers` of a to-many relationship's buffer, made on first use.
    private func joinBuffer(_ entity: String, _ relationship: String) -> Int {
        if let index = joinBufferIndex[entity]?[relationship] { return index }
        joinBuffers.append(JoinRows(entity: entity, relationship: relationship))
        joinBufferIndex[entity, default: [:]][relationship] = joinBuffers.count - 1
        return joinBuffers.count - 1
    }

    /// Drops the known keys a change set's batches may change (see ``KnownKeys``).
    private func forgetKeys(changedBy batches: [EntityBatchReader]) {
        for batch in batches {
            switch batch.operation {
            case .delete: knownKeys.forgetAll()
            case .update: knownKeys.forget(batch.entity.name)
            case .insert: if batch.hasNonKeyColumns { knownKeys.forget(batch.entity.name) }
            }
        }
    }

    private func apply(
        _ batches: [(position: Int, reader: EntityBatchReader)], connection: OpaquePointer, in db: Database
    ) throws -> MergeResult {
        var batches = batches
        // Only a change set that just inserts leaves its join rows for later: any other reads the store (conflicts,
        // delete rules, the objects it resolved), so the rows gathered go in before it and its own at its end.
        let onlyInserts = batches.allSatisfy { $0.reader.operation == .insert }
        if !onlyInserts { try writeGatheredJoinRows(connection: connection) }
        conflicts = try findConflicts(batches, connection: connection)
        // Row keys are known for this change set only: one that fails is rolled back, and its keys may be reused.
        defer {
            conflicts = [:]
            rowKeys.removeAll()
            pendingReferences = []
        }
        if !conflicts.isEmpty && policy == .error {
            let described = try describeConflicts(batches, in: db)
            throw StoreError(
                .mergeConflict, MergeConflictError(conflicts: described).description, conflicts: described)
        }
        // Sorted by operation, then destinations first, then wire order (Swift's sort is not stable).
        batches.sort { lhs, rhs in
            let left = (lhs.reader.operation.rank, insertionOrder[lhs.reader.entity.name, default: 0], lhs.position)
            let right = (rhs.reader.operation.rank, insertionOrder[rhs.reader.entity.name, default: 0], rhs.position)
            return left < right
        }
        var result = MergeResult()
        var referencesSet = false
        for (position, batch) in batches {
            // Updates and deletes read and clear join tables: the rows this change set's inserts gathered go first.
            if batch.operation != .insert { try writeGatheredJoinRows(connection: connection) }
            if batch.operation == .delete && !referencesSet {
                try setPendingReferences(result: result, connection: connection)
                referencesSet = true
            }
            switch batch.operation {
            case .insert: try insert(batch, position: position, connection: connection, result: &result)
            case .update: try update(batch, position: position, connection: connection, result: &result)
            case .delete: try delete(batch, position: position, connection: connection, result: &result)
            }
        }
        if !referencesSet { try setPendingReferences(result: result, connection: connection) }
        if !defersJoinRows || !onlyInserts { try writeGatheredJoinRows(connection: connection) }
        return result
    }

    // MARK: - Inserts

    private func insert(
        _ batch: EntityBatchReader, position: Int, connection: OpaquePointer, result: inout MergeResult
    ) throws {
        let entity = batch.entity
        let lookup = try keyLookup(batch, connection: connection)
        // A find-or-create batch (one constraint's columns, nothing else) may lack required attributes: it refers
        // to objects the store has (each row that finds none is refused below). Any other insert must carry them.
        let missing = entity.attributes.first { attribute in
            !attribute.isOptional && !batch.scalarColumns.contains { $0.name == attribute.name }
        }
        if let missing, lookup == nil {
            throw StoreError(.constraint, "insert into '\(entity.name)' lacks required attribute '\(missing.name)'")
        }
        let statement = try statement(connection, cachedUpsertSQL(batch))
        let toMany = batch.toManyColumns
        // Join rows gathered per to-many column, written many per statement (see ``JoinRows``).
        let buffers = toMany.map { joinBuffer(entity.name, $0.name) }
        // What the batch adds to the result, gathered here and handed over once at its end, rather than an access
        // to the result's dictionaries and a 16-byte append for every row: an import's batches of users are all
        // found and remapped.
        var changes = BatchChanges()
        defer { changes.hand(to: &result, entity: entity.name, position: position) }
        for row in 0..<batch.rows {
            let proposed = batch.id(row)
            // Keys found or created are remembered for later change sets.
            let uniqueKey = lookup.flatMap { Self.key(of: row, in: $0.columns, constraint: $0.constraint) }
            let existing: UUID?
            if let uniqueKey, let known = knownKeys.find(uniqueKey, of: entity.name) {
                rowKeys[entity.name, known.id] = known.rowKey
                existing = known.id
            } else {
                existing = try lookUp(row, with: lookup, entity: entity.name, result: result)
                if let uniqueKey, let existing, let rowKey = rowKeys[entity.name, existing] {
                    knownKeys.learn(uniqueKey, of: entity.name, KnownKeys.Entry(rowKey: rowKey, id: existing))
                }
            }
            if let existing, existing != proposed {
                result.remapped[proposed] = existing
                changes.remap(proposed, to: existing)
                changes.unchanged.append(row)
                guard !toMany.isEmpty else { continue }
                let sourceKey = try writtenRowKey(of: existing, in: entity.name, connection: connection)
                for index in toMany.indices {
                    try replaceToMany(
                        toMany[index], of: entity, row: row, source: (existing, sourceKey), isNew: false,
                        into: &joinBuffers[buffers[index]], connection: connection, result: result)
                }
                continue
            }
            if let missing, let lookup {
                // Found as itself (the row names the stored object's id): nothing to write.
                if existing != nil {
                    changes.unchanged.append(row)
                    continue
                }
                let key = lookup.columns.map { "\($0.name) \($0.value(row).map { "\($0)" } ?? "null")" }
                throw StoreError(
                    .constraint,
                    "'\(entity.name)' has no object with \(key.joined(separator: ", ")), and a new one lacks required "
                        + "attribute '\(missing.name)'")
            }
            statement.bind(1, uuid: proposed)
            statement.bind(2, version)
            let unresolved = try bindScalars(batch, row: row, into: statement, from: 3, result: result)
            let (key, storedID) = try upsert(row, of: batch, proposed: proposed, with: statement, result: result)
            rowKeys[entity.name, storedID] = key
            if let uniqueKey {
                knownKeys.learn(uniqueKey, of: entity.name, KnownKeys.Entry(rowKey: key, id: storedID))
            } else {
                // Written without a key learned: the upsert may have rewritten (or cleared) a key it had, which an
                // earlier batch of this change set may have just learned.
                knownKeys.forget(id: storedID, of: entity.name)
            }
            for (relationship, destination) in unresolved {
                pendingReferences.append(
                    PendingReference(
                        entity: entity, source: storedID, relationship: relationship, destination: destination))
            }
            if storedID == proposed {
                changes.inserted.append(proposed)
            } else {
                result.remapped[proposed] = storedID
                changes.remap(proposed, to: storedID)
                // Merged into a stored object: a change, unless the batch held nothing but one constraint's key
                // (a find-or-create). Columns of another constraint are written by the upsert too.
                if batch.hasNonKeyColumns || lookup == nil {
                    changes.updated.append(storedID)
                } else {
                    changes.unchanged.append(row)
                }
            }
            for index in toMany.indices {
                try replaceToMany(
                    toMany[index], of: entity, row: row, source: (storedID, key), isNew: storedID == proposed,
                    into: &joinBuffers[buffers[index]], connection: connection, result: result)
            }
        }
    }

    /// An insert batch's additions to its change set's ``MergeResult``, kept as arrays while the batch runs.
    private struct BatchChanges {
        var inserted: [UUID] = []
        var updated: [UUID] = []
        var remappedFrom: [UUID] = []
        var remappedTo: [UUID] = []
        /// Rows that changed nothing (see ``MergeResult/unchangedRows``).
        var unchanged: [Int] = []

        mutating func remap(_ proposed: UUID, to stored: UUID) {
            remappedFrom.append(proposed)
            remappedTo.append(stored)
        }

        /// Adds what the batch gathered to `result`, in the order the rows ran (also when the batch failed: the
        /// change set is then rolled back and its result dropped).
        func hand(to result: inout MergeResult, entity: String, position: Int) {
            result.withChanges(of: entity) { changes in
                inserted.append(to: &changes.inserted)
                updated.append(to: &changes.updated)
            }
            if !remappedFrom.isEmpty { result.appendRemaps(from: remappedFrom, to: remappedTo, entity: entity) }
            if !unchanged.isEmpty { result.unchangedRows[position, default: []].append(contentsOf: unchanged) }
        }
    }

    /// For an insert batch that carries nothing but the columns of one uniqueness constraint (find-or-create of a
    /// `User` by `login`): the query finding the object that has the row's key, the key's columns and the
    /// constraint's index. Such a row that finds its object changes nothing, and a read finds it without the write an
    /// upsert makes (the upsert rewrites the row and its index entries, and every page it touches goes to the WAL).
    /// A batch with any other column upserts: what it sets must be written.
    private func keyLookup(_ batch: EntityBatchReader, connection: OpaquePointer) throws -> KeyLookup? {
        guard !batch.hasNonKeyColumns else { return nil }
        let names = batch.scalarColumns.map(\.name)
        guard
            let constraint = batch.entity.uniqueness.firstIndex(where: { constraint in
                constraint.count == names.count && constraint.allSatisfy(names.contains)
            })
        else { return nil }
        let attributes = batch.entity.uniqueness[constraint]
        let columns = attributes.compactMap { name in batch.scalarColumns.first { $0.name == name } }
        return KeyLookup(
            statement: try statement(connection, Self.keyAndIDSQL(batch.entity, matching: attributes)),
            columns: columns, constraint: constraint)
    }

    /// A find-or-create batch's query by key (see ``keyLookup(_:connection:)``).
    private struct KeyLookup {
        let statement: SQLiteStatement
        /// The batch's columns of the constraint, in the constraint's order.
        let columns: [ColumnReader]
        /// The constraint's index in its entity's uniqueness list.
        let constraint: Int
    }

    /// Row `row`'s values of a uniqueness constraint's columns, or nil when one is null (it finds nothing).
    private static func key(of row: Int, in columns: [ColumnReader], constraint: Int) -> KnownKeys.Key? {
        if columns.count == 1 { return columns[0].value(row).map { .one(constraint: constraint, UniqueKeyValue($0)) } }
        var values: [UniqueKeyValue] = []
        for column in columns {
            guard let value = column.value(row) else { return nil }
            values.append(UniqueKeyValue(value))
        }
        return .many(constraint: constraint, values)
    }

    /// The id of the stored object with row `row`'s key, if the batch is a find-or-create and one has it.
    private func lookUp(
        _ row: Int, with lookup: KeyLookup?, entity: String, result: MergeResult
    ) throws -> UUID? {
        guard let lookup else { return nil }
        let statement = lookup.statement
        for (offset, column) in lookup.columns.enumerated() {
            _ = try bindScalar(column, row: row, into: statement, at: Int32(offset + 1), result: result)
        }
        defer { statement.reset() }
        guard try statement.step(), let id = statement.uuid(column: 1) else { return nil }
        rowKeys[entity, id] = statement.int64(column: 0)
        return id
    }

    /// Runs a bound upsert of row `row`; returns the row key and id of the row it wrote.
    ///
    /// A new object (the import's every row) is told by the row key SQLite gives it (`last_insert_rowid`, which an
    /// upsert that updates leaves as it was): no `RETURNING`, whose temporary table SQLite opens, fills and closes
    /// for every row. A row merged into a stored object is found afterwards by what it now shares with the row
    /// (see ``findUpserted(_:of:proposed:connection:result:)``).
    private func upsert(
        _ row: Int, of batch: EntityBatchReader, proposed: UUID, with statement: SQLiteStatement, result: MergeResult
    ) throws -> (key: Int64, id: UUID) {
        if let inserted = try statement.executeInsert() { return (inserted, proposed) }
        guard
            let found = try findUpserted(
                row, of: batch, proposed: proposed, connection: statement.connection, result: result)
        else {
            throw StoreError(.sqlite, "upsert into '\(batch.entity.name)' wrote no row", sql: statement.sql)
        }
        return found
    }

    /// The row an upsert merged row `row` into. It updated the stored object that had the row's values of the first
    /// uniqueness constraint whose conflict it met, or its id: either way that object now has the row's values of
    /// every constraint the batch covers (had another object kept one, the upsert would have failed on it). So the
    /// first such constraint whose values are not null finds it, and the id when none does.
    private func findUpserted(
        _ row: Int, of batch: EntityBatchReader, proposed: UUID, connection: OpaquePointer, result: MergeResult
    ) throws -> (key: Int64, id: UUID)? {
        for constraint in Self.upsertConstraints(batch) {
            let columns = constraint.compactMap { name in batch.scalarColumns.first { $0.name == name } }
            guard columns.allSatisfy({ !$0.isNull(row) }) else { continue }
            let query = try statement(connection, Self.keyAndIDSQL(batch.entity, matching: constraint))
            for (offset, column) in columns.enumerated() {
                _ = try bindScalar(column, row: row, into: query, at: Int32(offset + 1), result: result)
            }
            // Constraints name attributes only, so this finds the row; the id stays the last resort regardless.
            if let found = try readKeyAndID(query) { return found }
        }
        let query = try statement(connection, Self.keyAndIDSQL(batch.entity, matching: ["id"]))
        query.bind(1, uuid: proposed)
        return try readKeyAndID(query)
    }

    /// The query of the row key and id of the object whose `columns` equal its parameters (at most one: the columns
    /// are a uniqueness constraint's, or the id).
    static func keyAndIDSQL(_ entity: Entity, matching columns: [String]) -> String {
        let condition = columns.map { "\(SQLText.quote($0)) = ?" }.joined(separator: " AND ")
        return "SELECT \(SQLText.rowKey), \"id\" FROM \(SQLText.quote(entity.name)) WHERE \(condition) LIMIT 1"
    }

    /// Steps a query of a row key and an id once and resets it.
    private func readKeyAndID(_ query: SQLiteStatement) throws -> (key: Int64, id: UUID)? {
        defer { query.reset() }
        guard try query.step() else { return nil }
        guard let id = query.uuid(column: 1) else {
            throw StoreError(.sqlite, "a row holds an id that is not 16 bytes", sql: query.sql)
        }
        return (query.int64(column: 0), id)
    }

    /// An insert batch's upsert, its SQL built once per entity and set of columns: the SQL depends on nothing else.
    private func cachedUpsertSQL(_ batch: EntityBatchReader) -> String {
        let shape = [batch.entity.name] + batch.scalarColumns.map(\.name)
        if let sql = upsertSQLs[shape] { return sql }
        let sql = Self.upsertSQL(batch)
        if upsertSQLs.count >= statementCacheLimit { upsertSQLs.removeAll() }
        upsertSQLs[shape] = sql
        return sql
    }

    /// The uniqueness constraints an insert batch upserts on, besides the id: those whose every column it carries.
    static func upsertConstraints(_ batch: EntityBatchReader) -> [[String]] {
        let names = batch.scalarColumns.map(\.name)
        return batch.entity.uniqueness.filter { constraint in constraint.allSatisfy(names.contains) }
    }

    static func upsertSQL(_ batch: EntityBatchReader) -> String {
        let entity = batch.entity
        let names = batch.scalarColumns.map(\.name)
        let columns = (["id", "_version"] + names).map(SQLText.quote).joined(separator: ", ")
        var sql =
            "INSERT INTO \(SQLText.quote(entity.name)) (\(columns)) VALUES (\(SQLText.placeholders(names.count + 2)))"
        for constraint in upsertConstraints(batch) {
            let updated = names.filter { !constraint.contains($0) }
            sql += " ON CONFLICT (\(constraint.map(SQLText.quote).joined(separator: ", "))) DO UPDATE SET "
            if updated.isEmpty {
                // Found, nothing to change: touch a key column (the update changes nothing).
                sql += "\(SQLText.quote(constraint[0])) = excluded.\(SQLText.quote(constraint[0]))"
            } else {
                sql +=
                    (updated.map { "\(SQLText.quote($0)) = excluded.\(SQLText.quote($0))" } + [
                        "\"_version\" = excluded.\"_version\""
                    ])
                    .joined(separator: ", ")
            }
        }
        let all =
            names.map { "\(SQLText.quote($0)) = excluded.\(SQLText.quote($0))" } + [
                "\"_version\" = excluded.\"_version\""
            ]
        sql += " ON CONFLICT (\"id\") DO UPDATE SET \(all.joined(separator: ", "))"
        return sql
    }

    // MARK: - Updates

    private func update(
        _ batch: EntityBatchReader, position: Int, connection: OpaquePointer, result: inout MergeResult
    ) throws {
        let entity = batch.entity
        let statement = try statement(connection, Self.updateSQL(entity, columns: batch.scalarColumns.map(\.name)))
        let versionIndex = Int32(batch.scalarColumns.count + 1)
        let toMany = batch.toManyColumns
        let buffers = toMany.map { joinBuffer(entity.name, $0.name) }
        var updated = Data()
        let conflicted = conflicts[position] ?? [:]
        for row in 0..<batch.rows {
            let id = result.resolve(batch.id(row))
            if let stored = conflicted[row] {
                let outcome = try resolveUpdate(batch, row: row, id: id, stored: stored, connection: connection)
                if stored != 0 { result.resolved[entity.name, default: []].append(id) }
                switch outcome {
                case .skipped:
                    result.unchangedRows[position, default: []].append(row)
                    continue
                case .written(let partially):
                    if partially {
                        result.unchangedRows[position, default: []].append(row)
                        result.rewritten.insert(id)
                    }
                }
            } else {
                let unresolved = try bindScalars(batch, row: row, into: statement, from: 1, result: result)
                statement.bind(versionIndex, version)
                statement.bind(versionIndex + 1, uuid: id)
                try statement.execute()
                guard statement.changes > 0 else {
                    throw StoreError(
                        .constraint, "update of \(ObjectID(entity: entity.name, uuid: id)), which does not exist")
                }
                for (relationship, destination) in unresolved {
                    pendingReferences.append(
                        PendingReference(
                            entity: entity, source: id, relationship: relationship, destination: destination))
                }
            }
            if !toMany.isEmpty {
                let sourceKey = try writtenRowKey(of: id, in: entity.name, connection: connection)
                for index in toMany.indices {
                    try replaceToMany(
                        toMany[index], of: entity, row: row, source: (id, sourceKey), isNew: false,
                        into: &joinBuffers[buffers[index]], connection: connection, result: result)
                }
            }
            id.append(to: &updated)
        }
        result.withChanges(of: entity.name) { $0.updated.append(updated) }
    }

    static func updateSQL(_ entity: Entity, columns: [String]) -> String {
        let assignments = columns.map { "\(SQLText.quote($0)) = ?" } + ["\"_version\" = ?"]
        return "UPDATE \(SQLText.quote(entity.name)) SET \(assignments.joined(separator: ", ")) WHERE \"id\" = ?"
    }

    // MARK: - Deletes

    /// Deletes the batch's objects, applying each relationship's delete rule: `deny` refuses the change set while
    /// the relationship points to an object, `cascade` deletes the destinations too (their own rules apply), and
    /// every reference to a deleted object is cleared (nullify).
    private func delete(
        _ batch: EntityBatchReader, position: Int, connection: OpaquePointer, result: inout MergeResult
    ) throws {
        let conflicted = conflicts[position] ?? [:]
        var pending: [(Entity, UUID)] = []
        for row in 0..<batch.rows {
            let id = result.resolve(batch.id(row))
            // Store trump and rollback keep an object the store changed since it was read: the delete loses.
            if let stored = conflicted[row], policy == .storeTrump || policy == .rollback {
                if stored != 0 { result.resolved[batch.entity.name, default: []].append(id) }
                continue
            }
            pending.append((batch.entity, id))
        }
        var index = 0
        while index < pending.count {
            let (entity, id) = pending[index]
            index += 1
            let destinations = try ruledDestinations(of: entity, id: id, connection: connection)
            guard try deleteObject(of: entity, id: id, connection: connection) else { continue }
            result.withChanges(of: entity.name) { id.append(to: &$0.deleted) }
            pending += destinations
        }
    }

    /// The objects `id` points to through relationships whose rule is `cascade`, after checking the `deny` ones.
    /// - Throws: ``StoreError`` naming the relationship when a `deny` rule refuses the delete.
    private func ruledDestinations(of entity: Entity, id: UUID, connection: OpaquePointer) throws -> [(Entity, UUID)] {
        var cascaded: [(Entity, UUID)] = []
        for (relationship, destination, sql) in deletePlan(of: entity).ruled {
            let select = try statement(connection, sql)
            select.bind(1, uuid: id)
            var targets: [UUID] = []
            while try select.step() {
                if let target = select.uuid(column: 0) { targets.append(target) }
            }
            select.reset()
            guard !targets.isEmpty else { continue }
            if relationship.deleteRule == .deny {
                throw StoreError(
                    .constraint,
                    "cannot delete \(ObjectID(entity: entity.name, uuid: id)): its relationship '\(relationship.name)' "
                        + "still points to \(targets.count) \(destination.name) object(s) (delete rule deny)")
            }
            cascaded += targets.map { (destination, $0) }
        }
        return cascaded
    }

    /// Deletes one object and clears every reference to it. Returns false when it did not exist.
    private func deleteObject(of entity: Entity, id: UUID, connection: OpaquePointer) throws -> Bool {
        let plan = deletePlan(of: entity)
        let deleteRow = try statement(connection, plan.deleteRow)
        deleteRow.bind(1, uuid: id)
        // RETURNING: the row is deleted by the first step.
        guard try deleteRow.step() else {
            deleteRow.reset()
            return false
        }
        let key = deleteRow.int64(column: 0)
        deleteRow.reset()
        for sql in plan.clearReferences { try execute(try statement(connection, sql), key) }
        return true
    }

    /// The SQL of deleting an object of `entity`, built on first use.
    private func deletePlan(of entity: Entity) -> DeletePlan {
        if let plan = deletePlans[entity.name] { return plan }
        var ruled: [(Relationship, Entity, String)] = []
        for relationship in entity.relationships where relationship.deleteRule != .nullify {
            guard let destination = model.entity(named: relationship.destination) else { continue }
            let column = SQLText.quote(relationship.name)
            let table = SQLText.quote(entity.name)
            let target = "\(SQLText.quote(destination.name)) AS \"tributary_d\""
            let sql =
                relationship.isToMany
                ? """
                SELECT "tributary_d"."id" FROM \(SQLText.quote(SQLText.joinTable(entity.name, relationship.name))) AS "tributary_j"
                JOIN \(target) ON "tributary_d".\(SQLText.rowKey) = "tributary_j".destination
                WHERE "tributary_j".source = (SELECT \(SQLText.rowKey) FROM \(table) WHERE "id" = ?)
                """
                : """
                SELECT "tributary_d"."id" FROM \(table) AS "tributary_s"
                JOIN \(target) ON "tributary_d".\(SQLText.rowKey) = "tributary_s".\(column) WHERE "tributary_s"."id" = ?
                """
            ruled.append((relationship, destination, sql))
        }
        var clear: [String] = []
        for relationship in entity.relationships where relationship.isToMany {
            clear.append(
                "DELETE FROM \(SQLText.quote(SQLText.joinTable(entity.name, relationship.name))) WHERE source = ?")
        }
        for source in model.entities {
            for relationship in source.relationships where relationship.destination == entity.name {
                // The referring rows, found through the relationship's inverse index.
                let referring = SQLText.inverseSources(source.name, relationship.name, destination: "?1")
                if relationship.isToMany {
                    let join = SQLText.quote(SQLText.joinTable(source.name, relationship.name))
                    clear.append("DELETE FROM \(join) WHERE source IN (\(referring)) AND destination = ?1")
                } else {
                    let column = SQLText.quote(relationship.name)
                    clear.append(
                        "UPDATE \(SQLText.quote(source.name)) SET \(column) = NULL, \"_version\" = ?2 "
                            + "WHERE \(SQLText.rowKey) IN (\(referring)) AND \(column) = ?1")
                }
            }
        }
        let plan = DeletePlan(
            deleteRow: "DELETE FROM \(SQLText.quote(entity.name)) WHERE \"id\" = ? RETURNING \(SQLText.rowKey)",
            clearReferences: clear,
            ruled: ruled)
        deletePlans[entity.name] = plan
        return plan
    }

    /// Runs a statement of a delete plan for the deleted object's row key.
    private func execute(_ statement: SQLiteStatement, _ key: Int64) throws {
        statement.bind(1, key)
        if statement.parameterCount >= 2 { statement.bind(2, version) }
        try statement.execute()
    }

    // MARK: - Binding

    /// Binds row `row`'s attributes and to-one relationships from parameter `first` on.
    /// - Returns: the to-one destinations not stored yet (bound as NULL), to set once the inserts are done.
    func bindScalars(
        _ batch: EntityBatchReader, row: Int, into statement: SQLiteStatement, from first: Int32,
        result: MergeResult, only columns: [ColumnReader]? = nil
    ) throws -> [(Relationship, UUID)] {
        var unresolved: [(Relationship, UUID)] = []
        let columns = columns ?? batch.scalarColumns
        // By index: a for-in copies each column reader (retaining its arrays) for every row.
        for position in columns.indices {
            let index = first + Int32(position)
            if let destination = try bindScalar(
                columns[position], row: row, into: statement, at: index, result: result),
                case .toOne(let relationship) = columns[position].target
            {
                unresolved.append((relationship, destination))
            }
        }
        return unresolved
    }

    /// Binds row `row` of an attribute or to-one column. A to-one binds its destination's row key (following
    /// this change set's remaps).
    /// - Returns: the destination's id when it is not stored yet (NULL was bound).
    func bindScalar(
        _ column: ColumnReader, row: Int, into statement: SQLiteStatement, at index: Int32, result: MergeResult
    ) throws -> UUID? {
        if column.isNull(row) {
            statement.bindNull(index)
            return nil
        }
        switch column.values {
        case .ints(let values): statement.bind(index, values[row])
        case .doubles(let values): statement.bind(index, values[row])
        case .strings(let values): statement.bind(index, values[row])
        case .blobs(let values): statement.bind(index, bytes: values[row])
        case .fixed16(let values):
            let id = UUID(bytes: values, at: values.startIndex + row * 16)
            if case .toOne(let relationship) = column.target {
                let destination = result.resolve(id)
                guard
                    let key = try rowKey(
                        of: destination, in: relationship.destination, connection: statement.connection)
                else {
                    statement.bindNull(index)
                    return destination
                }
                statement.bind(index, key)
            } else {
                statement.bind(index, uuid: id)
            }
        case .toMany:
            preconditionFailure("to-many columns are not scalar")
        }
        return nil
    }

    private func replaceToMany(
        _ column: ColumnReader, of entity: Entity, row: Int, source written: (id: UUID, key: Int64), isNew: Bool,
        into joinRows: inout JoinRows, connection: OpaquePointer, result: MergeResult
    ) throws {
        guard case .toMany(_, let ids, let offsets) = column.values, case .toMany(let relationship) = column.target
        else { return }
        let (source, sourceKey) = written
        if !isNew {
            // Rows gathered for this join table go in first (all of them, whichever sources: a clear is rare on the
            // import's path), so the clear sees this source's.
            try writeJoinRows(&joinRows, connection: connection)
            let (clear, _) = try joinStatements(entity.name, column.name, connection: connection)
            clear.bind(1, sourceKey)
            try clear.execute()
        }
        guard !column.isNull(row) else { return }
        for position in offsets[row]..<offsets[row + 1] {
            let destination = result.resolve(UUID(bytes: ids, at: ids.startIndex + position * 16))
            guard let key = try rowKey(of: destination, in: relationship.destination, connection: connection) else {
                pendingReferences.append(
                    PendingReference(
                        entity: entity, source: source, relationship: relationship, destination: destination))
                continue
            }
            joinRows.append(source: sourceKey, destination: key)
        }
    }

    /// The statements that clear and add a to-many relationship's rows, found without building their SQL: this
    /// runs once per inserted row, and the SQL (the join table's name, quoted) is the same every time.
    func joinStatements(_ entity: String, _ relationship: String, connection: OpaquePointer) throws
        -> (clear: SQLiteStatement, add: SQLiteStatement)
    {
        if let cached = joinStatements[entity]?[relationship] { return cached }
        let join = SQLText.quote(SQLText.joinTable(entity, relationship))
        let pair = (
            clear: try statement(connection, "DELETE FROM \(join) WHERE source = ?"),
            add: try statement(connection, "INSERT OR IGNORE INTO \(join) (source, destination) VALUES (?, ?)")
        )
        joinStatements[entity, default: [:]][relationship] = pair
        return pair
    }

    func statement(_ connection: OpaquePointer, _ sql: String) throws -> SQLiteStatement {
        if let cached = statements[sql] { return cached }
        // Column order and sets come from peers, so the number of distinct statements is bounded here. The cache is
        // dropped, not finalized: a batch being applied may hold statements of it (its upsert, its key lookup),
        // and each is finalized when its last holder lets it go.
        if statements.count >= statementCacheLimit {
            statements.removeAll()
            joinStatements.removeAll()
            rowKeyStatements.removeAll()
        }
        let statement = try SQLiteStatement(connection: connection, sql: sql, fault: transactionFault)
        statements[sql] = statement
        return statement
    }

    // MARK: - Ordering

    /// Entities ordered so that relationship destinations come before their sources (cycles keep model order).
    static func insertionOrder(of model: Model) -> [String: Int] {
        var order: [String: Int] = [:]
        var visiting: Set<String> = []
        func visit(_ entity: Entity) {
            guard order[entity.name] == nil, visiting.insert(entity.name).inserted else { return }
            for relationship in entity.relationships {
                if let destination = model.entity(named: relationship.destination) { visit(destination) }
            }
            order[entity.name] = order.count
        }
        model.entities.forEach(visit)
        return order
    }
}
