import CoreMetrics
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
    /// what stopped it otherwise (the coordinator refused the feed, a commit did not fit the model): a
    /// ``ChangeFeedError`` whose protocol error is `FEED_REWRITTEN` when the store's history was rewritten under
    /// the view (a power loss took back commits it merged, a restore from a replica or a backup), after which the
    /// objects it holds may include values the store no longer has; start a new view.
    ///
    /// It keeps the last ``unreadChangesKept`` commits nobody has read, so that a view whose changes are not read
    /// (one that serves live results, say) does not grow with the feed: a reader further behind misses the oldest
    /// of them (``context`` has merged them all). Follow a ``ChangeFeed`` for every commit, exactly once.
    public let changes: AsyncThrowingStream<DidSave, any Error>
    /// How many unread commits ``changes`` keeps.
    public static let unreadChangesKept = 1_024
    /// The commit the snapshot showed; merged commits follow it.
    public let snapshotSeq: UInt64
    private let feed: ChangeFeed
    private let follower: Task<Void, Never>
    private let connection: CoordinatorConnection
    let observers: CommitObservers
    /// The entities whose commits the view follows; empty: every entity.
    let followed: Set<String>

    private init(
        context: ObjectContext, snapshotSeq: UInt64, feed: ChangeFeed,
        changes: AsyncThrowingStream<DidSave, any Error>, follower: Task<Void, Never>,
        connection: CoordinatorConnection,
        observers: CommitObservers, followed: Set<String>
    ) {
        self.followed = followed
        self.context = context
        self.snapshotSeq = snapshotSeq
        self.feed = feed
        self.changes = changes
        self.follower = follower
        self.connection = connection
        self.observers = observers
    }

    /// What a view holds.
    public enum Contents: Sendable {
        /// Every object of these entities (every entity when empty), loaded from a snapshot; the objects the feed
        /// inserts are registered too. For small entities: memory follows the store's size.
        case entities(Set<String>)
        /// Only what its fetches and live results register (Core Data's view context holds what was fetched); the
        /// feed updates those objects and passes over the rest. Memory follows what the view holds.
        case fetched
    }

    /// Loads the objects of `entities` (every entity when empty) and starts following the feed after them.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` when the coordinator refuses (an unknown entity, ...),
    ///   ``/TributaryCore/ContextError`` when what it sends does not fit `model`.
    public static func start(
        feed: String, jobs: String, model: Model, entities: Set<String> = [], name: String = "view",
        curve: CurveClientKeys? = nil
    ) async throws -> ViewContext {
        try await start(feed: feed, jobs: jobs, model: model, contents: .entities(entities), name: name, curve: curve)
    }

    /// Starts a view holding `contents`, following the feed from the commit it starts at.
    /// - Throws: as ``start(feed:jobs:model:entities:name:curve:)``.
    public static func start(
        feed: String, jobs: String, model: Model, contents: Contents, name: String = "view",
        curve: CurveClientKeys? = nil
    ) async throws -> ViewContext {
        let connection = try CoordinatorConnection(endpoint: jobs, curve: curve)
        let context = ObjectContext(model: model, parent: CoordinatorStore(connection: connection), name: name)
        let entities: Set<String>
        let start: FeedPosition
        switch contents {
        case .entities(let loaded):
            entities = loaded
            start = try await JobClient.with(endpoint: jobs, curve: curve) { client in
                var id: UInt64 = 0
                while true {
                    let page = try await client.snapshotPage(id: id, entities: loaded)
                    try await context.perform { context in
                        for batch in page.objects { try context.merge(batch, registeringNew: true) }
                    }
                    if page.done { return FeedPosition(seq: page.seq, epoch: page.epoch) }
                    id = page.snapshotID
                }
            }
        case .fetched:
            entities = []
            start = FeedPosition(
                seq: try await JobClient.with(endpoint: jobs, curve: curve) { try await $0.status().lastSeq })
        }
        let seq = start.seq
        let registersNew = if case .entities = contents { true } else { false }
        var options = ChangeFeed.Options()
        options.filter = FeedFilter(entities: entities)
        options.since = seq
        options.sinceEpoch = start.epoch
        let changeFeed = try ChangeFeed(feed: feed, jobs: jobs, options: options, curve: curve)
        let (changes, continuation) = AsyncThrowingStream.makeStream(
            of: DidSave.self, bufferingPolicy: .bufferingNewest(unreadChangesKept))
        let observers = CommitObservers()
        // Unstructured: the view outlives this call; the task is cancelled by `close()` (and ends with the feed).
        let follower = Task {
            do {
                for try await event in changeFeed {
                    guard case .didSave(let save) = event else { continue }
                    try await context.perform { context in
                        try context.mergeChanges(from: save, registeringNew: registersNew)
                        observers.merged(save, in: context)
                    }
                    continuation.yield(save)
                }
                continuation.finish()
                observers.end(throwing: nil)
            } catch {
                continuation.finish(throwing: error)
                // Closing the view cancels this task: its live results end without an error.
                observers.end(throwing: error is CancellationError ? nil : error)
            }
        }
        return ViewContext(
            context: context, snapshotSeq: seq, feed: changeFeed, changes: changes, follower: follower,
            connection: connection, observers: observers, followed: entities)
    }

    /// The live result of `request`: its snapshots, kept current from the feed (see ``LiveResults``). Its objects
    /// (and what its key paths reach) are registered in ``context`` and merged as the feed changes them; a change
    /// the feed's values cannot place is fetched again (``LiveResults/refetches``).
    ///
    /// ```swift
    /// let open = try FetchPredicate(format: "merged == NO")
    /// let results = try await view.results(
    ///     for: FetchRequest(entity: "PullRequest", predicate: open, sortedBy: [FetchSort("additions", ascending: false)], limit: 50))
    /// for try await snapshot in results {
    ///     print(snapshot.ids.count, "shown;", snapshot.inserted.count, "in,", snapshot.removed.count, "out")
    /// }
    /// ```
    /// - Parameters:
    ///   - request: what to keep current: its entity, predicate, sort, limit and offset.
    ///   - sectionKeyPath: groups the rows into ``/TributaryCore/LiveResultsSnapshot/sections`` by this key or
    ///     to-one key path (`state`, `author.login`), as `NSFetchedResultsController`'s `sectionNameKeyPath`. Rows
    ///     are grouped by the request's first sort key: when that is another key, this one is moved first from
    ///     later in the sort (keeping its direction) or put first, ascending.
    ///   - metrics: where the refetch counter (``LiveResults/refetchesMetric``) is recorded: the process's
    ///     bootstrapped metrics backend unless given.
    /// - Throws: ``/TributaryCore/FetchPredicateError`` or ``/TributaryCore/ContextError`` for a request the model
    ///   cannot answer, or one that reads an entity a view started with `.entities(...)` does not follow (its changes
    ///   would never arrive); the coordinator's refusal of the first fetch.
    public func results(
        for request: FetchRequest, sectionedBy sectionKeyPath: String? = nil,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) async throws -> LiveResults {
        let results = LiveResults(entity: request.entity, metrics: metrics)
        let observers = observers
        let entity = request.entity
        let followed = followed
        // The first fetch and the observer in one block: no commit merged in between is missed.
        let token = try await context.perform { context -> Int in
            let engine = try LiveResultsEngine(request: request, sectionKey: sectionKeyPath, context: context)
            try Self.requireFollowed(engine.related.union([entity]), by: followed, for: "live result", in: context)
            results.publish(
                engine.visible.map { ObjectID(entity: entity, uuid: $0) }, sections: engine.sections,
                updated: [], seq: engine.seq, refetches: 0)
            return observers.add(
                merged: { save, context in
                    do {
                        guard let updated = try engine.apply(save, in: context) else { return }
                        results.publish(
                            engine.visible.map { ObjectID(entity: entity, uuid: $0) },
                            sections: engine.sections,
                            updated: updated.map { ObjectID(entity: entity, uuid: $0) }, seq: engine.seq,
                            refetches: engine.refetches)
                    } catch {
                        results.end(throwing: error)
                    }
                },
                ended: { error in results.end(throwing: error) })
        }
        results.whenEnded { observers.remove(token) }
        return results
    }

    /// Refuses a live result that reads `entities` in a view that follows only `followed` (when not empty), naming
    /// what it lacks: the commits of those entities would never arrive.
    static func requireFollowed(
        _ entities: Set<String>, by followed: Set<String>, for what: String, in context: ObjectContext
    ) throws {
        let unfollowed = entities.subtracting(followed)
        guard followed.isEmpty || unfollowed.isEmpty else {
            throw ContextError(
                .unsupported,
                "the \(what) reads \(unfollowed.sorted().joined(separator: ", ")), which view '\(context.name)' does "
                    + "not follow (it follows \(followed.sorted().joined(separator: ", "))): start the view with "
                    + "contents .fetched, or with those entities too")
        }
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
