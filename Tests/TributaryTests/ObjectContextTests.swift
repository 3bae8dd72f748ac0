import Foundation
import Synchronization
import Testing

@testable import Tributary

@Suite("ObjectContext queue semantics")
struct ObjectContextTests {
    let context = ObjectContext(model: DemoData.model, parent: nil, name: "test")

    @Test("perform runs blocks in FIFO order, also when enqueued from several threads")
    func performIsFIFO() async throws {
        let order = Locked<[Int]>([])
        // Each thread enqueues its own increasing sequence; FIFO means each thread's blocks run in its order.
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for index in 0..<2_500 {
                        context.perform { order.withLock { $0.append(thread * 10_000 + index) } }
                    }
                }
            }
        }
        try await context.perform { _ in }
        let recorded = order.withLock { $0 }
        #expect(recorded.count == 10_000)
        for thread in 0..<4 {
            let mine = recorded.filter { $0 / 10_000 == thread }
            #expect(mine == mine.sorted(), "blocks of thread \(thread) ran out of order")
        }
    }

    @Test("a block enqueued from inside a block runs after the current block (try/finally pattern)")
    func nestedPerformRunsAfter() async throws {
        let events = Locked<[String]>([])
        let done = AsyncStream.makeStream(of: Void.self)
        context.perform { [context] in
            context.perform {
                events.withLock { $0.append("save") }
                done.continuation.finish()
            }
            events.withLock { $0.append("work") }
        }
        for await _ in done.stream {}
        #expect(events.withLock { $0 } == ["work", "save"])
    }

    @Test("performAndWait returns the block's value, rethrows its error, and runs inline when re-entered")
    func performAndWait() throws {
        #expect(context.performAndWait { 42 } == 42)
        struct Boom: Error {}
        #expect(throws: Boom.self) { try context.performAndWait { throw Boom() } }
        let inner = context.performAndWait {
            // Re-entering from the context's own queue must not deadlock.
            context.performAndWait { context.isOnQueue }
        }
        #expect(inner)
    }

    @Test("async perform runs on the context's queue, in order with plain perform blocks")
    func asyncPerform() async throws {
        let order = Locked<[Int]>([])
        context.perform { order.withLock { $0.append(1) } }
        let onQueue = try await context.perform { context in
            order.withLock { $0.append(2) }
            return context.isOnQueue
        }
        #expect(onQueue)
        #expect(order.withLock { $0 } == [1, 2])
    }

    @Test("inserts, updates and deletes are tracked; find-or-create returns the same object for the same key")
    func changeTracking() throws {
        try context.performAndWait {
            let first = try context.findOrCreate("User", matching: ["login": .string("ada")])
            let again = try context.findOrCreate("User", matching: ["login": .string("ada")])
            #expect(first === again)
            let pullRequest = try context.insert("PullRequest")
            try pullRequest.setDestination(first, for: "author")
            #expect(context.insertedObjects.count == 2)
            #expect(context.hasChanges)
            #expect(throws: ContextError.self) { try pullRequest.setValue(.string("x"), for: "number") }
            #expect(throws: ContextError.self) { try pullRequest.setValue(.int(1), for: "nope") }
            context.delete(pullRequest)
            #expect(context.insertedObjects.count == 1)
        }
    }
}
