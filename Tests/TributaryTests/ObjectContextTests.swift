import Foundation
import Synchronization
import Testing

@testable import TributaryCore
@testable import TributaryDemo

@Suite("ObjectContext queue semantics")
struct ObjectContextTests {
    let context = ObjectContext(model: DemoData.model, parent: nil, name: "test")

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
        #expect(try context.performAndWait { 42 } == 42)
        struct Boom: Error {}
        #expect(throws: Boom.self) { try context.performAndWait { throw Boom() } }
        let inner = try context.performAndWait {
            // Re-entering from the context's own queue must not deadlock.
            try context.performAndWait { context.isOnQueue }
        }
        #expect(inner)
    }

    @Test("10,000 perform blocks enqueued from several threads run one at a time, in the order enqueued")
    func performIsFIFO() async throws {
        let enqueued = Locked<[Int]>([])
        let ran = Locked<[Int]>([])
        let running = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<8 {
                group.addTask {
                    for index in 0..<1_250 {
                        let ticket = producer * 1_250 + index
                        // Enqueue order is recorded under the same lock as the enqueue itself.
                        enqueued.withLock { order in
                            order.append(ticket)
                            context.perform {
                                #expect(
                                    running.withLock {
                                        $0 += 1; return $0
                                    } == 1, "one block at a time")
                                ran.withLock { $0.append(ticket) }
                                running.withLock { $0 -= 1 }
                            }
                        }
                    }
                }
            }
        }
        try await context.perform { _ in }
        #expect(ran.withLock { $0 }.count == 10_000)
        #expect(ran.withLock { $0 } == enqueued.withLock { $0 })
    }

    @Test("a performAndWait cycle between two contexts is reported as an error, not a hang")
    func waitCycle() async throws {
        let other = ObjectContext(model: context.model, parent: nil, name: "other")
        let otherRunning = DispatchSemaphore(value: 0)
        let contextRunning = DispatchSemaphore(value: 0)
        let errors = Locked<[ContextError]>([])
        // Both contexts run a block (a rendezvous makes sure), then each waits for the other: whichever asks second
        // closes the cycle and gets the error; its block then ends, and the first one's wait completes.
        other.perform {
            otherRunning.signal()
            contextRunning.wait()
            do { try self.context.performAndWait {} } catch let error as ContextError {
                errors.withLock { $0.append(error) }
            } catch {}
        }
        try await withTimeout("both waits to end", .seconds(10)) {
            try await self.context.perform { _ in
                contextRunning.signal()
                otherRunning.wait()
                do { try other.performAndWait {} } catch let error as ContextError {
                    errors.withLock { $0.append(error) }
                }
            }
        }
        try await other.perform { _ in }
        let reported = errors.withLock { $0 }
        #expect(reported.count == 1 && reported.first?.code == .waitCycle)
        #expect(reported.first?.message.contains("waits for") == true)
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

    @Test("find-or-create tells apart keys that differ only in Unicode normalization, as the store's uniqueness does")
    func findOrCreateComparesBytes() throws {
        try context.performAndWait {
            let composed = try context.findOrCreate("User", matching: ["login": .string("Jos\u{E9}")])
            let decomposed = try context.findOrCreate("User", matching: ["login": .string("Jose\u{301}")])
            #expect(composed !== decomposed)
            #expect(try context.findOrCreate("User", matching: ["login": .string("Jose\u{301}")]) === decomposed)
        }
    }

    @Test("a block whose task is cancelled before it starts does not run")
    func cancelledBlockIsSkipped() async throws {
        let gate = DispatchSemaphore(value: 0)
        let ran = Locked(false)
        context.perform { gate.wait() }  // the queue is busy until the gate opens
        let task = Task { try await context.perform { _ in ran.withLock { $0 = true } } }
        // Queued behind the gate, then opened: the cancel lands before the task's block can start.
        context.perform { task.cancel() }
        gate.signal()
        await #expect(throws: CancellationError.self) { try await task.value }
        try await context.perform { _ in }
        #expect(ran.value == false)
    }

    @Test("deliver(on:) runs each step of a pipeline on its context's queue, in order")
    func deliverOnContexts() async throws {
        let other = ObjectContext(model: context.model, parent: nil, name: "other")
        let numbers = AsyncStream<Int> { continuation in
            for number in 0..<100 { continuation.yield(number) }
            continuation.finish()
        }
        let context = self.context
        let results =
            numbers
            .deliver(on: context) { number, current in (number * 2, current.isOnQueue && !other.isOnQueue) }
            .deliver(on: other) { step, current in (step.0, step.1 && current.isOnQueue && !context.isOnQueue) }
        var seen: [Int] = []
        for try await (value, onTheRightQueues) in results {
            #expect(onTheRightQueues)
            seen.append(value)
        }
        #expect(seen == (0..<100).map { $0 * 2 })
    }
}
