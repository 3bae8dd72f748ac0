import ArgumentParser
import Foundation
import Synchronization
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryProtocol

/// `tributary subscribe`: print the change feed.
struct SubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Print one line per didSave event of the change feed, every commit exactly once and in order.",
        discussion: """
            Without --since or --durable, follows from the store's position when the subscription goes live, and
            prints "subscribed (seq N)" on standard error then. With --since, prints the history after SEQ first.
            With --durable, the coordinator remembers the position processed (a new name starts at the store's
            last commit) and keeps the history after it; `tributary subscribers` lists and deletes names.
            A gap in the live stream is filled from history. If the history after the position was pruned, the
            command fails with HISTORY_PRUNED (exit status 3), or with --snapshot prints a snapshot of the objects
            first. If the store's history is not the one followed (a power loss took back commits already printed,
            or the store was restored from a replica or a backup), it fails with FEED_REWRITTEN naming the first
            seq that may differ (exit status 4), or with --snapshot prints "feed rewritten from seq N" on standard
            error and a snapshot. A durable position (of the last event written to standard output) is stored as events pause,
            and on SIGTERM or SIGINT before exiting 0 (exit 1 if that takes over 15 s; 4 if the store's history
            no longer holds it).
            JSON lines: {"seq": N, "position": "N:EPOCH", ..., "inserted": [{"entity": "...", "id": "..."}],
            "updated": [...], "deleted": [...]}; hand "position" back to --since to resume.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, text
    }

    @Option(help: "Only events of this entity (repeat for several).")
    var entity: [String] = []

    @Option(help: "Only parts that set this attribute or relationship, or delete (repeat for several).")
    var attribute: [String] = []

    @Option(
        help: ArgumentHelp(
            "Resume after this position (SEQ, or SEQ:EPOCH as a JSON line's \"position\" gives it, so a rewritten history is told): print the history after it, then follow live.",
            valueName: "position"))
    var since: FeedPosition?

    @Option(help: "A durable subscriber name: resume from its stored position and store the new one as you go.")
    var durable: String?

    @Flag(help: "When the history to resume from was pruned, print a snapshot of the objects and go on from it.")
    var snapshot = false

    @Option(help: "Output format: json or text.")
    var format: Format = .text

    @Option(help: "Exit after this many events (default: follow for ever).")
    var count: Int?

    @Flag(
        help:
            "On exit, print on standard error how long events took from their commit to their line here (p50, p99, max)."
    )
    var latency = false

    @OptionGroup var source: FeedEndpointOption
    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        if let count, count <= 0 { throw ValidationError("--count must be positive") }
        if let durable, durable.isEmpty || durable.utf8.count > 200 {
            throw ValidationError("--durable needs a name of 1 to 200 bytes")
        }
        if let since, since.seq > UInt64(Int64.max) {
            throw ValidationError("--since must be at most \(Int64.max)")
        }
    }

    func run() async throws {
        var options = ChangeFeed.Options()
        options.filter = FeedFilter(entities: Set(entity), attributes: Set(attribute))
        options.since = since?.seq
        options.sinceEpoch = since?.epoch ?? 0
        options.durableName = durable
        options.snapshotWhenPruned = snapshot
        let feed = try ChangeFeed(
            feed: source.endpoint, jobs: jobs.endpoint, options: options, curve: try jobs.curveKeys())
        let json = format == .json
        let count = count
        let latencies = latency ? FeedLatencies() : nil
        defer { if let latencies { Terminal.error(latencies.summary) } }
        let stopped =
            try await StopSignals.run {
                try await Self.follow(feed, json: json, count: count, latencies: latencies)
            } == nil
        if stopped {
            // SIGTERM or SIGINT: every event printed counts as processed; store that position, then exit 0.
            do {
                try await feed.acknowledge()
            } catch {
                Terminal.error("Error: the position was not stored: \(error)")
                await feed.close()
                let rewritten = (error as? ChangeFeedError)?.protocolError?.code == .feedRewritten
                throw ExitCode(rewritten ? 4 : 1)
            }
        }
        await feed.close()
    }

    /// Prints the feed's events until `count` were printed (then acknowledges them) or the feed fails.
    private static func follow(_ feed: ChangeFeed, json: Bool, count: Int?, latencies: FeedLatencies?) async throws {
        var seen = 0
        do {
            for try await event in feed {
                switch event {
                case .caughtUp(let seq):
                    Terminal.error("subscribed to \(feed.feedEndpoint) (seq \(seq))")
                case .snapshot(let objects, let seq, let isLast):
                    for batch in objects { Terminal.line(Self.snapshotLine(batch, seq: seq, json: json)) }
                    if isLast {
                        let position = feed.resumePosition.map { " (resume with --since \($0))" } ?? ""
                        Terminal.error("snapshot complete at seq \(seq)\(position)")
                    }
                case .rewritten(let seq):
                    Terminal.error("feed rewritten from seq \(seq): the events printed from it on are not the store's")
                case .didSave(let save):
                    Terminal.line(json ? save.jsonLine : save.textLine)
                    latencies?.record(since: save.committedAt)
                    seen += 1
                    if let count, seen >= count {
                        try await feed.acknowledge()
                        return
                    }
                }
            }
        } catch let error as ChangeFeedError {
            await feed.close()
            Terminal.error("Error: \(error.message)")
            switch error.protocolError?.code {
            case .historyPruned: throw ExitCode(3)
            case .feedRewritten: throw ExitCode(4)
            default: throw ExitCode(1)
            }
        }
    }

    private static func snapshotLine(_ batch: Tributary_V1_EntityBatch, seq: UInt64, json: Bool) -> String {
        let rows = batch.ids.count / 16
        return json
            ? "{\"snapshot\":\(seq),\"entity\":\"\(batch.entity)\",\"objects\":\(rows)}"
            : "snapshot at seq \(seq)  \(batch.entity):\(rows)"
    }
}

/// `subscribe --latency`: how long each event took from its commit to its line.
final class FeedLatencies: Sendable {
    private let seconds = Mutex<[Double]>([])

    func record(since committed: Date) {
        let latency = Date().timeIntervalSince(committed)
        seconds.withLock { $0.append(latency) }
    }

    var summary: String {
        let sorted = seconds.withLock { $0 }.sorted()
        guard !sorted.isEmpty else { return "latency: no events" }
        func at(_ quantile: Double) -> String {
            let value = sorted[min(sorted.count - 1, Int((Double(sorted.count) * quantile).rounded(.up)) - 1)]
            return String(format: "%.1f ms", value * 1000)
        }
        return "latency: \(sorted.count) events, p50 \(at(0.5)), p99 \(at(0.99)), max \(at(1)) (commit to print)"
    }
}

extension FeedPosition: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
