import Foundation
import TributaryCore
import TributaryMessaging

/// An object graph kept current by the change feed, in any process (Core Data's view context, which merges
/// the root's didSave notifications): it loads the current objects of some entities from a consistent snapshot,
/// then merges every later commit of those entities as it arrives — the values travel with the feed, so no
/// refetch is needed — and announces each merged commit on ``changes``.
///
/// Read its objects inside ``context``'s `perform` blocks, as with any ``/TributaryCore/ObjectContext``; fetches there
/// (and ``refetch(_:)``) are answered by the coordinator from a read connection, with the stored values. Edit them
/// there and ``save()``: the changes go to the root writer as one change set, without a job, and the answer comes
/// once they are committed (a child context of ``context`` saves into it, in memory, first). Its own commits, when
/// the feed brings them back, are not applied twice.
///
/// ```swift
/// let view = try await ViewContext.start(
///     feed: "tcp://127.0.0.1:7401", jobs: "tcp://127.0.0.1:7400", model: model, entities: ["PullRequest"])
/// try await view.context.perform { context in
///     let number = try FetchPredicate(format: "number == %d", 42)
///     let pull = try context.fetch(FetchRequest(entity: "PullRequest", predicate: number))[0]
///     pull["title"] = .string("A better title")
/// }
/// try await view.save()
/// for try await save in view.changes {
///     let open = try await view.context.perform { context in context.registeredObjects.count }
/// }
/// ```
public final class ViewContext: Sendable {
    /// The context holding the objects; merges run on its queue, between your blocks.
    public let context: ObjectContext
    /// Each commit once it is merged into ``context``, in order. It finishes when the view is closed, and throws
    /// what stopped it otherwise (the coordinator refused the feed, a commit did not fit the model).
    public let changes: AsyncThrowingStream<DidSave, any Error>
    /// The commit the snapshot showed; merged commits follow it.
    public let snapshotSeq: UInt64
    private let feed: ChangeFeed
    private let follower: Task<Void, Never>
    private let connection: CoordinatorConnection

    private init(
        context: ObjectContext, snapshotSeq: UInt64, feed: ChangeFeed,
        changes: AsyncThrowingStream<DidSave, any Error>, follower: Task<Void, Never>, connection: CoordinatorConnection
    ) {
        self.context = context
        self.snapshotSeq = snapshotSeq
        self.feed = feed
        self.changes = changes
        self.follower = follower
        self.connection = connection
    }

    /// Loads the objects of `entities` (every entity when empty) and starts following the feed after them.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` when the coordinator refuses (an unknown entity, ...),
    ///   ``/TributaryCore/ContextError`` when what it sends does not fit `model`.
    public static func start(
        feed: String, jobs: String, model: Model, entities: Set<String> = [], name: String = "view",
        curve: CurveClientKeys? = nil
    ) async throws -> ViewContext {
        let connection = try CoordinatorConnection(endpoint: jobs, curve: curve)
        let context = ObjectContext(model: model, parent: CoordinatorStore(connection: connection), name: name)
        let seq = try await JobClient.with(endpoint: jobs, curve: curve) { client in
            var id: UInt64 = 0
            while true {
                let page = try await client.snapshotPage(id: id, entities: entities)
                try await context.perform { context in
                    for batch in page.objects { try context.merge(batch, registeringNew: true) }
                }
                if page.done { return page.seq }
                id = page.snapshotID
            }
        }
        var options = ChangeFeed.Options()
        options.filter = FeedFilter(entities: entities)
        options.since = seq
        let changeFeed = try ChangeFeed(feed: feed, jobs: jobs, options: options, curve: curve)
        let (changes, continuation) = AsyncThrowingStream.makeStream(of: DidSave.self)
        // Unstructured: the view outlives this call; the task is cancelled by `close()` (and ends with the feed).
        let follower = Task {
            do {
                for try await event in changeFeed {
                    guard case .didSave(let save) = event else { continue }
                    try await context.perform { context in try context.mergeChanges(from: save) }
                    continuation.yield(save)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return ViewContext(
            context: context, snapshotSeq: seq, feed: changeFeed, changes: changes, follower: follower,
            connection: connection)
    }

    /// Saves ``context``'s changes into the root (see ``CoordinatorStore``): its inserts, updates and deletes as one
    /// change set, merged with the context's merge policy; nothing is sent when nothing changed.
    /// - Returns: the commit's receipt: its sequence number (0 when nothing was saved), the ids the root replaced
    ///   (uniqueness merges) and the conflicts the merge policy settled, which the context has taken.
    /// - Throws: ``/TributaryCore/MergeConflictError`` under the `.error` policy when objects changed in the store
    ///   since they were read: the changes stay pending, as do they for any other failure.
    @discardableResult
    public func save() async throws -> SaveReceipt {
        try await context.save()
    }

    /// Runs a batch update in the root writer (Core Data's `NSBatchUpdateRequest`); see
    /// ``/TributaryCore/ObjectContext/execute(_:)-(BatchUpdate)``. Other views follow it from the feed.
    @discardableResult
    public func execute(_ request: BatchUpdate) async throws -> BatchChangeResult {
        try await context.execute(request)
    }

    /// Runs a batch delete in the root writer (Core Data's `NSBatchDeleteRequest`); see
    /// ``/TributaryCore/ObjectContext/execute(_:)-(BatchDelete)``.
    @discardableResult
    public func execute(_ request: BatchDelete) async throws -> BatchChangeResult {
        try await context.execute(request)
    }

    /// Fetches from the store again: the objects `request` selects are registered, or take the stored values
    /// (an object held here with no unsaved changes). Returns their ids, in order; read them in ``context``.
    public func refetch(_ request: FetchRequest) async throws -> [ObjectID] {
        try await context.perform { context in try context.fetch(request).map(\.objectID) }
    }

    /// Stops following the feed; ``changes`` finishes. The objects stay as they are; fetches are refused.
    public func close() async {
        await feed.close()
        follower.cancel()
        await follower.value
        await connection.close()
    }
}
