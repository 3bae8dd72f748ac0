import Foundation
import Logging
import Synchronization
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import ZeroMQ

/// The feed-latency figure: from a worker's `save()` call to a subscriber receiving that commit's didSave.
/// The worker and the subscriber run in this process (one clock); the coordinator is a real process.
struct LatencyBenchmark {
    let saves: Int
    let directory: URL
    let logger: Logger

    /// Latencies of `saves` saves, paced at `rate` saves per second (unpaced when nil), and the rate reached, on a
    /// store of its own named `name` (a store used before would hold the probe's users already, and its saves
    /// would then change nothing the feed shows).
    func run(rate: Double?, name: String) async throws -> (latencies: [Duration], savesPerSecond: Double) {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: directory.appendingPathComponent("latency-\(name)"),
            arguments: ["--log-level", "warning"]
        ).process
        let recorder = SaveRecorder()
        var configuration = WorkerConfiguration()
        configuration.endpoint = coordinator.listenEndpoint
        configuration.register(LatencyProbe(recorder: recorder))
        let worker = Task { [configuration, logger] in
            try await WorkerService(configuration: configuration, logger: logger).run()
        }
        defer { worker.cancel() }
        do {
            var options = ChangeFeed.Options()
            options.filter = FeedFilter(entities: ["User"])
            let feed = try ChangeFeed(
                feed: coordinator.feedEndpoint, jobs: coordinator.listenEndpoint, options: options)
            var arrivals: [UInt64: ContinuousClock.Instant] = [:]
            var events = feed.makeAsyncIterator()
            guard case .caughtUp = try await events.next() else { throw BaselineError("the feed did not connect") }
            let client = try JobClient(endpoint: coordinator.listenEndpoint)
            let spec = JobSpec(
                kind: LatencyProbe.kindName,
                arguments: ["saves": String(saves), "rate": rate.map { String($0) } ?? "0"],
                total: UInt64(saves))
            let pushed = try await client.push([spec])
            while arrivals.count < saves, let event = try await events.next() {
                if case .didSave(let save) = event { arrivals[save.seq] = .now }
            }
            // Let the probe complete its job before its worker is stopped.
            _ = try await client.waitForBatch(pushed.batch, every: .milliseconds(10))
            let sent = recorder.sent
            let latencies = sent.compactMap { seq, start in arrivals[seq].map { $0 - start } }
            let span = (sent.values.max() ?? .now) - (sent.values.min() ?? .now)
            await client.close()
            await feed.close()
            worker.cancel()
            await coordinator.stop()
            return (latencies, Double(saves - 1) / max(span.seconds, 1e-9))
        } catch {
            await coordinator.stop()
            throw error
        }
    }

    /// The baseline: round trips of a small message between a DEALER and a ROUTER over TCP loopback.
    static func zeroMQRoundTrips(_ count: Int) throws -> [Duration] {
        let context = try ZMQContext()
        // Handed to the echo thread below, which is then its only user (thread start is the memory barrier).
        nonisolated(unsafe) let router = try context.makeSocket(.router)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        let dealer = try context.makeSocket(.dealer)
        try dealer.connect(endpoint)
        let echo = Thread {
            for _ in 0..<count {
                guard let message = try? router.receive() else { return }
                try? router.send(message)
            }
            router.close()
        }
        echo.start()
        var roundTrips: [Duration] = []
        roundTrips.reserveCapacity(count)
        let payload = [Data(repeating: 1, count: 64)]
        for _ in 0..<count {
            let start = ContinuousClock.now
            try dealer.send(payload)
            _ = try dealer.receive()
            roundTrips.append(.now - start)
        }
        dealer.close()
        return roundTrips
    }
}

/// Records when each save was called, by the sequence number it committed as.
final class SaveRecorder: Sendable {
    private let starts = Mutex<[UInt64: ContinuousClock.Instant]>([:])
    private let nextLogin = Mutex(0)

    /// A login greater than every one given before, for the probes of this process (so that each new user sorts
    /// first by login, descending, whichever probe saved it).
    func login() -> String {
        "probe-"
            + String(
                format: "%010d",
                nextLogin.withLock { next in
                    defer { next += 1 }
                    return next
                })
    }

    func record(seq: UInt64, startedAt start: ContinuousClock.Instant) {
        starts.withLock { $0[seq] = start }
    }

    var sent: [UInt64: ContinuousClock.Instant] { starts.withLock { $0 } }
}

/// A job that saves one new User per save, paced at a rate, recording when each `save()` was called.
struct LatencyProbe: JobHandler {
    static let kindName = "latency-probe"
    let kind = LatencyProbe.kindName
    let recorder: SaveRecorder

    func run(_ job: JobRun) async throws {
        let saves = Int(job.spec.arguments["saves"] ?? "") ?? 0
        let rate = Double(job.spec.arguments["rate"] ?? "") ?? 0
        let context = job.makeContext()
        let started = ContinuousClock.now
        for index in 0..<saves {
            if rate > 0 { try await Task.sleep(until: started + .seconds(Double(index) / rate)) }
            try await context.perform { context in
                _ = try context.findOrCreate("User", matching: ["login": .string(recorder.login())])
            }
            let start = ContinuousClock.now
            let receipt = try await job.save(context, progress: UInt64(index + 1))
            recorder.record(seq: receipt.seq, startedAt: start)
        }
        try await job.complete(context, progress: UInt64(saves))
    }
}

/// Percentiles of a set of durations.
struct Percentiles {
    let p50: Duration
    let p99: Duration
    let max: Duration

    init(_ values: [Duration]) {
        let sorted = values.sorted()
        func at(_ fraction: Double) -> Duration {
            sorted.isEmpty ? .zero : sorted[Swift.min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
        }
        p50 = at(0.5)
        p99 = at(0.99)
        max = sorted.last ?? .zero
    }
}
