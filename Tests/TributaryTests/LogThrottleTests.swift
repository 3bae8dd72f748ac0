import Foundation
import Logging
import Testing

@testable import TributaryCoordinator

@Suite("LogThrottle: one peer cannot flood the log")
struct LogThrottleTests {
    let entries = Locked<[RecordingLogHandler.Entry]>([])
    var logger: Logger { RecordingLogHandler.logger(into: entries) }
    let start = ContinuousClock.now
    let flooder = Data([1, 2, 3, 4, 5])

    @Test("past the burst a peer's messages of one kind are counted, and the count is logged when the window ends")
    func burstThenCount() {
        var throttle = LogThrottle()
        for i in 0..<1_000 {
            throttle.log(
                "malformed message from peer", peer: flooder, kind: "MALFORMED_FRAME",
                metadata: ["error": "frame \(i)"], to: logger, now: start + .milliseconds(i))
        }
        #expect(entries.value.count == 5)
        #expect(entries.value.allSatisfy { $0.metadata["peer"] == "0102030405" })
        throttle.flush(to: logger, now: start + .seconds(5))
        #expect(entries.value.count == 5, "the window has not ended")
        throttle.flush(to: logger, now: start + .seconds(11))
        let summary = entries.value.last
        #expect(summary?.message == "similar messages suppressed")
        #expect(summary?.metadata["suppressed"] == "995" && summary?.metadata["last"] == "frame 999")
        #expect(throttle.suppressedCount == 0)
    }

    @Test("other peers and other kinds keep their own budget")
    func separateBudgets() {
        var throttle = LogThrottle()
        for i in 0..<20 {
            throttle.log("m", peer: flooder, kind: "A", metadata: [:], to: logger, now: start + .milliseconds(i))
        }
        throttle.log("m", peer: flooder, kind: "B", metadata: [:], to: logger, now: start + .milliseconds(30))
        throttle.log("m", peer: Data([9]), kind: "A", metadata: [:], to: logger, now: start + .milliseconds(31))
        #expect(entries.value.count == 7)
    }

    @Test("a new window after the last one ended logs again and reports what the last one suppressed")
    func nextWindow() {
        var throttle = LogThrottle()
        for i in 0..<8 {
            throttle.log("m", peer: flooder, kind: "A", metadata: [:], to: logger, now: start + .milliseconds(i))
        }
        throttle.log("m", peer: flooder, kind: "A", metadata: [:], to: logger, now: start + .seconds(12))
        #expect(entries.value.map(\.message) == Array(repeating: "m", count: 5) + ["similar messages suppressed", "m"])
        #expect(entries.value[5].metadata["suppressed"] == "3")
    }

    @Test("past the most peers tracked, further peers share one budget per kind")
    func boundedPeers() {
        var throttle = LogThrottle()
        throttle.maximumKeys = 4
        for peer in 0..<100 {
            throttle.log(
                "m", peer: Data([UInt8(peer)]), kind: "A", metadata: [:], to: logger,
                now: start + .milliseconds(peer))
        }
        #expect(entries.value.count == 4 + 5)
        #expect(entries.value.last?.metadata["peer"] == "other peers")
    }
}
