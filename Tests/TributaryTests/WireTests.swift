import Foundation
import Testing

@testable import Tributary

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
