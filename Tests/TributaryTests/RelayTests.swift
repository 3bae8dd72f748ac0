import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// `tributary relay` between a coordinator and its subscribers: the feed through libzmq's proxy, the requests
/// forwarded. Real processes: a coordinator with workers, the relay, `tributary subscribe` behind it.
@Suite("Relay: a feed served downstream from one subscription upstream", .serialized)
struct RelayTests {
    /// Starts `tributary relay` from the given upstream endpoints to free loopback ports; returns it once it serves,
    /// with the feed and listen endpoints it printed.
    static func startRelay(upstreamFeed: String, upstreamListen: String) async throws -> (
        StartedProcess, feed: String, listen: String
    ) {
        let relay = try StartedProcess.start(
            "tributary",
            [
                "relay", "--upstream-feed", upstreamFeed, "--upstream-listen", upstreamListen, "--feed",
                "tcp://127.0.0.1:*", "--listen", "tcp://127.0.0.1:*",
            ])
        let banner: String
        do {
            banner = try await relay.waitForOutput { $0.hasPrefix("tributary relay feed=") }
        } catch {
            relay.kill()
            throw error
        }
        let fields = Dictionary(
            uniqueKeysWithValues: banner.split(separator: " ").dropFirst(2).compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            })
        guard let feed = fields["feed"], let listen = fields["listen"] else {
            relay.kill()
            throw TimedOut(what: "the relay's endpoints in \(banner)")
        }
        return (relay, feed, listen)
    }

    @Test(
        "subscribers behind a relay (live from seq 0, filtered, and one catching up from history afterwards) see every commit once, in order; the relay refuses anything but feed requests"
    )
    func subscribersBehindRelay() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        defer { Task { await coordinator.process.stop() } }
        let (relay, relayFeed, relayListen) = try await Self.startRelay(
            upstreamFeed: coordinator.process.feedEndpoint, upstreamListen: coordinator.process.listenEndpoint)
        defer { relay.kill() }
        let throughRelay = ["--feed", relayFeed, "--listen", relayListen]

        let live = try SubscriberProcess(["--since", "0"] + throughRelay)
        let users = try SubscriberProcess(["--since", "0", "--entity", "User"] + throughRelay)
        defer { [live, users].forEach { $0.process.kill() } }
        for subscriber in [live, users] {
            _ = try await subscriber.process.waitForError(containing: "subscribed")
        }

        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 20_000, users: 400), rowsPerJob: 500)
        _ = try await client.finish(pushed.batch, timeout: .seconds(120))
        let lastSeq = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try Int.fetchOne(db, sql: "SELECT MAX(seq) FROM tributary_history") ?? 0
        }
        #expect(lastSeq >= 40)
        try await waitUntil("the live subscriber to reach seq \(lastSeq)", timeout: .seconds(60)) {
            live.seen.value.last == lastSeq
        }
        #expect(live.seen.value == Array(1...lastSeq), "the live subscriber missed or repeated a commit")
        // The filtered subscriber: the commits that touched User, as the coordinator's history has them.
        let userSeqs = Array(
            Set(
                try await client.history(
                    after: FeedPosition(seq: 0), filter: FeedFilter(entities: ["User"]), maxCommits: 10_000
                ).parts.map {
                    Int($0.seq)
                }
            ).sorted())
        #expect(!userSeqs.isEmpty)
        try await waitUntil("the User subscriber to see its commits", timeout: .seconds(60)) {
            users.seen.value.count >= userSeqs.count
        }
        #expect(users.seen.value == userSeqs, "the relay's filtered subscriber saw other commits than the history's")

        // Afterwards: the whole feed from history, through the relay's forwarded requests.
        let late = try SubscriberProcess(["--since", "0", "--latency"] + throughRelay)
        defer { late.process.kill() }
        try await waitUntil("the late subscriber to catch up", timeout: .seconds(60)) {
            late.seen.value.last == lastSeq
        }
        #expect(late.seen.value == Array(1...lastSeq))
        // --latency: on SIGINT, how long its events took from their commit, on standard error.
        kill(late.process.pid, SIGINT)
        let latency = try await late.process.waitForError(containing: "latency:")
        #expect(latency.hasPrefix("latency: \(lastSeq) events, p50 "), "\(latency)")

        // Anything but the feed's requests is refused, naming the coordinator as the place to send it.
        let push = try await Binaries.run("tributary", ["push", "job", "--kind", "noop", "--listen", relayListen])
        #expect(push.status != 0 && push.error.contains("a relay forwards the feed's requests only"), "\(push.error)")
        let status = try await Binaries.run("tributary", ["status", "--listen", relayListen])
        #expect(status.status == 0 && status.output.contains("last seq  \(lastSeq)"), "\(status.output)")

        kill(relay.pid, SIGTERM)
        #expect(try await relay.waitForExit() == 0, "the relay did not stop cleanly on SIGTERM")
    }

    @Test("the relay refuses to serve beyond loopback without --insecure, and names the flag")
    func refusesOpenEndpoints() async throws {
        let refused = try await Binaries.run(
            "tributary",
            [
                "relay", "--upstream-feed", "tcp://127.0.0.1:1", "--upstream-listen", "tcp://127.0.0.1:2", "--feed",
                "tcp://0.0.0.0:7501",
            ])
        #expect(refused.status != 0 && refused.error.contains("--feed tcp://0.0.0.0:7501 is not a loopback address"))
    }
}
