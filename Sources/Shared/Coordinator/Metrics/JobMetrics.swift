import Metrics

/// Job counters by kind, and each attempt's queue wait and run time, recorded by the router: it sees every job
/// pushed, every attempt go out (an assignment) and end (the ack of its completing save, a failure, its worker
/// lost, a timeout, a cancel). Used on the router's actor only.
final class JobMetrics {
    /// The attempts out now: their kind (as labelled), number and when they went out.
    private var running: [Int64: (kind: String, attempt: Int, since: ContinuousClock.Instant)] = [:]
    private var counters: [CounterKey: Counter] = [:]
    private var timers: [CounterKey: Metrics.Timer] = [:]
    /// The kinds whose counters exist.
    private var kinds: Set<String> = []

    private struct CounterKey: Hashable {
        let name: String
        let kind: String
    }

    func pushed(kinds: some Sequence<String>) {
        for kind in kinds { counter(MetricNames.jobsPushed, label(kind)).increment() }
    }

    /// Kinds are named by clients: past ``maximumKinds`` distinct ones, the rest are counted as `other`.
    static let maximumKinds = 64

    private func label(_ kind: String) -> String {
        kinds.contains(kind) || kinds.count < Self.maximumKinds ? kind : "other"
    }

    /// Every counter of a kind, made (at 0) when the kind is first seen: a counter that appears with its first
    /// event would hide that event from Prometheus' `increase()`.
    private func introduce(_ kind: String) {
        guard kinds.insert(kind).inserted else { return }
        for name in [
            MetricNames.jobsPushed, MetricNames.jobsStarted, MetricNames.jobsDone, MetricNames.jobsFailed,
            MetricNames.jobsDead, MetricNames.jobsCancelled,
        ] {
            counters[CounterKey(name: name, kind: kind)] = Counter(label: name, dimensions: [("kind", kind)])
        }
    }

    /// An attempt went out; it was due `waited` seconds before.
    func started(job id: Int64, attempt: Int, kind: String, waited: Double) {
        let kind = label(kind)
        running[id] = (kind, attempt, .now)
        counter(MetricNames.jobsStarted, kind).increment()
        timer(MetricNames.jobQueueWaitSeconds, kind).recordSeconds(max(0, waited))
    }

    /// The job's completing save committed.
    /// - Returns: whether the attempt was one this process sent out (and so counted now).
    @discardableResult
    func done(job id: Int64, attempt number: Int) -> Bool {
        guard let attempt = running[id], attempt.attempt == number else { return false }
        running[id] = nil
        counter(MetricNames.jobsDone, attempt.kind).increment()
        timer(MetricNames.jobRunSeconds, attempt.kind).record(duration: attempt.since.duration(to: .now))
        return true
    }

    /// The job's attempt failed; `dead` when the job died of it. Nil `number`: whichever attempt is out.
    func failed(job id: Int64, attempt number: Int?, dead: Bool) {
        guard let attempt = running[id], number == nil || attempt.attempt == number else { return }
        running[id] = nil
        counter(MetricNames.jobsFailed, attempt.kind).increment()
        if dead { counter(MetricNames.jobsDead, attempt.kind).increment() }
    }

    /// The job was cancelled (queued or running).
    func cancelled(job id: Int64, kind: String) {
        running[id] = nil
        counter(MetricNames.jobsCancelled, label(kind)).increment()
    }

    /// The attempt went back to the queue without counting (a graceful stop, a worker's goodbye).
    func handedBack(job id: Int64) {
        running[id] = nil
    }

    private func counter(_ name: String, _ kind: String) -> Counter {
        let key = CounterKey(name: name, kind: kind)
        if let counter = counters[key] { return counter }
        introduce(kind)
        return counters[key] ?? Counter(label: name, dimensions: [("kind", kind)])
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
