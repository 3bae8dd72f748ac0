import Foundation
import Testing

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryMessaging
@testable import TributaryProtocol

@Suite("Wire framing")
struct WireTests {
    @Test("an envelope survives framing and decoding")
    func roundTrip() throws {
        let envelope = Wire.envelope(7, .statusRequest(.init()))
        let frames = Wire.frames(envelope)
        #expect(frames[0] == Data("TRB1".utf8))
        #expect(try Wire.decode(frames[...]) == envelope)
    }

    @Test(
        "malformed frames are refused as MALFORMED_FRAME with what is wrong",
        arguments: [
            ([Data("TRB1".utf8)], "expected 2 frames"),
            ([Data("HTTP".utf8), Data()], "signature"),
            ([Data("TRB1".utf8), Data([0xFF, 0xFF, 0xFF])], "not a valid Envelope"),
        ])
    func malformed(frames: [Data], expected: String) throws {
        let error = try #require(throws: ProtocolError.self) { try Wire.decode(frames[...]) }
        #expect(error.code == .malformedFrame)
        #expect(error.message.contains(expected))
    }

    /// `count` numbered envelopes framed as a DEALER sends them: status requests, or job assignments carrying
    /// `padding` bytes of payload.
    func requests(_ count: Int, padding: Int = 0) -> [[Data]] {
        (1...count).map { id in
            let assignment = Tributary_V1_JobAssignment.with { $0.spec.payload = Data(count: padding) }
            return Wire.frames(
                Wire.envelope(UInt64(id), padding > 0 ? .jobAssignment(assignment) : .statusRequest(.init())))
        }
    }

    func decodeAll(_ messages: [[Data]], from index: Int = 0) throws -> [Tributary_V1_Envelope] {
        try messages.flatMap { try Wire.decodeEach($0[index...]).map { try $0.get().envelope } }
    }

    @Test("envelopes queued together for the coordinator travel packed, at most 256 a message, and arrive in order")
    func coalescedForCoordinator() throws {
        let messages = requests(300)
        let packed = EnvelopePacking.coalesce(messages)
        #expect(packed.map(\.count) == [257, 45], "the signature, then 256 and 44 envelopes")
        #expect(try decodeAll(packed) == messages.map { try Wire.decode($0[...]) })
        #expect(EnvelopePacking.coalesce(Array(messages.prefix(1))) == Array(messages.prefix(1)), "one goes as it was")
    }

    @Test("a batch stays within 64 KiB; a larger envelope travels alone, in its place")
    func coalescedBySize() throws {
        let messages = requests(3, padding: 30_000) + requests(1, padding: 100_000) + requests(2, padding: 10)
        let packed = EnvelopePacking.coalesce(messages)
        #expect(packed.map { $0.count - 1 } == [2, 1, 1, 2])
        #expect(
            packed.allSatisfy {
                $0.dropFirst().reduce(0) { $0 + $1.count } <= EnvelopePacking.maximumBytes || $0.count == 2
            })
        #expect(try decodeAll(packed) == messages.map { try Wire.decode($0[...]) })
    }

    @Test("a ROUTER packs per peer that reads batches, keeping each peer's order; other peers' messages go as queued")
    func coalescedPerPeer() throws {
        let (a, b, c) = (Data("a".utf8), Data("b".utf8), Data("c".utf8))
        let envelopes = requests(6)
        let odd = [a, Data("not the protocol".utf8)]
        let messages: [[Data]] = [
            [a] + envelopes[0], [b] + envelopes[1], [c] + envelopes[2], [a] + envelopes[3], odd, [a] + envelopes[4],
            [b] + envelopes[5],
        ]
        let packed = EnvelopePacking.coalesce(messages, accepts: { $0 != c })
        let byPeer = Dictionary(grouping: packed, by: { $0[0] })
        #expect(byPeer[c] == [[c] + envelopes[2]], "a peer that does not read batches gets each message as it was")
        #expect(byPeer[a]?.map(\.count) == [4, 2, 3], "two packed, the odd message, then the one after it")
        #expect(try decodeAll(byPeer[a]!.filter { $0.count > 2 }, from: 1).map(\.requestID) == [1, 4, 5])
        #expect(try decodeAll(byPeer[b]!, from: 1).map(\.requestID) == [2, 6])
    }

    @Test("replies gathered while a commit is answered go packed per worker that reads batches, one by one to others")
    func replyBatchPerPeer() throws {
        let (a, b) = (Data("a".utf8), Data("b".utf8))
        var batch = ReplyPack()
        for id in 1...600 { batch.add(Wire.envelope(UInt64(id), .heartbeat(.init())), for: id % 3 == 0 ? b : a) }
        let messages = batch.messages(batching: { $0 == a })
        let toA = messages.filter { $0[0] == a }
        #expect(toA.map(\.count) == [258, 146], "the routing id and signature, then 256 and 144 envelopes")
        #expect(try decodeAll(toA, from: 1).map(\.requestID) == (1...600).filter { $0 % 3 != 0 }.map(UInt64.init))
        let toB = messages.filter { $0[0] == b }
        #expect(toB.count == 200 && toB.allSatisfy { $0.count == 3 }, "a peer that does not read batches gets one each")
        #expect(try decodeAll(toB, from: 1).map(\.requestID) == (1...200).map { UInt64($0 * 3) })
    }

    @Test("an unreadable envelope in a batch is named by its frame; the others decode")
    func batchWithBadEnvelope() throws {
        let good = try Wire.envelope(1, .statusRequest(.init())).serializedData()
        let decoded = try Wire.decodeEach([Wire.signature, good, Data([0xFF, 0x01]), good][...])
        #expect(decoded.count == 3)
        #expect((try? decoded[0].get().envelope.requestID) == 1)
        #expect((try? decoded[2].get().bytes) == good.count)
        guard case .failure(let error) = decoded[1] else {
            Issue.record("the second envelope decoded")
            return
        }
        #expect(error.code == .malformedFrame && error.message.contains("frame 2"))
        let tooMany = [Wire.signature] + Array(repeating: good, count: EnvelopePacking.maximumEnvelopes + 1)
        let refused = try #require(throws: ProtocolError.self) { try Wire.decodeEach(tooMany[...]) }
        #expect(refused.message.contains("at most 256 envelopes, got 257"))
    }

    @Test("NDJSON is cut into chunks of whole lines, skipping blank ones")
    func chunking() {
        let data = Data("{\"a\":1}\n\n{\"a\":2}\r\n{\"a\":3}\n{\"a\":4}".utf8)
        let chunks = NDJSONChunker.chunks(of: data, rowsPerJob: 3)
        #expect(chunks.map(\.rows) == [3, 1])
        #expect(String(decoding: chunks[1].payload, as: UTF8.self) == "{\"a\":4}\n")
    }

    @Test("loopback endpoints are told from ones reachable from elsewhere")
    func loopbackEndpoints() {
        for endpoint in [
            "tcp://127.0.0.1:7400", "tcp://127.9.8.7:*", "tcp://localhost:1", "tcp://[::1]:7400", "tcp://lo:7400",
            "ipc:///tmp/tributary.sock", "inproc://x",
        ] {
            #expect(Endpoints.isLoopback(endpoint), "\(endpoint)")
        }
        for endpoint in [
            "tcp://0.0.0.0:7400", "tcp://*:7400", "tcp://10.0.0.5:7400", "tcp://eth0:7400", "tcp://[::]:7400",
            "tcp://127.0.0.1.evil.com:1", "tcp://1270.0.0.1:1", "pgm://eth0;239.192.1.1:5555", "tcp://noport",
        ] {
            #expect(!Endpoints.isLoopback(endpoint), "\(endpoint)")
        }
    }
}
