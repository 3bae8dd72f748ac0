import Foundation
import TributaryCore
import TributaryProtocol

/// Fetches of the store's objects and of their aggregates (a view context's, `tributary fetch`): read after the
/// saves before them, so a client that saved and fetched without waiting for the ack sees its save.
package struct FetchHandler: Sendable {
    let parts: HandlerParts

    /// The objects, ids or count `query` asks for.
    package func fetch(_ query: FetchQuery) -> Promised<FetchResult> {
        let store = parts.store
        return RequestPlace.afterSaves(parts) { try await store.fetch(query) }
    }

    /// The groups and aggregates `query` asks for.
    package func aggregate(_ query: AggregateQuery) -> Promised<AggregateResult> {
        let store = parts.store
        return RequestPlace.afterSaves(parts) { try await store.aggregate(query) }
    }

    /// The model as JSON, as `Welcome` and `ModelReply` carry it.
    package var modelJSON: String { String(decoding: parts.configuration.model.encodedJSON(), as: UTF8.self) }

    /// The model as JSON, for a request of it.
    package func model() -> Promised<String> {
        let json = modelJSON
        return RequestPlace.committed(parts) { json }
    }
}
