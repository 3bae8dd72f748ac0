import Foundation
import Testing

@testable import TributaryCoordinator
@testable import TributaryDemo
@testable import TributaryProtocol

/// The coordinator's reads: per-peer limits, and a finish that lets no read outlive the store.
@Suite("ReaderPool: reads in flight and the end of the store")
struct ReaderPoolTests {
    let store = try! TemporaryStore(modelJSON: DemoData.modelJSON)
    let replies = Locked<[(requestID: UInt64, body: ReaderPool.Body)]>([])
    let peer = Data([1, 2, 3, 4, 5])

    func makePool(limit: Int = 4) -> ReaderPool {
        let replies = self.replies
        return ReaderPool(store: store.store, limitPerPeer: limit, logger: .init(label: "test")) { _, id, body in
            replies.withLock { $0.append((id, body)) }
        }
    }

    @Test("finish waits for the reads running; a read submitted after it is refused with SHUTTING_DOWN")
    func finishWaitsForRunningReads() async throws {
        let pool = makePool()
        let running = Task { await pool.run() }
        let release = Locked(false)
        let started = Locked(false)
        try pool.submit(peer: peer, requestID: 1) {
            {
                started.withLock { $0 = true }
                while !release.value { try await Task.sleep(for: .milliseconds(5)) }
                return .statusReply(.init())
            }
        }
        try await waitUntil("the read to start") { started.value }
        let finished = Locked(false)
        let finishing = Task {
            await pool.finish()
            finished.withLock { $0 = true }
        }
        try await waitUntil("finish to close the pool") { pool.isFinishing }
        // A read submitted while finishing is refused at once.
        let refused = try #require(
            throws: ProtocolError.self,
            performing: { try pool.submit(peer: peer, requestID: 2) { { .statusReply(.init()) } } })
        #expect(refused.code == .shuttingDown)
        #expect(!finished.value, "finish returned while a read was running")
        release.withLock { $0 = true }
        await finishing.value
        #expect(finished.value)
        await running.value
        #expect(replies.value.map(\.requestID) == [1])
        let error = try #require(
            throws: ProtocolError.self,
            performing: { try pool.submit(peer: peer, requestID: 3) { { .statusReply(.init()) } } })
        #expect(error.code == .shuttingDown)
    }

    @Test("a peer at its limit of reads in flight is refused, naming the limit; a finished read frees its place")
    func perPeerLimit() async throws {
        let pool = makePool(limit: 1)
        let running = Task { await pool.run() }
        let release = Locked(false)
        try pool.submit(peer: peer, requestID: 1) {
            {
                while !release.value { try await Task.sleep(for: .milliseconds(5)) }
                return .statusReply(.init())
            }
        }
        let error = try #require(
            throws: ProtocolError.self,
            performing: { try pool.submit(peer: peer, requestID: 2) { { .statusReply(.init()) } } })
        #expect(error.code == .tooManyRequests && error.message.contains("--max-pending-requests"))
        // Another peer is not held back by this one.
        try pool.submit(peer: Data([9]), requestID: 3) { { .statusReply(.init()) } }
        release.withLock { $0 = true }
        try await waitUntil("both reads answered") { replies.value.count == 2 }
        try pool.submit(peer: peer, requestID: 4) { { .statusReply(.init()) } }
        try await waitUntil("the next read answered") { replies.value.count == 3 }
        await pool.finish()
        await running.value
    }
}
