import Metrics

/// Job counters by kind, and each attempt's queue wait and run time, recorded by the router: it sees every job
/// pushed, every attempt go out (an assignment) and end (the ack of its completing save, a failure, its worker
/// lost, a timeout, a cancel). Used on the router's actor only.
final class JobMetrics {
    /// One kind's handles, made together (every counter at 0, so Prometheus' `increase()` sees a kind's first
    /// event) and found with one lookup.
    private final class Kind {
        let pushed: Counter
        let started: Counter
        let done: Counter
        let failed: Counter
        let dead: Counter
        let cancelled: Counter
        let runTime: Metrics.Timer
        let queueWait: Metrics.Timer

        init(_ kind: String) {
            let dimensions = [("kind", kind)]
            pushed = Counter(label: MetricNames.jobsPushed, dimensions: dimensions)
            started = Counter(label: MetricNames.jobsStarted, dimensions: dimensions)
            done = Counter(label: MetricNames.jobsDone, dimensions: dimensions)
            failed = Counter(label: MetricNames.jobsFailed, dimensions: dimensions)
            dead = Counter(label: MetricNames.jobsDead, dimensions: dimensions)
            cancelled = Counter(label: MetricNames.jobsCancelled, dimensions: dimensions)
            runTime = Metrics.Timer(label: MetricNames.jobRunSeconds, dimensions: dimensions)
            queueWait = Metrics.Timer(label: MetricNames.jobQueueWaitSeconds, dimensions: dimensions)
        }
    }

    /// The attempts out now: their kind's handles, their number and when they went out.
    private var running: [Int64: (kind: Kind, attempt: Int, since: ContinuousClock.Instant)] = [:]
    private var kinds: [String: Kind] = [:]

    /// Kinds are named by clients: past ``maximumKinds`` distinct ones, the rest are counted as `other`.
    static let maximumKinds = 64

    func pushed(kinds names: some Sequence<String>) {
        for name in names { kind(name).pushed.increment() }
    }

    /// An attempt went out; it was due `waited` seconds before.
    func started(job id: Int64, attempt: Int, kind name: String, waited: Double) {
        let kind = kind(name)
        running[id] = (kind, attempt, .now)
        kind.started.increment()
        kind.queueWait.recordNanoseconds(Int64(min(max(0, waited), 1e9) * 1e9))
    }

    /// The job's completing save committed.
    /// - Returns: whether the attempt was one this process sent out (and so counted now).
    @discardableResult
    func done(job id: Int64, attempt number: Int) -> Bool {
        guard let attempt = running[id], attempt.attempt == number else { return false }
        running[id] = nil
        attempt.kind.done.increment()
        attempt.kind.runTime.record(duration: attempt.since.duration(to: .now))
        return true
    }

    /// The job's attempt failed; `dead` when the job died of it. Nil `number`: whichever attempt is out.
    func failed(job id: Int64, attempt number: Int?, dead: Bool) {
        guard let attempt = running[id], number == nil || attempt.attempt == number else { return }
        running[id] = nil
        attempt.kind.failed.increment()
        if dead { attempt.kind.dead.increment() }
    }

    /// The job was cancelled (queued or running).
    func cancelled(job id: Int64, kind name: String) {
        running[id] = nil
        kind(name).cancelled.increment()
    }

    /// The attempt went back to the queue without counting (a graceful stop, a worker's goodbye).
    func handedBack(job id: Int64) {
        running[id] = nil
    }

    private func kind(_ name: String) -> Kind {
        if let kind = kinds[name] { return kind }
        let label = kinds.count < Self.maximumKinds ? name : "other"
        if let other = kinds[label] { return other }
        let kind = Kind(label)
        kinds[label] = kind
        return kind
    }
}
