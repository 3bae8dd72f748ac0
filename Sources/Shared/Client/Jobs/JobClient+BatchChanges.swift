import Foundation
import TributaryCore

extension JobClient {
    /// Runs a batch update in the coordinator's writer (Core Data's `NSBatchUpdateRequest`), with the store's model
    /// (``model()``) to check its values. See ``/TributaryCore/ObjectContext/execute(_:)-(BatchUpdate)``.
    /// - Throws: ``/TributaryCore/ContextError`` for an entity, property or value that does not fit the model;
    ///   ``/TributaryProtocol/ProtocolError`` when the coordinator refuses it (naming why).
    @discardableResult
    public func execute(_ request: BatchUpdate) async throws -> BatchChangeResult {
        try await context().execute(request)
    }

    /// Runs a batch delete in the coordinator's writer (Core Data's `NSBatchDeleteRequest`), applying the delete
    /// rules. See ``/TributaryCore/ObjectContext/execute(_:)-(BatchDelete)``.
    /// - Throws: as ``execute(_:)-(BatchUpdate)``; `CONSTRAINT_VIOLATION` when a `deny` rule refuses a commit.
    @discardableResult
    public func execute(_ request: BatchDelete) async throws -> BatchChangeResult {
        try await context().execute(request)
    }

    /// A context with the store's model whose parent is the coordinator, over this client's connection.
    private func context() async throws -> ObjectContext {
        ObjectContext(model: try await model(), parent: CoordinatorStore(connection: connection), name: "batch change")
    }
}
