import GRDB
import TributaryCore

/// The job state machine: every way a job's state changes, the states it may leave by it and those it may enter.
/// Every statement that changes `tributary_jobs.state` names its transition and matches only rows in one of the
/// transition's ``from`` states (``whereSQL``), so a job in any other state is left as it is; a request that names a
/// job in a state the transition does not leave is refused with ``refusal(of:id:in:)``.
///
/// ```
/// push ──▶ waiting ──release──▶ queued ──claim──▶ running ──complete──▶ done
///             │                  ▲  ▲                │ │ │
///             │                  │  └──retry/handBack┘ │ └──fail──▶ dead ──retryDead──▶ queued | waiting
///             └─settleByParent─▶ dead | cancelled      │
///  waiting, queued, running ──cancel──▶ cancelled ◀────┘
/// ```
enum JobTransition: String, CaseIterable, Sendable {
    /// A worker's claim leases a queued job to one attempt (`attempt` + 1).
    case claim
    /// A save of the running attempt records its progress.
    case progress
    /// A save of the running attempt completes the job.
    case complete
    /// A failed attempt with attempts left (a worker's failure, a lost worker, a time-out, an attempt a
    /// restart found running) goes back to the queue, after its retry delay.
    case retry
    /// A permanent failure, or the last attempt's, makes the job dead.
    case fail
    /// A running job goes back to the queue without counting its attempt (a stopping worker, a claim never sent).
    case handBack
    /// A cluster's new primary leases a running attempt to its worker's new registration: the worker registered anew
    /// saying it still runs that attempt under the id the store names (``JobStore/adoptJobs(_:from:grantedBefore:to:in:statements:)``).
    case adopt
    /// A parent's end lets a waiting job run.
    case release
    /// A failed parent settles a waiting job by its policy: dead, or cancelled.
    case settleByParent
    /// `jobs cancel`: a job not finished ends cancelled.
    case cancel
    /// `jobs retry`: a dead job runs again, after its parents when it has some.
    case retryDead

    /// The states a job may leave by this transition.
    var from: Set<JobState> {
        switch self {
        case .claim: [.queued]
        case .progress, .complete, .retry, .fail, .handBack, .adopt: [.running]
        case .release, .settleByParent: [.waiting]
        case .cancel: [.waiting, .queued, .running]
        case .retryDead: [.dead]
        }
    }

    /// The states a job may enter by this transition.
    var to: Set<JobState> {
        switch self {
        case .claim, .progress, .adopt: [.running]
        case .complete: [.done]
        case .retry, .handBack, .release: [.queued]
        case .fail: [.dead]
        case .settleByParent: [.dead, .cancelled]
        case .cancel: [.cancelled]
        case .retryDead: [.queued, .waiting]
        }
    }

    /// What a refusal calls the transition: "cancelled" in "only … jobs can be cancelled".
    private var participle: String {
        switch self {
        case .claim: "claimed"
        case .progress: "saved"
        case .complete: "completed"
        case .retry, .retryDead: "retried"
        case .fail: "failed"
        case .handBack: "handed back"
        case .adopt: "adopted"
        case .release: "released"
        case .settleByParent: "settled"
        case .cancel: "cancelled"
        }
    }

    /// Whether a job in `state` may take this transition.
    func allows(_ state: JobState) -> Bool { from.contains(state) }

    /// The condition a statement of this transition puts on the job's row: `state IN ('queued')`.
    var whereSQL: String { Self.whereClauses[self]! }

    /// ``whereSQL`` of each transition, made once: claims and failures name it in every statement.
    private static let whereClauses = Dictionary(
        uniqueKeysWithValues: allCases.map { transition in
            let states = JobState.allCases.filter(transition.from.contains).map(\.sql)
            return (transition, "state IN (\(states.joined(separator: ", ")))")
        })

    /// The state `state` as an SQL literal, for the statement's `SET state = …`; `state` is one this transition
    /// enters.
    func sql(entering state: JobState) -> String {
        assert(to.contains(state), "\(self) does not enter \(state)")
        return state.sql
    }

    /// `state`'s name, for a statement that binds it; `state` is one this transition enters.
    func name(entering state: JobState) -> String {
        assert(to.contains(state), "\(self) does not enter \(state)")
        return state.rawValue
    }

    /// The error for a request to take this transition from a state it does not leave: "job 7 is done; only waiting,
    /// queued or running jobs can be cancelled".
    func refusal(of id: Int64, in state: JobState) -> StoreError {
        let names = JobState.allCases.filter(from.contains).map(\.rawValue)
        let list = names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
        return StoreError(.constraint, "job \(id) is \(state.rawValue); only \(list) jobs can be \(participle)")
    }
}

extension JobTransition {
    /// Checks that the statement just run for job `id` changed its row: the callers read the row in a state the
    /// transition leaves, in the same transaction, so no change means the code and this table disagree.
    /// - Throws: ``StoreError`` (`sqlite`, as for a bug in generated SQL) naming the job and the transition, which
    ///   rolls the transaction back.
    func requireChange(of id: Int64, in db: Database) throws {
        guard db.changesCount == 1 else {
            throw StoreError(.sqlite, "job \(id): the \(rawValue) transition found the job in no state it leaves")
        }
    }
}
