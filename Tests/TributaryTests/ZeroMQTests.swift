import Foundation
import Testing
import ZeroMQ

@Suite("ZeroMQ wrapper")
struct ZeroMQTests {
    let context: ZMQContext

    init() throws {
        context = try ZMQContext()
    }

    @Test("DEALER and ROUTER exchange multipart messages, with the routing id in front on the ROUTER side")
    func routerDealer() throws {
        let router = try context.makeSocket(.router)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:") && !endpoint.hasSuffix(":*"))
        let dealer = try context.makeSocket(.dealer)
        try dealer.setRoutingID(Data("peer-1".utf8))
        try dealer.connect(endpoint)

        try dealer.send([Data("a".utf8), Data(), Data(repeating: 7, count: 100_000)])
        #expect(try router.waitForInput(milliseconds: 5_000))
        let received = try #require(try router.receive())
        #expect(received == [Data("peer-1".utf8), Data("a".utf8), Data(), Data(repeating: 7, count: 100_000)])

        try router.send([Data("peer-1".utf8), Data("reply".utf8)])
        #expect(try dealer.waitForInput(milliseconds: 5_000))
        #expect(try dealer.receive() == [Data("reply".utf8)])
        #expect(try dealer.receive(dontWait: true) == nil, "nothing more is waiting")
    }

    @Test("PUB delivers to SUB only the topics it subscribed to")
    func pubSub() async throws {
        let publisher = try context.makeSocket(.pub)
        let endpoint = try publisher.bind("tcp://127.0.0.1:*")
        let subscriber = try context.makeSocket(.sub)
        try subscriber.subscribe("keep")
        try subscriber.connect(endpoint)
        // A SUB connects asynchronously: publish until the first message arrives (the slow-joiner handshake).
        var first: [Data]?
        for _ in 0..<500 where first == nil {
            try publisher.send([Data("drop".utf8), Data("x".utf8)])
            try publisher.send([Data("keep".utf8), Data("hello".utf8)])
            if try subscriber.waitForInput(milliseconds: 10) { first = try subscriber.receive() }
        }
        #expect(first == [Data("keep".utf8), Data("hello".utf8)])
    }

    @Test("errors keep the operation, errno and detail")
    func errorsKeepErrno() throws {
        let socket = try context.makeSocket(.router)
        let error = try #require(throws: ZMQError.self) { try socket.bind("nonsense://here") }
        #expect(error.operation == "zmq_bind")
        #expect(error.code == EPROTONOSUPPORT)
        #expect(error.detail == "nonsense://here")
        #expect(error.description.contains("zmq_bind failed"))
        let taken = try socket.bind("tcp://127.0.0.1:*")
        let other = try context.makeSocket(.router)
        let inUse = try #require(throws: ZMQError.self) { try other.bind(taken) }
        #expect(inUse.code == EADDRINUSE)
    }

    @Test("a message over the maximum size is not delivered")
    func maximumMessageSize() throws {
        let router = try context.makeSocket(.router)
        try router.setMaximumMessageSize(1_000)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        let dealer = try context.makeSocket(.dealer)
        try dealer.connect(endpoint)
        try dealer.send([Data(repeating: 1, count: 5_000)])
        #expect(try router.waitForInput(milliseconds: 300) == false)
        // A fresh peer that respects the limit still gets through.
        let polite = try context.makeSocket(.dealer)
        try polite.connect(endpoint)
        try polite.send([Data("small".utf8)])
        #expect(try router.waitForInput(milliseconds: 5_000))
        #expect(try router.receive()?.last == Data("small".utf8))
    }

    @Test("a socket loop bridges receiving to its inbound queue and sends from any task")
    func socketLoop() async throws {
        let router = try context.makeSocket(.router)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        let loop = try SocketLoop(name: "test-router", sockets: [.init(router, receives: true)])
        loop.start()
        let dealer = try context.makeSocket(.dealer)
        try dealer.connect(endpoint)
        let dealerLoop = try SocketLoop(name: "test-dealer", sockets: [.init(dealer, receives: true)])
        dealerLoop.start()

        await withTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                group.addTask { dealerLoop.send([Data("m\(index)".utf8)], on: 0) }
            }
        }
        var received = Set<String>()
        var iterator = loop.inbound.makeAsyncIterator()
        while received.count < 100, let batch = await iterator.next() {
            for message in batch {
                received.insert(String(decoding: message.frames[1], as: UTF8.self))
                loop.send([message.frames[0], Data("ack".utf8)], on: 0)
            }
        }
        #expect(received.count == 100)
        var acks = 0
        for await batch in dealerLoop.inbound {
            for message in batch {
                #expect(message.frames == [Data("ack".utf8)])
                acks += 1
            }
            if acks == 100 { break }
        }
        #expect(acks == 100)
        await loop.stop()
        await dealerLoop.stop()
    }
}

extension ZeroMQTests {
    @Test("a socket loop that never started stops at once and closes its sockets")
    func stopWithoutStart() async throws {
        let context = try ZMQContext()
        let socket = try context.makeSocket(.pub)
        _ = try socket.bind("tcp://127.0.0.1:*")
        let loop = try SocketLoop(name: "never-started", sockets: [.init(socket, receives: false)])
        // Polled rather than awaited: a stop that never returns fails the test instead of hanging it.
        let stopped = Locked(false)
        Task {
            await loop.stop()
            stopped.withLock { $0 = true }
        }
        try await waitUntil("the loop to stop", timeout: .seconds(10)) { stopped.value }
        // Ending a context waits until every socket made from it is closed.
        let terminated = Locked(false)
        Thread {
            context.terminate()
            terminated.withLock { $0 = true }
        }.start()
        try await waitUntil("the context to end", timeout: .seconds(10)) { terminated.value }
    }
}

/// An echo server as an actor on its socket loop: it reads the loop's inbound queue and replies, on the loop's thread.
private actor LoopEcho {
    let loop: SocketLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    private(set) var threads: Set<UInt> = []

    init(loop: SocketLoop) { self.loop = loop }

    /// Echoes `count` messages, then returns the threads it ran on.
    func serve(_ count: Int) async -> Set<UInt> {
        var served = 0
        for await batch in loop.inbound {
            threads.insert(UInt(pthread_self()))
            for message in batch { loop.send(message.frames + [Data("echo".utf8)], on: 0) }
            served += batch.count
            if served >= count { break }
        }
        return threads
    }

    func here() -> UInt { UInt(pthread_self()) }

    /// Holds the loop's thread for `duration` (a job that blocks, as a commit run there does), returning the loop's
    /// `lastPolled` before and after.
    func hold(_ duration: Duration) -> (ContinuousClock.Instant, ContinuousClock.Instant) {
        let before = loop.lastPolled
        Thread.sleep(
            forTimeInterval: Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18)
        return (before, loop.lastPolled)
    }
}

extension ZeroMQTests {
    @Test(
        "an actor whose executor is a socket loop runs on the loop's one thread, before and after the loop starts; its replies go out; once the loop stopped it still runs"
    )
    func loopAsExecutor() async throws {
        let router = try context.makeSocket(.router)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        let loop = try SocketLoop(name: "test-executor", sockets: [.init(router, receives: true)])
        let echo = LoopEcho(loop: loop)
        // Before the loop starts: the job starts its thread, which polls only its wake-up until then.
        let first = await echo.here()
        loop.start()
        let dealer = try context.makeSocket(.dealer)
        try dealer.connect(endpoint)
        // The serving task starts on the loop's thread: a task started on the pool may wait for a pool thread for
        // longer than the replies are awaited while other tests hold both of them.
        let serving = Task(executorPreference: loop) { await echo.serve(50) }
        for index in 0..<50 { try dealer.send([Data("m\(index)".utf8)]) }
        // The replies are awaited off the pool, on a thread of their own. The dealer is used by that thread alone
        // until it returns.
        nonisolated(unsafe) let receiver = dealer
        let replies = try await onOwnThread {
            var replies: [[Data]] = []
            while replies.count < 50, try receiver.waitForInput(milliseconds: 10_000),
                let reply = try receiver.receive()
            {
                replies.append(reply)
            }
            return replies
        }
        #expect(replies.allSatisfy { $0.last == Data("echo".utf8) })
        let echoes = replies.map { String(decoding: $0[0], as: UTF8.self) }
        #expect(echoes == (0..<50).map { "m\($0)" }, "every reply, in order")
        let threads = await serving.value
        #expect(threads == [first], "every step on the thread that ran the first job")
        await loop.stop()
        // Stopped: its jobs run on a queue of their own instead of hanging (polled, so a hang fails the test).
        let ranAfterStop = Locked(false)
        Task {
            _ = await echo.here()
            ranAfterStop.withLock { $0 = true }
        }
        try await waitUntil("a job of the actor to run after the stop", timeout: .seconds(10)) { ranAfterStop.value }
    }
}

/// The thread nonisolated code runs on once a continuation that `resumer` resumes from another thread is resumed.
private func threadAfterResume(by resumer: @Sendable (CheckedContinuation<Void, Never>) -> Void) async -> UInt {
    await withCheckedContinuation { resumer($0) }
    return UInt(pthread_self())
}

extension ZeroMQTests {
    @Test(
        "a task that prefers a socket loop as its executor is resumed on the loop's thread when another thread resumes it, not on the cooperative pool"
    )
    func loopAsTaskExecutor() async throws {
        let router = try context.makeSocket(.router)
        _ = try router.bind("tcp://127.0.0.1:*")
        let loop = try SocketLoop(name: "test-task-executor", sockets: [.init(router, receives: true)])
        loop.start()
        let loopThread = await LoopEcho(loop: loop).here()
        let resumeFromAnotherThread: @Sendable (CheckedContinuation<Void, Never>) -> Void = { continuation in
            Thread.detachNewThread { continuation.resume() }
        }
        let preferring = await withTaskExecutorPreference(loop) {
            var threads: Set<UInt> = []
            for _ in 0..<20 { threads.insert(await threadAfterResume(by: resumeFromAnotherThread)) }
            return threads
        }
        #expect(preferring == [loopThread], "every resumption on the loop's thread")
        // The same without the preference runs on the pool: what the loop spares its actor's task.
        let pooled = await threadAfterResume(by: resumeFromAnotherThread)
        #expect(pooled != loopThread)
        await loop.stop()
    }
}

extension ZeroMQTests {
    @Test("a loop's lastPolled advances as it reads its sockets, and stands still while a job holds its thread")
    func lastPolled() async throws {
        let router = try context.makeSocket(.router)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        let loop = try SocketLoop(name: "test-polled", sockets: [.init(router, receives: true)])
        let echo = LoopEcho(loop: loop)
        loop.start()
        let started = loop.lastPolled
        let dealer = try context.makeSocket(.dealer)
        try dealer.connect(endpoint)
        let serving = Task { await echo.serve(1) }
        try dealer.send([Data("ping".utf8)])
        _ = await serving.value
        #expect(loop.lastPolled > started, "the read of the message is stamped")
        let (before, after) = await echo.hold(.milliseconds(200))
        #expect(before == after, "no poll while a job holds the thread")
        await loop.stop()
    }
}
