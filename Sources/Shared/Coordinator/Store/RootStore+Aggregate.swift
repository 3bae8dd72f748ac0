import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

extension RootStore {
    /// Answers an aggregate request from a reader connection (never waiting for the writer): one row per group, at
    /// one consistent point.
    /// - Throws: ``/TributaryCore/StoreError``: `unknownEntity`; `invalidPredicate` naming what a key, name,
    ///   predicate or sort got wrong; `invalidRequest` for a sum that overflows 64 bits or more than
    ///   `maximumFetchRows` rows without a limit.
    public func aggregate(_ request: AggregateRequest) throws -> AggregateResult {
        try aggregateNow(try aggregateQuery(for: request))
    }

    /// A wire request checked against the model, as ``aggregate(_:)`` checks it.
    package func aggregateQuery(for request: Tributary_V1_AggregateRequest) throws -> AggregateQuery {
        let decoded: AggregateRequest
        do {
            decoded = try AggregateRequest(wire: request)
        } catch let error as FetchPredicateError {
            throw StoreError(.invalidPredicate, "aggregate of '\(request.entity)': \(error.message)")
        }
        return try aggregateQuery(for: decoded)
    }

    /// A request checked against the model and compiled.
    package func aggregateQuery(for request: AggregateRequest) throws -> AggregateQuery {
        guard model.entity(named: request.entity) != nil else {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw StoreError(.unknownEntity, "unknown entity '\(request.entity)' (the model has \(known))")
        }
        do {
            return try AggregateQuery(compiled: request.compile(in: model))
        } catch let error as FetchPredicateError {
            throw StoreError(.invalidPredicate, "aggregate of '\(request.entity)': \(error.message)")
        }
    }

    /// Answers a checked aggregate request from a reader connection on the calling thread.
    package func aggregateNow(_ query: AggregateQuery) throws -> AggregateResult {
        try pool.read { db in try query.run(in: db) }
    }

    /// Answers a checked aggregate request from a reader connection, as ``aggregate(_:)`` does.
    package func aggregate(_ query: AggregateQuery) async throws -> AggregateResult {
        try await pool.read { db in try query.run(in: db) }
    }
}

/// An aggregate request checked against its entity and compiled to one SQL query with bound parameters.
package struct AggregateQuery: Sendable {
    let compiled: CompiledAggregate

    init(compiled: CompiledAggregate) throws {
        guard compiled.arguments.count <= RootStore.maximumBoundValues else {
            throw StoreError(
                .invalidRequest,
                "the aggregate binds \(compiled.arguments.count) values, over the limit of "
                    + "\(RootStore.maximumBoundValues)")
        }
        self.compiled = compiled
    }

    func run(in db: Database) throws -> AggregateResult {
        let seq = try FeedStore.lastSequenceNumber(db)
        let request = compiled.request
        // One more than the most allowed, to tell a request that matches too many without a limit.
        let limit = request.fetchLimit > 0 ? request.fetchLimit : RootStore.maximumFetchRows + 1
        let types = compiled.columnTypes
        let names = request.columnNames
        var rows: [AggregateRow] = []
        do {
            let cursor = try Row.fetchCursor(
                db, sql: compiled.sql,
                arguments: StatementArguments(
                    compiled.arguments.map(\.databaseValue) + [limit.databaseValue, request.fetchOffset.databaseValue]))
            while let row = try cursor.next() {
                let values = types.indices.map { AttributeValue(row[$0] as DatabaseValue, type: types[$0]) }
                rows.append(AggregateRow(names: names, values: values, groupKeyCount: request.groupBy.count))
            }
        } catch let error as DatabaseError where error.message?.contains("integer overflow") == true {
            throw StoreError(
                .invalidRequest,
                "a sum of '\(request.entity)' overflows a 64-bit integer: \(Self.describeSums(request))")
        }
        guard rows.count <= RootStore.maximumFetchRows else {
            throw StoreError(
                .invalidRequest,
                "the aggregate of '\(request.entity)' has more than \(RootStore.maximumFetchRows) groups; "
                    + "set a limit and page with an offset")
        }
        return AggregateResult(names: names, rows: rows, seq: seq)
    }

    /// The request's sums, for the message about one that overflows.
    private static func describeSums(_ request: AggregateRequest) -> String {
        request.aggregates.filter { $0.function == .sum }.map { "\($0.name) (of \($0.key ?? "?"))" }
            .joined(separator: ", ")
    }
}
