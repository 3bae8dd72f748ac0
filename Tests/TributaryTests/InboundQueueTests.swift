import Foundation
import Testing

@testable import ZeroMQ

@Suite("Inbound queue: a slow consumer takes everything waiting at once")
struct InboundQueueTests {
    private static func messages(_ range: Range<Int>) -> [SocketLoop.Inbound] {
        range.map { SocketLoop.Inbound(socket: 0, frames: [Data("m\($0)".utf8)]) }
    }

    private static func names(_ batch: [SocketLoop.Inbound]?) -> [String] {
        (batch ?? []).map { String(decoding: $0.frames[0], as: UTF8.self) }
    }

    @Test("batches that arrive while the consumer is away come out as one batch, in arrival order")
    func coalesces() async {
        let queue = InboundQueue(limit: nil)
        queue.append(Self.messages(0..<3))
        queue.append(Self.messages(3..<5))
        queue.append(Self.messages(5..<9))
        var iterator = queue.makeAsyncIterator()
        #expect(Self.names(await iterator.next()) == (0..<9).map { "m\($0)" })
        queue.append(Self.messages(9..<10))
        #expect(Self.names(await iterator.next()) == ["m9"])
    }

    @Test("with a byte limit: no room once the untaken messages hold it, room and one wake-up when they are taken")
    func byteLimit() async {
        let roomMade = Locked(0)
        let queue = InboundQueue(limit: nil, byteLimit: 10) { roomMade.withLock { $0 += 1 } }
        #expect(queue.hasRoom && queue.room == 10)
        queue.append(Self.messages(0..<2))  // "m0", "m1": 4 bytes
        #expect(queue.room == 6)
        queue.append(Self.messages(2..<6))  // 8 bytes more: past the limit, all kept
        #expect(!queue.hasRoom && queue.room == 0)
        var iterator = queue.makeAsyncIterator()
        #expect(Self.names(await iterator.next()) == (0..<6).map { "m\($0)" })
        #expect(queue.hasRoom && queue.room == 10)
        #expect(roomMade.withLock { $0 } == 1, "the loop is woken once to read again")
        // Taken while it had room: no wake-up needed.
        queue.append(Self.messages(6..<7))
        #expect(Self.names(await iterator.next()) == ["m6"])
        #expect(roomMade.withLock { $0 } == 1)
    }

    @Test("a waiting consumer is woken by the next batch")
    func wakesWaiter() async {
        let queue = InboundQueue(limit: nil)
        let consumer = Task {
            var iterator = queue.makeAsyncIterator()
            return Self.names(await iterator.next())
        }
        queue.append(Self.messages(0..<2))
        #expect(await consumer.value == ["m0", "m1"])
    }

    @Test(
        "wake() gives a waiting consumer an empty batch, makes the next wait of one not waiting return at once, and never loses messages"
    )
    func wake() async {
        let queue = InboundQueue(limit: nil)
        let consumer = Task {
            var iterator = queue.makeAsyncIterator()
            return await iterator.next()
        }
        // Whether the consumer waits yet or not, the wake ends its wait with an empty batch.
        queue.wake()
        #expect(await consumer.value?.isEmpty == true)
        var iterator = queue.makeAsyncIterator()
        queue.wake()
        #expect(await iterator.next()?.isEmpty == true, "a wake before the wait is not lost")
        queue.append(Self.messages(0..<2))
        queue.wake()
        #expect(Self.names(await iterator.next()) == ["m0", "m1"], "messages come with the wake")
        queue.append(Self.messages(2..<3))
        #expect(Self.names(await iterator.next()) == ["m2"], "the wake was used up by the step that took m0 and m1")
    }

    @Test("beyond the limit, later messages are dropped and counted until the consumer takes what is held")
    func limit() async {
        let queue = InboundQueue(limit: 4)
        queue.append(Self.messages(0..<3))
        queue.append(Self.messages(3..<6))
        #expect(queue.droppedCount == 2)
        var iterator = queue.makeAsyncIterator()
        #expect(Self.names(await iterator.next()) == ["m0", "m1", "m2", "m3"])
        queue.append(Self.messages(6..<8))
        #expect(Self.names(await iterator.next()) == ["m6", "m7"])
    }

    @Test("iteration ends after the last messages once the loop finished, and when the consumer is cancelled")
    func ends() async {
        let finished = InboundQueue(limit: nil)
        finished.append(Self.messages(0..<1))
        finished.finish()
        var iterator = finished.makeAsyncIterator()
        #expect(Self.names(await iterator.next()) == ["m0"])
        #expect(await iterator.next() == nil)

        let idle = InboundQueue(limit: nil)
        let consumer = Task {
            var iterator = idle.makeAsyncIterator()
            return await iterator.next()
        }
        consumer.cancel()
        #expect(await consumer.value == nil)
    }
}
