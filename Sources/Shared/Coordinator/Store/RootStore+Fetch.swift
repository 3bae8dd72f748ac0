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

    /// Answers a fetch from a reader connection (never waiting for the writer): the matching objects, ids or count,
    /// leaving out `exclude_ids`, at one consistent point whose commit is `seq`.
    /// - Throws: ``StoreError``: `unknownEntity`; `invalidPredicate` naming what the predicate or sort got wrong;
    ///   `invalidRequest` for too many excluded ids or more than ``maximumFetchRows`` results without a limit.
    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        let query = try query(for: request)
        return try pool.read { db in try query.run(in: db) }
    }

    /// ``fetch(_:)`` awaited: the read runs on one of GRDB's reader queues, not on the calling thread.
    public func fetch(_ request: Tributary_V1_FetchRequest) async throws -> Tributary_V1_FetchReply {
        let query = try query(for: request)
        return try await pool.read { db in try query.run(in: db) }
    }

    private func query(for request: Tributary_V1_FetchRequest) throws -> FetchQuery {
        guard let entity = model.entity(named: request.entity) else {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw StoreError(.unknownEntity, "unknown entity '\(request.entity)' (the model has \(known))")
        }
        return try FetchQuery(request, entity: entity)
    }
}

/// A fetch checked against its entity and compiled to SQL with bound parameters.
package struct FetchQuery {
    let entity: Entity
    let resultType: Tributary_V1_FetchResultType
    let condition: String
    let arguments: [DatabaseValue]
    let order: String
    let limit: Int?
    let offset: Int

    package init(_ request: Tributary_V1_FetchRequest, entity: Entity) throws {
        self.entity = entity
        resultType = request.resultType
        var condition = "1"
        var arguments: [DatabaseValue] = []
        do {
            if request.hasPredicate {
                let compiled = try FetchPredicate(wire: request.predicate).compile(for: entity)
                condition = compiled.sql
                arguments = compiled.arguments.map(\.databaseValue)
            }
            order = try request.sort.map { FetchSort(wire: $0) }.compile(for: entity).sql
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
        // One more than the most allowed, to tell a fetch that matches too many without a limit.
        limit =
            request.limit != 0
            ? Int(request.limit) : request.resultType == .count ? nil : RootStore.maximumFetchRows + 1
        offset = Int(request.offset)
    }

    func run(in db: Database) throws -> Tributary_V1_FetchReply {
        var reply = Tributary_V1_FetchReply()
        reply.seq = try RootStore.lastSequenceNumber(db)
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
