import Foundation
import Testing
import ZeroMQ

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// A read that must see the saves before it (a fetch) answers after them even when they arrive in the same message:
/// a message of several envelopes is handled as if each had come alone (docs/protocol.md §1.4, §7).
@Suite("Reads after saves in one message")
struct ReadAfterSavesTests {
    @Test("a context's save and a fetch packed in one message: the fetch sees the save, every time, after its ack")
    func fetchInTheSaveMessage() async throws {
        let directory = try TemporaryDirectory()
        let (servers, ready) = AsyncStream<CoordinatorServer>.makeStream()
        let serving = Task {
            try await serve(storePath: directory.path("store.sqlite"), model: DemoData.model) { ready.yield($0) }
        }
        defer { serving.cancel() }
        var iterator = servers.makeAsyncIterator()
        let server = try #require(await iterator.next())
        let context = try ZMQContext()
        defer { context.terminate() }
        let peer = try RawWorker(context: context, endpoint: server.listenEndpoint)
        defer { peer.socket.close() }
        for round in 1...30 {
            let save = Tributary_V1_SaveChanges.with {
                $0.saveID = UUID().bytes
                $0.changes.batches = [.inserting("User", "login", "packed-\(round)")]
            }
            let fetch = Tributary_V1_FetchRequest.with { $0.entity = "User" }
            let saveID = UInt64(round * 2)
            let fetchID = saveID + 1
            let envelopes = [Wire.envelope(saveID, .saveChanges(save)), Wire.envelope(fetchID, .fetchRequest(fetch))]
            try peer.socket.send([Wire.signature] + envelopes.map { try $0.serializedData() })
            // Awaited on a thread of its own: the coordinator runs in this process, and a pool thread blocked in the
            // wait could keep it from answering while other tests hold the rest of the pool.
            // The socket is used by that thread alone until it returns.
            nonisolated(unsafe) let receiver = peer
            let answers = try await onOwnThread { [try receiver.receive(), try receiver.receive()] }
            var replies: [UInt64] = []
            var fetched: Int?
            for reply in answers {
                replies.append(reply.requestID)
                switch reply.body {
                case .saveAck: #expect(reply.requestID == saveID)
                case .fetchReply(let answer): fetched = answer.objects.ids.count / 16
                default: Issue.record("unexpected reply \(reply)")
                }
            }
            #expect(replies == [saveID, fetchID], "the save's ack first, then the fetch")
            #expect(fetched == round, "round \(round): the fetch saw \(fetched ?? -1) users")
        }
    }
}
