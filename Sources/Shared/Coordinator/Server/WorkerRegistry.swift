import Foundation
import Synchronization
import TributaryCore
import TributaryProtocol

/// A worker the coordinator knows: who it is, how it is reached, and what it holds.
struct WorkerRecord {
    let id: String
    let routingID: Data
    let name: String
    let pid: Int32
    let heartbeatInterval: Duration
    let jobKinds: [String]
    /// The queues it serves, in order.
    let queues: [String]
    /// Their weights, or empty for strict order.
    let queueWeights: [UInt32]
    var lastSeen: ContinuousClock.Instant
    /// Jobs the worker asked for and has not been given yet.
    var credit: UInt32 = 0
    /// Jobs leased to the worker, with the attempt each was leased for.
    var jobs: [Int64: Int] = [:]
    /// Set while its jobs are handed back (it left or is taken for dead): it gets no more credit.
    var leaving = false

    var state: String { jobs.isEmpty ? "idle" : "busy" }
}

/// The connected workers, by routing id, in the order they arrived (dispatch goes round them in turn), with the
/// credit each has offered (WorkerRegistry+Credit.swift) and when each was last heard from.
struct WorkerRegistry {
    /// When each peer was last heard from, stamped by the socket loop's thread.
    let activity: PeerActivity
    private(set) var workers: [Data: WorkerRecord] = [:]
    private var order: [Data] = []
    private var nextNumber = 1
    /// Put before each id: empty for a coordinator alone (`w1`, `w2`, …); a cluster's primary puts its epoch
    /// (`e12-w1`: ``PrimaryReplication/workerIDPrefix``).
    let idPrefix: String
    private var nextDispatch = 0
    /// Failures of job attempts that workers reported while the store could not be written, to be written once it
    /// can (``WorkerSessions/retryRefusedWrites()``); their jobs stay the workers' meanwhile.
    var pendingFailures: [(failure: Tributary_V1_JobFailed, peer: Data)] = []
    /// Workers gone from the registry (their peer registered anew) whose jobs the store refused to take back, to be
    /// handed back once it can (``WorkerSessions/retryRefusedWrites()``).
    var pendingDepartures: [(worker: WorkerRecord, peer: Data, reason: String, handsBack: Bool)] = []

    mutating func register(
        routingID: Data, hello: Tributary_V1_WorkerHello, now: ContinuousClock.Instant
    ) -> WorkerRecord {
        // 0 (unset) means the default of 1 s; otherwise kept between 50 ms and 60 s.
        let milliseconds = hello.heartbeatIntervalMs == 0 ? 1000 : max(50, min(hello.heartbeatIntervalMs, 60_000))
        let interval = Duration.milliseconds(Int64(milliseconds))
        let record = WorkerRecord(
            id: "\(idPrefix)w\(nextNumber)", routingID: routingID, name: hello.name, pid: hello.pid,
            heartbeatInterval: interval,
            jobKinds: hello.jobKinds.isEmpty ? ["import"] : hello.jobKinds,
            queues: hello.queues.isEmpty ? [JobQueue.defaultName] : hello.queues, queueWeights: hello.queueWeights,
            lastSeen: now)
        nextNumber += 1
        workers[routingID] = record
        order.append(routingID)
        activity.track(routingID, heardAt: now)
        return record
    }

    init(activity: PeerActivity, idPrefix: String = "") {
        self.activity = activity
        self.idPrefix = idPrefix
    }

    /// Forgets a worker, and when it was last heard from.
    @discardableResult
    mutating func remove(_ routingID: Data) -> WorkerRecord? {
        order.removeAll { $0 == routingID }
        activity.forget(routingID)
        return workers.removeValue(forKey: routingID)
    }

    subscript(routingID: Data) -> WorkerRecord? {
        get { workers[routingID] }
        // In place: changing a record (its job set) must not copy it.
        _modify { yield &workers[routingID] }
    }

    func routingID(ofPID pid: Int32, name: String) -> Data? {
        workers.values.first { $0.pid == pid && $0.name == name }?.routingID
    }

    /// The next worker with credit, going round the workers in turn, skipping `excluded`.
    mutating func nextWithCredit(excluding excluded: Set<Data> = []) -> Data? {
        guard !order.isEmpty else { return nil }
        for step in 0..<order.count {
            let candidate = order[(nextDispatch + step) % order.count]
            if !excluded.contains(candidate), let worker = workers[candidate], worker.credit > 0 {
                nextDispatch = (nextDispatch + step + 1) % order.count
                return candidate
            }
        }
        return nil
    }

    /// The worker holding a job, if any.
    func routingID(holding job: Int64) -> Data? {
        workers.values.first { $0.jobs[job] != nil }?.routingID
    }

    /// Whether some worker could take a job now.
    var anyHasCredit: Bool { workers.values.contains { $0.credit > 0 } }

    /// Workers silent for longer than their liveness allows.
    func expired(now: ContinuousClock.Instant, liveness: UInt32) -> [WorkerRecord] {
        workers.values.filter { isExpired($0, now: now, liveness: liveness) }
    }

    /// Whether `worker` was silent (in its messages and in what the socket thread heard) past its liveness.
    private func isExpired(_ worker: WorkerRecord, now: ContinuousClock.Instant, liveness: UInt32) -> Bool {
        let heard = max(worker.lastSeen, activity.lastHeard(worker.routingID) ?? worker.lastSeen)
        return now - heard > worker.heartbeatInterval * Int(liveness)
    }
}

/// When each registered worker was last heard from, stamped by the socket loop's thread as messages arrive, so that
/// a worker whose heartbeats wait in the coordinator's queue behind a long save is not taken for dead.
///
/// Only the peers ``track(_:heardAt:)`` names (registered workers) are kept, until ``forget(_:)``: clients,
/// subscribers and peers that only ever send bad frames connect anew for every command, and their ids would
/// otherwise pile up.
final class PeerActivity: Sendable {
    private let lastHeard = Mutex<[Data: ContinuousClock.Instant]>([:])

    /// Starts keeping when `peer` is heard from.
    func track(_ peer: Data, heardAt instant: ContinuousClock.Instant) {
        lastHeard.withLock { $0[peer] = instant }
    }

    /// Notes a message from `peer`, when it is tracked.
    func heard(_ peer: Data) {
        let now = ContinuousClock.now
        lastHeard.withLock { heard in
            if heard[peer] != nil { heard[peer] = now }
        }
    }

    func lastHeard(_ peer: Data) -> ContinuousClock.Instant? {
        lastHeard.withLock { $0[peer] }
    }

    /// How many peers are tracked.
    var count: Int { lastHeard.withLock { $0.count } }

    func forget(_ peer: Data) {
        lastHeard.withLock { _ = $0.removeValue(forKey: peer) }
    }
}
