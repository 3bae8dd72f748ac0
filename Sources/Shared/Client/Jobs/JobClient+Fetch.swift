import Foundation
import TributaryCore
import TributaryProtocol

extension JobClient {
    /// How many objects of `entity` the store holds (a count fetch, answered from a reader of the store).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming an unknown entity.
    public func count(of entity: String) async throws -> Int {
        try await count(for: FetchRequest(entity: entity))
    }

    /// How many objects `request` selects, its limit and offset applied (a count fetch, answered from a reader of
    /// the store). The coordinator checks the request against its model.
    /// - Throws: ``/TributaryProtocol/ProtocolError``: `UNKNOWN_ENTITY`, or `INVALID_PREDICATE` naming what the
    ///   predicate got wrong.
    public func count(for request: FetchRequest) async throws -> Int {
        let reply = try await connection.request(.fetchRequest(request.wire(.count)))
        guard case .fetchReply(let fetched) = reply.body else { throw Self.unexpected(reply) }
        return Int(clamping: fetched.count)
    }

    /// The objects `request` selects, in order, with their stored values, and the destinations of its prefetch key
    /// paths, all read at one commit. The coordinator checks the request against its model; its answer is then read
    /// with that model (``model()``, asked only when objects came back).
    ///
    /// ```swift
    /// let request = FetchRequest(
    ///     entity: "PullRequest", predicate: try FetchPredicate(format: "additions > 100"),
    ///     sortedBy: [FetchSort("additions", ascending: false)], limit: 10)
    /// let result = try await client.fetch(request)
    /// for object in result.objects { print(object.id, object.attributes["title"] ?? "nil") }
    /// ```
    /// - Throws: ``/TributaryProtocol/ProtocolError``: `UNKNOWN_ENTITY`, `INVALID_PREDICATE` (predicate, sort or
    ///   prefetch path), or `INVALID_REQUEST` (over 100,000 objects); ``/TributaryCore/StoreError`` when the answer
    ///   does not fit the model.
    public func fetch(_ request: FetchRequest, timeout: Duration = .seconds(60)) async throws -> FetchResult {
        let reply = try await connection.request(.fetchRequest(request.wire(.objects)), timeout: timeout)
        guard case .fetchReply(let fetched) = reply.body else { throw Self.unexpected(reply) }
        guard !fetched.objects.ids.isEmpty else { return FetchResult(objects: [], prefetched: [], seq: fetched.seq) }
        let model = try await model()
        let objects = try FetchedObject.objects(in: fetched.objects, model: model)
        // Steps to one entity (`author`, `reviewers`) may reach the same object, or one fetched already.
        var seen = Set(objects.map(\.id))
        let prefetched = try fetched.prefetched.flatMap { try FetchedObject.objects(in: $0, model: model) }
            .filter { seen.insert($0.id).inserted }
        return FetchResult(objects: objects, prefetched: prefetched, seq: fetched.seq)
    }

    /// The store's model, as the coordinator loaded it.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` from the coordinator; ``/TributaryCore/ModelError`` if its
    ///   answer is not a model.
    public func model() async throws -> Model {
        let reply = try await connection.request(.modelRequest(.init()))
        guard case .modelReply(let answer) = reply.body else { throw Self.unexpected(reply) }
        return try Model.decode(Data(answer.modelJson.utf8), source: "the coordinator's model")
    }
}

/// What ``JobClient/fetch(_:timeout:)`` answers with.
public struct FetchResult: Sendable {
    /// The objects the request selected, in its order.
    public let objects: [FetchedObject]
    /// The destinations of the request's prefetch key paths, step by step (`author.team`: the authors, then their
    /// teams), each once, and none that is among ``objects``.
    public let prefetched: [FetchedObject]
    /// The last commit the read saw.
    public let seq: UInt64
}
