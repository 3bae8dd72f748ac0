import Metrics

/// Job counters by kind, and each attempt's queue wait and run time, recorded by the router: it sees every job
/// pushed, every attempt go out (an assignment) and fail, and every job end (``JobEnding``: its completing save, a
/// death, a cancel, a parent's failure settling it). Used on the router's actor only.
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

    /// The attempt failed (reported by its worker, lost with it, or timed out); nil `number`: whichever attempt is
    /// out. Counted only for an attempt this process sent out. Its job's death, if it died of it, is an ending
    /// (``ended(_:)``).
    func attemptFailed(job id: Int64, attempt number: Int?) {
        guard let attempt = running[id], number == nil || attempt.attempt == number else { return }
        running[id] = nil
        attempt.kind.failed.increment()
    }

    /// A job ended, however it ended (``JobEnding``): counted as done (with its run time, for an attempt this
    /// process sent out), dead or cancelled.
    /// - Returns: whether it was counted (a job done by an attempt another process sent out is not: its kind is
    ///   not known here).
    @discardableResult
    func ended(_ ending: JobEnding) -> Bool {
        switch ending.state {
        case .done:
            guard let attempt = running[ending.id], attempt.attempt == ending.progress.attempt else { return false }
            running[ending.id] = nil
            attempt.kind.done.increment()
            attempt.kind.runTime.record(duration: attempt.since.duration(to: .now))
        case .dead:
            running[ending.id] = nil
            kind(ending.kind).dead.increment()
        case .cancelled:
            running[ending.id] = nil
            kind(ending.kind).cancelled.increment()
        case .waiting, .queued, .running:
            return false
        }
        return true
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
