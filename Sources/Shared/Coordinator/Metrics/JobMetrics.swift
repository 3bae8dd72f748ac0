import Metrics

/// Job counters by kind, and each attempt's queue wait and run time, recorded by the router: it sees every job
/// pushed, every attempt go out (an assignment) and end (the ack of its completing save, a failure, its worker
/// lost, a timeout, a cancel). Used on the router's actor only.
final class JobMetrics {
    /// The attempts out now: their kind and when they went out.
    private var running: [Int64: (kind: String, since: ContinuousClock.Instant)] = [:]
    private var counters: [CounterKey: Counter] = [:]
    private var timers: [CounterKey: Metrics.Timer] = [:]

    private struct CounterKey: Hashable {
        let name: String
        let kind: String
    }

    func pushed(kinds: some Sequence<String>) {
        for kind in kinds { counter(MetricNames.jobsPushed, kind).increment() }
    }

    /// An attempt went out; it was due `waited` seconds before.
    func started(job id: Int64, kind: String, waited: Double) {
        running[id] = (kind, .now)
        counter(MetricNames.jobsStarted, kind).increment()
        timer(MetricNames.jobQueueWaitSeconds, kind).recordSeconds(max(0, waited))
    }

    /// The job's completing save committed.
    func done(job id: Int64) {
        guard let attempt = running.removeValue(forKey: id) else { return }
        counter(MetricNames.jobsDone, attempt.kind).increment()
        timer(MetricNames.jobRunSeconds, attempt.kind).record(duration: attempt.since.duration(to: .now))
    }

    /// The job's attempt failed; `dead` when the job died of it.
    func failed(job id: Int64, dead: Bool) {
        guard let attempt = running.removeValue(forKey: id) else { return }
        counter(MetricNames.jobsFailed, attempt.kind).increment()
        if dead { counter(MetricNames.jobsDead, attempt.kind).increment() }
    }

    /// The job was cancelled (queued or running).
    func cancelled(job id: Int64, kind: String) {
        running[id] = nil
        counter(MetricNames.jobsCancelled, kind).increment()
    }

    /// The attempt went back to the queue without counting (a graceful stop, a worker's goodbye).
    func handedBack(job id: Int64) {
        running[id] = nil
    }

    private func counter(_ name: String, _ kind: String) -> Counter {
        let key = CounterKey(name: name, kind: kind)
        if let counter = counters[key] { return counter }
        let counter = Counter(label: name, dimensions: [("kind", kind)])
        counters[key] = counter
        return counter
    }

    private func timer(_ name: String, _ kind: String) -> Metrics.Timer {
        let key = CounterKey(name: name, kind: kind)
        if let timer = timers[key] { return timer }
        let timer = Metrics.Timer(label: name, dimensions: [("kind", kind)])
        timers[key] = timer
        return timer
    }
}

extension Metrics.Timer {
    fileprivate func recordSeconds(_ seconds: Double) {
        recordNanoseconds(Int64(min(seconds, 1e9) * 1e9))
    }
}
