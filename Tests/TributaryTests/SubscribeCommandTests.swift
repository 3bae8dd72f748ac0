import Foundation
import Testing

@testable import TributaryClient
@testable import TributaryDemo

/// `tributary subscribe --durable`: the position the coordinator stores is the last event printed.
@Suite("Integration: a durable subscriber's stored position", .serialized)
struct SubscribeCommandTests {
    /// The seq of a JSON event line.
    static func seq(_ line: String) -> UInt64? {
        guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return nil
        }
        return (event["seq"] as? NSNumber)?.uint64Value
    }

    @Test("the position is stored once events pause, and on SIGTERM before exiting 0")
    func positionStoredOnPauseAndSignal() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let rows = DemoData.pullRequests(count: 2_000, users: 40)
        _ = try await client.finish(try await client.pushImport(rows, rowsPerJob: 20).batch)
        let burstEnd = try await client.status().lastSeq

        let subscriber = try StartedProcess.start(
            "tributary",
            [
                "subscribe", "--durable", "d", "--since", "0", "--format", "json", "--feed",
                coordinator.process.feedEndpoint, "--listen", coordinator.process.listenEndpoint,
            ])
        defer { subscriber.kill() }
        _ = try await subscriber.waitForOutput { Self.seq($0) == burstEnd }
        // The burst printed, nothing more comes: the position of its last event is stored, not an earlier one.
        try await waitUntil("the position to reach \(burstEnd)", timeout: .seconds(10)) {
            try await client.subscribers().first?.position == burstEnd
        }

        let more = DemoData.pullRequests(count: 400, users: 40, startingAt: 2_001)
        _ = try await client.finish(try await client.pushImport(more, rowsPerJob: 20).batch)
        let last = try await client.status().lastSeq
        _ = try await subscriber.waitForOutput { Self.seq($0) == last }
        kill(subscriber.pid, SIGTERM)
        #expect(try await subscriber.waitForExit(timeout: .seconds(15)) == 0)
        #expect(try await client.subscribers().map(\.position) == [last])
        await client.close()
    }
}
