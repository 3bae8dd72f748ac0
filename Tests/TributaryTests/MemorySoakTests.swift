import Foundation
import Testing
import TributaryProtocol
import ZeroMQ

/// The coordinator's resident memory under a flood of bad and good frames from peers that come and go: after a
/// warm-up it stays within a bound, however many frames follow (nothing is kept per refused frame, per peer or per
/// save id, and a router behind a peer leaves the peer's messages in libzmq's bounded queue rather than buffering
/// them without limit).
@Suite("Memory: a flood of mixed frames", .serialized)
struct MemorySoakTests {
    /// Frames sent in all; resident memory is read after ``warmUp`` and every ``sampleEvery`` from then on.
    static let total = 30_000
    static let warmUp = 5_000
    static let sampleEvery = 2_500
    /// How far resident memory may rise above its level after the warm-up.
    static let bound = 40 << 20

    /// The frames of message `index`: one of several malformed ones, requests refused for what they carry, good
    /// requests, and now and then a frame of 1 MiB (junk, and a save too large to apply).
    static func frames(_ index: Int) throws -> [Data] {
        let requestID = UInt64(index + 1)
        func envelope(_ body: Tributary_V1_Envelope.OneOf_Body) throws -> Data {
            try Wire.envelope(requestID, body).serializedData()
        }
        if index % 100 == 99 {
            // 1 MiB that decodes as an envelope of half a million fields this version does not know.
            return [Wire.signature, Data(repeating: 0x78, count: 1 << 20)]
        }
        if index % 500 == 249 {
            let save = Tributary_V1_SaveChanges.with {
                $0.saveID = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
                $0.changes.batches = [
                    .with {
                        $0.entity = "User"
                        $0.columns = [
                            .with {
                                $0.name = "login";
                                $0.strings = Array(repeating: String(repeating: "a", count: 1024), count: 1024)
                            }
                        ]
                    }
                ]
            }
            return [Wire.signature, try envelope(.saveChanges(save))]
        }
        switch index % 10 {
        case 0: return [Data("garbage".utf8)]
        case 1: return [Wire.signature, Data([0xFF, 0x01, 0x02])]
        case 2:
            return [Wire.signature, try Wire.envelope(requestID, .statusRequest(.init())).serializedData().prefix(3)]
        case 3: return [Wire.signature, try Tributary_V1_Envelope.with { $0.requestID = requestID }.serializedData()]
        case 4:
            let save = Tributary_V1_SaveChanges.with {
                $0.saveID = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
            }
            return [Wire.signature, try envelope(.saveChanges(save))]
        case 5: return [Wire.signature, try envelope(.statusRequest(.init()))]
        case 6: return [Wire.signature, try envelope(.jobRequest(.with { $0.jobID = UInt64(index) * 7_919 }))]
        case 7: return [Wire.signature, try envelope(.pushJobs(.with { $0.jobs = [.with { $0.kind = "" }] }))]
        case 8: return [Wire.signature, try envelope(.heartbeat(.init()))]
        default: return [Wire.signature, try envelope(.versionRequest(.init()))]
        }
    }

    /// The resident memory of process `pid`, from `/proc/PID/status`.
    static func residentBytes(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kilobytes = try #require(line.split(separator: " ").dropFirst().first.flatMap { Int($0) })
        return kilobytes * 1024
    }

    @Test("30,000 mixed frames from peers that come and go: resident memory bounded after the warm-up")
    func residentMemoryBounded() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let pid = coordinator.process.pid
        let context = try ZMQContext()
        defer { context.terminate() }
        var socket: ZMQSocket?
        var samples: [(frames: Int, bytes: Int)] = []
        var answers = 0
        func drain() throws {
            while let socket, try socket.receive(dontWait: true) != nil { answers += 1 }
        }
        /// Sends a version request and reads answers until its own: everything sent before it was read.
        func settle(_ marker: UInt64) throws {
            guard let socket else { return }
            try socket.send(Wire.frames(Wire.envelope(marker, .versionRequest(.init()))))
            let deadline = ContinuousClock.now + .seconds(120)
            while ContinuousClock.now < deadline {
                guard try socket.waitForInput(milliseconds: 1_000), let reply = try socket.receive() else { continue }
                answers += 1
                if let envelope = try? Wire.decode(reply[...]), envelope.requestID == marker { return }
            }
            throw TimedOut(what: "the answer to version request \(marker)")
        }
        for index in 0..<Self.total {
            // A new peer every 10,000 frames, each flooding the coordinator as fast as it takes them in (what is
            // kept per peer would pile up too); each waits for its answers before it goes, as a client does.
            if index % 10_000 == 0 {
                try settle(UInt64(1 << 40 + index))
                socket?.close()
                let next = try context.makeSocket(.dealer)
                try next.setLinger(milliseconds: 0)
                try next.connect(coordinator.process.listenEndpoint)
                socket = next
            }
            try socket?.send(try Self.frames(index))
            try drain()
            if index + 1 >= Self.warmUp && (index + 1 - Self.warmUp) % Self.sampleEvery == 0 {
                samples.append((index + 1, try Self.residentBytes(pid)))
            }
        }
        try settle(1 << 42)
        samples.append((Self.total, try Self.residentBytes(pid)))
        socket?.close()

        let megabytes = samples.map { "\($0.frames): \($0.bytes >> 20) MB" }.joined(separator: ", ")
        print("resident memory after frames \(megabytes); \(answers) answers")
        let warm = try #require(samples.first).bytes
        for sample in samples.dropFirst() {
            #expect(sample.bytes - warm <= Self.bound, "after \(sample.frames) frames: \(megabytes)")
        }
        #expect(answers > 0, "the coordinator answered none of the frames")
        // The scrape reports the same process's memory.
        let url = try #require(coordinator.process.httpURL)
        let scrape = try await MetricsIntegrationTests.scrape(url)
        let reported = try #require(scrape.value("process_resident_memory_bytes"))
        #expect(reported > Double(warm / 2), "process_resident_memory_bytes \(reported), /proc \(warm)")
    }
}
