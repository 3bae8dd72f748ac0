import Foundation
import Synchronization
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryProtocol
import ZeroMQ

/// The `job latency` figure: one empty job at a time, from its push to its end (`done`) seen on the feed's `$jobs`
/// topic, through a coordinator with one local worker. Its limit is what such a job needs at least: three round trips
/// and three synced commits (the push committed and answered; the lease committed and the job sent to the worker; the
/// completing save committed and answered, its end published), each a ZeroMQ round trip plus a one-row commit through
/// SQLite's C API, measured in the same run.
struct JobLatencyBenchmark {
    let jobs: Int
    let directory: URL

    /// Each job's time from the push's call to its end arriving on the feed.
    func run() async throws -> [Duration] {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: directory.appendingPathComponent("job-latency"),
            arguments: ["--workers", "1", "--log-level", "warning"]
        ).process
        let ends = try JobEnds(feed: coordinator.feedEndpoint)
        let client = try JobClient(endpoint: coordinator.listenEndpoint)
        do {
            while try await client.status().workers.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            await ends.live()
            let spec = JobSpec(kind: NoopJobHandler.kindName)
            var latencies: [Duration] = []
            latencies.reserveCapacity(jobs)
            // The first 20 warm the worker, the connections and the statements, and are not counted.
            for index in 0..<(jobs + 20) {
                let started = ContinuousClock.now
                let id = try await client.push([spec]).ids[0]
                let ended = await ends.end(of: id)
                if index >= 20 { latencies.append(ended - started) }
            }
            await client.close()
            ends.close()
            await coordinator.stop()
            return latencies
        } catch {
            await client.close()
            ends.close()
            await coordinator.stop()
            throw error
        }
    }
}

/// The ends of jobs as the feed's `$jobs` topic publishes them, received on a thread of its own (a blocking receive)
/// and stamped as they arrive.
private final class JobEnds: Sendable {
    private struct State {
        /// When each ended job's end arrived, until taken.
        var ended: [Int64: ContinuousClock.Instant] = [:]
        /// Whether a heartbeat arrived: the subscription is live.
        var live = false
        /// The waiter for a job's end, or for the first heartbeat (id 0).
        var waiter: (id: Int64, continuation: CheckedContinuation<ContinuousClock.Instant, Never>)?
    }

    private let state = Mutex(State())
    private let stopped = Atomic(false)

    init(feed: String) throws {
        let context = try ZMQContext.shared()
        // Handed to the receiving thread below, which is then its only user (thread start is the memory barrier).
        nonisolated(unsafe) let socket = try context.makeSocket(.sub)
        try socket.subscribe(Wire.jobsTopic)
        try socket.subscribe(Wire.heartbeatTopic)
        try socket.setReceiveTimeout(milliseconds: 100)
        try socket.connect(feed)
        let receiver = Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                guard let frames = try? socket.receive(), frames.count == 2 else { continue }
                let arrived = ContinuousClock.now
                let topic = String(decoding: frames[0], as: UTF8.self)
                let resumed: (CheckedContinuation<ContinuousClock.Instant, Never>, ContinuousClock.Instant)? =
                    state.withLock { state in
                        if topic == Wire.heartbeatTopic {
                            state.live = true
                            guard let waiter = state.waiter, waiter.id == 0 else { return nil }
                            state.waiter = nil
                            return (waiter.continuation, arrived)
                        }
                        guard let progress = try? Tributary_V1_JobProgress(serializedBytes: frames[1]),
                            progress.state == JobState.done.rawValue
                        else { return nil }
                        let id = Int64(clamping: progress.jobID)
                        if let waiter = state.waiter, waiter.id == id {
                            state.waiter = nil
                            return (waiter.continuation, arrived)
                        }
                        state.ended[id] = arrived
                        return nil
                    }
                if let (continuation, instant) = resumed { continuation.resume(returning: instant) }
            }
            socket.close()
        }
        receiver.start()
    }

    /// Waits for the first heartbeat: from then on no end is missed.
    func live() async {
        _ = await withCheckedContinuation { continuation in
            let now: ContinuousClock.Instant? = state.withLock { state in
                if state.live { return .now }
                state.waiter = (0, continuation)
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// When job `id`'s end arrived (waiting for it).
    func end(of id: Int64) async -> ContinuousClock.Instant {
        await withCheckedContinuation { continuation in
            let arrived: ContinuousClock.Instant? = state.withLock { state in
                if let arrived = state.ended.removeValue(forKey: id) { return arrived }
                state.waiter = (id, continuation)
                return nil
            }
            if let arrived { continuation.resume(returning: arrived) }
        }
    }

    func close() { stopped.store(true, ordering: .relaxed) }
}
