import Dispatch
import Foundation
import Synchronization

/// A slave context (Core Data's private-queue `NSManagedObjectContext`): a scratchpad of objects on its own
/// serial queue that tracks inserts, updates and deletes, and on `save()` pushes them to its parent as one
/// change set.
///
/// Work on a context goes through its queue, as in Core Data:
/// - ``perform(_:)->()`` enqueues a block and returns at once; blocks run in FIFO order, and a block enqueued
///   from inside a block runs after it (the "try/finally" save pattern).
/// - ``performAndWait(_:)`` runs a block and waits for its value; called from the context's own queue it runs
///   inline instead of deadlocking.
/// - `try await context.perform { context in … }` runs a block on the queue and resumes with its result.
///
/// ```swift
/// let context = ObjectContext(model: model, parent: LocalRootParent(store: store))
/// try await context.perform { context in
///     let user = try context.findOrCreate("User", matching: ["login": .string("octocat")])
///     try user.setValue(.string("The Octocat"), for: "name")
/// }
/// try await context.save()
/// ```
public final class ObjectContext: @unchecked Sendable {
    // @unchecked: every mutable property below is touched only on `queue` (checked with a dispatch-specific
    // key in debug builds via `assertOnQueue`), which serializes all access.

    /// The model the context's objects follow.
    public let model: Model
    /// A name for logs and debuggers.
    public let name: String
    let parent: (any ChangeSetParent)?

    private let queue: DispatchQueue
    private let queueKey = DispatchSpecificKey<UInt8>()
    let identity: WaitGraph.ContextIdentity
    private let policy = Mutex(MergePolicy.error)

    /// How the root resolves this context's saves of objects that changed in the store since the context read
    /// them (Core Data's `mergePolicy`); ``MergePolicy/error`` by default. Settable from any thread.
    public var mergePolicy: MergePolicy {
        get { policy.withLock { $0 } }
        set { policy.withLock { $0 = newValue } }
    }

    var registered: [UUID: ManagedObject] = [:]
    var insertedOrder: [UUID] = []
    var updatedOrder: [UUID] = []
    var updatedSet: Set<UUID> = []
    var deletedOrder: [UUID] = []
    /// Deleted objects (no longer registered), kept for the save's delete batches and for ``rollback()``.
    var deletedObjects: [UUID: ManagedObject] = [:]
    /// Objects by the values of their entity's first uniqueness constraint, for find-or-create.
    var uniqueIndex: [String: [[UniqueKeyValue?]: UUID]] = [:]
    /// A save sent without an answer saying whether it was applied; sent again, first, by the next save.
    var saveInDoubt: SentSave?
    /// Lets one save run at a time.
    let saving = SaveGate()
    /// How the saves that finished settle the context, in the order they finished: applied on the queue at the start
    /// of the next block (``perform(_:)``, ``performAndWait(_:)``, a save's), so that no block runs after a save's
    /// answer without seeing it, and an answer costs no hop of its own onto the queue.
    let settlements = Mutex<[@Sendable (ObjectContext) -> Void]>([])

    /// Creates a context with its own serial queue.
    /// - Parameters:
    ///   - model: the model its objects follow.
    ///   - parent: where `save()` pushes changes; nil makes a context that cannot save.
    ///   - name: a name for logs and debuggers.
    public init(model: Model, parent: (any ChangeSetParent)?, name: String = "context") {
        self.model = model
        self.parent = parent
        self.name = name
        queue = DispatchQueue(label: "tributary.context.\(name)")
        queue.setSpecific(key: queueKey, value: 1)
        identity = WaitGraph.ContextIdentity(name: name)
        queue.setSpecific(key: WaitGraph.runningContext, value: identity)
    }

    /// Whether the caller is running on this context's queue.
    public var isOnQueue: Bool { DispatchQueue.getSpecific(key: queueKey) != nil }

    func assertOnQueue(_ function: StaticString = #function) {
        assert(isOnQueue, "ObjectContext.\(function) called outside the context's queue; use perform")
    }

    // MARK: - perform

    /// Enqueues a block on the context's queue and returns at once. Blocks run one at a time, in the order
    /// they were enqueued; one enqueued from inside a block runs after the current block finishes.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        queue.async {
            self.settleFinishedSaves()
            block()
        }
    }

    /// Runs a block on the context's queue and waits for its result, rethrowing its error. Called from inside a
    /// block of this context it runs inline (Core Data's re-entrancy rule), so it never deadlocks on itself.
    /// - Throws: the block's error; ``ContextError`` `waitCycle`, without running the block, when called from a
    ///   block of another context that this one is (directly or through others) waiting for — a deadlock.
    public func performAndWait<T>(_ block: () throws -> T) throws -> T {
        if isOnQueue { return try block() }
        let waiter = try WaitGraph.enter(waitingFor: identity)
        defer { WaitGraph.leave(waiter) }
        return try queue.sync {
            settleFinishedSaves()
            return try block()
        }
    }

    /// Runs a block on the context's queue, in FIFO order with every other block, and resumes with its result.
    /// If the calling task is cancelled before the block starts, the block does not run and this throws
    /// `CancellationError`; a block that started runs to its end.
    public func perform<T: Sendable>(_ block: @escaping @Sendable (ObjectContext) throws -> T) async throws -> T {
        try Task.checkCancellation()
        let cancelled = Mutex(false)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                queue.async {
                    if cancelled.withLock({ $0 }) {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        self.settleFinishedSaves()
                        continuation.resume(with: Result { try block(self) })
                    }
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
    }

    // MARK: - State

    /// Whether the context has unsaved inserts, updates or deletes.
    public var hasChanges: Bool {
        assertOnQueue()
        return !insertedOrder.isEmpty || !updatedOrder.isEmpty || !deletedOrder.isEmpty
    }

    /// The objects inserted since the last save.
    public var insertedObjects: [ManagedObject] {
        assertOnQueue()
        return insertedOrder.compactMap { registered[$0] }
    }

    /// The objects changed since the last save (not counting inserted ones).
    public var updatedObjects: [ManagedObject] {
        assertOnQueue()
        return updatedOrder.compactMap { registered[$0] }
    }

    /// The ids of objects deleted since the last save.
    public var deletedObjectIDs: [UUID] {
        assertOnQueue()
        return deletedOrder
    }

    /// Every object the context holds.
    public var registeredObjects: [ManagedObject] {
        assertOnQueue()
        return Array(registered.values)
    }

    /// Forgets every object and every unsaved change (Core Data's `reset`).
    public func reset() {
        assertOnQueue()
        registered.removeAll()
        insertedOrder.removeAll()
        updatedOrder.removeAll()
        updatedSet.removeAll()
        deletedOrder.removeAll()
        deletedObjects.removeAll()
        uniqueIndex.removeAll()
    }

    /// Discards every unsaved change (Core Data's `rollback`): inserted objects are forgotten, deleted ones come
    /// back, and changed ones return to their saved (or last merged) values.
    public func rollback() {
        assertOnQueue()
        for id in insertedOrder { registered[id] = nil }
        for id in updatedOrder { registered[id]?.revertToCommitted() }
        for id in deletedOrder {
            guard let object = deletedObjects[id] else { continue }
            object.isDeleted = false
            object.revertToCommitted()
            registered[id] = object
        }
        insertedOrder.removeAll()
        updatedOrder.removeAll()
        updatedSet.removeAll()
        deletedOrder.removeAll()
        deletedObjects.removeAll()
        rebuildUniqueIndex()
    }

    /// Indexes the registered objects by their first uniqueness constraint, for find-or-create.
    func rebuildUniqueIndex() {
        uniqueIndex.removeAll()
        for object in registered.values { indexUniqueness(of: object) }
    }

    func registerUpdate(_ object: ManagedObject) {
        if updatedSet.insert(object.objectID.uuid).inserted { updatedOrder.append(object.objectID.uuid) }
    }
}
