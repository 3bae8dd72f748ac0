import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

extension RootStore {
    /// Most objects or ids one fetch answers with.
    static let maximumFetchRows = 100_000
    /// Most ids a fetch may name in `exclude_ids` or `only_ids` (each is a bound parameter).
    static let maximumExcludedIDs = FetchRequest.maximumExcludedIDs
    /// Most values one fetch binds (SQLite allows 32,766).
    static let maximumBoundValues = 32_000
    /// Most key paths one fetch prefetches.
    static let maximumPrefetchPaths = 16

    /// Answers a fetch from a reader connection (never waiting for the writer): the matching objects, ids or count,
    /// leaving out `exclude_ids`, at one consistent point whose commit is `seq`.
    /// - Throws: ``/TributaryCore/StoreError``: `unknownEntity`; `invalidPredicate` naming what the predicate or sort
    ///   got wrong; `invalidRequest` for too many excluded ids or more than `maximumFetchRows` results without a limit.
    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        let query = try query(for: request)
        return try pool.read { db in try query.run(in: db) }
    }

    /// ``fetch(_:)`` awaited: the read runs on one of GRDB's reader queues, not on the calling thread.
    public func fetch(_ request: Tributary_V1_FetchRequest) async throws -> Tributary_V1_FetchReply {
        let query = try query(for: request)
        return try await pool.read { db in try query.run(in: db) }
    }

    /// A fetch checked against the model: its entity, predicate, sort and limits.
    /// - Throws: as ``fetch(_:)`` does, before anything is read.
    package func query(for request: Tributary_V1_FetchRequest) throws -> FetchQuery {
        guard let entity = model.entity(named: request.entity) else {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw StoreError(.unknownEntity, "unknown entity '\(request.entity)' (the model has \(known))")
        }
        return try FetchQuery(request, entity: entity, model: model)
    }

    /// Answers a checked fetch from a reader connection, as ``fetch(_:)`` does.
    package func fetch(_ query: FetchQuery) async throws -> FetchResult {
        FetchResult(message: try await pool.read { db in try query.run(in: db) })
    }
}

/// A fetch's answer: the objects, ids or count, in the encoding the wire carries them (each object as the store's
/// rows are read, without a domain form between).
package struct FetchResult: Sendable {
    package let message: Tributary_V1_FetchReply
}

/// A fetch checked against its entity and compiled to SQL with bound parameters.
package struct FetchQuery: Sendable {
    let entity: Entity
    let resultType: Tributary_V1_FetchResultType
    let condition: String
    let arguments: [DatabaseValue]
    let order: String
    let limit: Int?
    let offset: Int
    /// The prefetch key paths, resolved: their destinations are read with the objects.
    let prefetch: [[PredicateHop]]
    let model: Model

    package init(_ request: Tributary_V1_FetchRequest, entity: Entity, model: Model) throws {
        self.entity = entity
        resultType = request.resultType
        var condition = "1"
        var arguments: [DatabaseValue] = []
        do {
            if request.hasPredicate {
                let compiled = try FetchPredicate(wire: request.predicate).compile(for: entity, in: model)
                condition = compiled.sql
                arguments = compiled.arguments.map(\.databaseValue)
            }
            order = try request.sort.map { FetchSort(wire: $0) }.compile(for: entity, in: model).sql
            guard request.prefetch.count <= RootStore.maximumPrefetchPaths else {
                throw FetchPredicateError(
                    .tooComplex,
                    "a fetch may prefetch at most \(RootStore.maximumPrefetchPaths) key paths, not \(request.prefetch.count)"
                )
            }
            prefetch = try request.prefetch.map { try model.prefetchPath($0, from: entity) }
        } catch let error as FetchPredicateError {
            throw StoreError(.invalidPredicate, "fetch of '\(entity.name)': \(error.message)")
        }
        for (ids, field, operation) in [
            (request.onlyIds, "only_ids", "IN"), (request.excludeIds, "exclude_ids", "NOT IN"),
        ]
        where !ids.isEmpty {
            guard ids.count % 16 == 0 else {
                throw StoreError(.wrongType, "\(field) of a fetch is not a multiple of 16 bytes")
            }
            guard ids.count / 16 <= RootStore.maximumExcludedIDs else {
                throw StoreError(
                    .invalidRequest,
                    "\(field) of a fetch may hold at most \(RootStore.maximumExcludedIDs) ids, not \(ids.count / 16) "
                        + "(a context leaves out the objects it changed: save it first)")
            }
            condition = "(\(condition)) AND \"id\" \(operation) (\(SQLText.placeholders(ids.count / 16)))"
            var offset = ids.startIndex
            while offset < ids.endIndex {
                arguments.append(ids[offset..<offset + 16].databaseValue)
                offset += 16
            }
        }
        guard arguments.count <= RootStore.maximumBoundValues else {
            throw StoreError(
                .invalidRequest,
                "the fetch binds \(arguments.count) values (predicate values and ids), over the limit of "
                    + "\(RootStore.maximumBoundValues)")
        }
        self.condition = condition
        self.arguments = arguments
        self.model = model
        // One more than the most allowed, to tell a fetch that matches too many without a limit.
        limit =
            request.limit != 0
            ? Int(request.limit) : request.resultType == .count ? nil : RootStore.maximumFetchRows + 1
        offset = Int(request.offset)
    }

    /// The destinations of the prefetch key paths from the fetched objects, read in the fetch's own read
    /// transaction: one batch per relationship step (a step two paths share is read once).
    private func prefetched(in db: Database) throws -> [Tributary_V1_EntityBatch] {
        let table = SQLText.quote(entity.name)
        // The fetched objects' row keys: the fetch itself, as a subquery.
        let fetched =
            "SELECT \(SQLText.rowKey) FROM \(table) WHERE \(condition) ORDER BY \(order) LIMIT ? OFFSET ?"
        let fetchedArguments = arguments + [(limit ?? -1).databaseValue, offset.databaseValue]
        var batches: [Tributary_V1_EntityBatch] = []
        var read = Set<String>()
        for path in prefetch {
            var keys = fetched
            var prefix = ""
            for hop in path {
                prefix += "." + hop.name
                if hop.isToMany {
                    keys =
                        "SELECT destination FROM \(SQLText.quote(SQLText.joinTable(hop.source, hop.name))) "
                        + "WHERE source IN (\(keys))"
                } else {
                    keys =
                        "SELECT \(SQLText.quote(hop.name)) FROM \(SQLText.quote(hop.source)) "
                        + "WHERE \(SQLText.rowKey) IN (\(keys))"
                }
                guard read.insert(prefix).inserted, let destination = model.entity(named: hop.destination) else {
                    continue
                }
                // One more than the most allowed, to refuse a step that reaches too many without reading them all.
                let batch = try ObjectRows.read(
                    destination, where: "\(SQLText.rowKey) IN (\(keys))", arguments: fetchedArguments,
                    limit: RootStore.maximumFetchRows + 1, in: db)
                guard batch.ids.count / 16 <= RootStore.maximumFetchRows else {
                    throw StoreError(
                        .invalidRequest,
                        "prefetching '\(prefix.dropFirst())' of '\(entity.name)' reaches more than "
                            + "\(RootStore.maximumFetchRows) objects; fetch fewer at a time")
                }
                batches.append(batch)
            }
        }
        return batches
    }

    func run(in db: Database) throws -> Tributary_V1_FetchReply {
        var reply = Tributary_V1_FetchReply()
        reply.seq = try FeedStore.lastSequenceNumber(db)
        let table = SQLText.quote(entity.name)
        switch resultType {
        case .count:
            let count =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM \(table) WHERE \(condition)",
                    arguments: StatementArguments(arguments)) ?? 0
            reply.count = UInt64(max(0, min(count - offset, limit ?? Int.max)))
        case .ids:
            var ids = Data()
            let rows = try Row.fetchCursor(
                db, sql: "SELECT \"id\" FROM \(table) WHERE \(condition) ORDER BY \(order) LIMIT ? OFFSET ?",
                arguments: StatementArguments(arguments + [(limit ?? -1).databaseValue, offset.databaseValue]))
            while let row = try rows.next() { ids.append(row[0] as Data) }
            reply.objects.entity = entity.name
            reply.objects.ids = ids
        case .objects, .UNRECOGNIZED:
            reply.objects = try ObjectRows.read(
                entity, where: condition, arguments: arguments, order: order, limit: limit, offset: offset, in: db)
            if !prefetch.isEmpty && !reply.objects.ids.isEmpty { reply.prefetched = try prefetched(in: db) }
        }
        guard reply.objects.ids.count / 16 <= RootStore.maximumFetchRows else {
            throw StoreError(
                .invalidRequest,
                "the fetch of '\(entity.name)' matches more than \(RootStore.maximumFetchRows) objects; "
                    + "set a limit and page with an offset")
        }
        reply.count = resultType == .count ? reply.count : UInt64(reply.objects.ids.count / 16)
        return reply
    }
}
