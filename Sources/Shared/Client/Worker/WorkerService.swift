import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCore
import TributaryProtocol

/// A worker process's main loop as a `Service`: registers with the coordinator, asks for jobs, runs each one in
/// its own slave context through the matching ``JobHandler`` (up to `concurrency` at once), and sends heartbeats.
///
/// On graceful shutdown (SIGTERM/SIGINT) it takes no new job, gives the ones it runs its shutdown timeout to
/// finish, interrupts those still running then, says goodbye so the coordinator hands back, uncounted, the jobs it
/// did not finish, and returns.
public struct WorkerService: Service {
    private let configuration: WorkerConfiguration
    private let logger: Logger

    /// A worker that runs as `configuration` says once its service group starts it, logging to `logger`.
    public init(configuration: WorkerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    public func run() async throws {
        let jobLog: JobLog? =
            if let path = configuration.jobLogPath { try await JobLog.open(path: path) } else { nil }
        do {
            try await serve(jobLog: jobLog)
        } catch {
            await jobLog?.close()
            throw error
        }
        await jobLog?.close()
    }

    /// Registers, runs jobs until told to stop, and says goodbye.
    private func serve(jobLog: JobLog?) async throws {
        let connection = try CoordinatorConnection(endpoint: configuration.endpoint, curve: configuration.curve)
        logger.info("connecting", metadata: ["coordinator": "\(connection.endpoint)"])
        let running = RunningJobs(log: jobLog)
        let registered: Model?
        do {
            registered = try await registerUnlessStopping(connection, running: running)
        } catch {
            // Sends what is queued (a goodbye to a coordinator that cannot serve this worker) before the error ends
            // the process.
            await connection.close()
            throw error
        }
        guard let model = registered else {
            await connection.close()
            logger.info("worker stopped before it registered")
            return
        }
        // Credit is additive: the worker asks for as many jobs as it runs at once, then for one more as each
        // finishes, so jobs are already waiting here when a slot frees up (no idle round trip).
        let concurrency = UInt32(max(1, configuration.concurrency))
        connection.send(.workerReady(.with { $0.credit = concurrency }))
        // On graceful shutdown the message stream ends (no new jobs) while saves still get their acks; this costs
        // nothing per message, where `cancelOnGracefulShutdown()` ran each one through a merged sequence's task.
        let interval = configuration.heartbeatInterval
        try await withTaskCancellationHandler {
            try await withThrowingDiscardingTaskGroup { heartbeats in
                heartbeats.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        connection.send(.heartbeat(.init()))
                    }
                }
                heartbeats.addTask {
                    await interruptAtShutdownTimeout(running: running, connection: connection)
                }
                try await withGracefulShutdownHandler {
                    try await runJobs(connection: connection, model: model, running: running)
                } onGracefulShutdown: {
                    connection.finishMessages()
                }
                heartbeats.cancelAll()
            }
        } onCancel: {
            // Stopping at once (not gracefully): no reply is awaited any more, even by a fetch on a context's queue.
            connection.abandonRequests("the worker is stopping")
        }
        connection.send(.workerBye(.init()))
        await connection.close()
        logger.info("worker stopped")
    }

    /// Once the worker is told to stop and its shutdown timeout has passed (returning early when the jobs ended
    /// first: the task is cancelled), interrupts the jobs still running and gives up their unanswered requests: a
    /// coordinator that died holding a save would otherwise keep the stop waiting for the save's timeout.
    private func interruptAtShutdownTimeout(running: RunningJobs, connection: CoordinatorConnection) async {
        do {
            try await gracefulShutdown()
            try await Task.sleep(for: configuration.shutdownTimeout)
        } catch {
            return
        }
        let interrupted = running.interruptAll()
        if interrupted > 0 {
            logger.warning(
                "shutdown timeout passed: interrupting the running jobs; the coordinator hands them back",
                metadata: ["jobs": "\(interrupted)", "timeout": "\(configuration.shutdownTimeout)"])
        }
        connection.abandonRequests("the worker's shutdown timeout of \(configuration.shutdownTimeout) passed")
    }

    /// Runs the jobs the coordinator assigns until the message stream ends, then waits for the running ones.
    private func runJobs(connection: CoordinatorConnection, model: Model, running: RunningJobs) async throws {
        var model = model
        var registeredAt = ContinuousClock.now
        let interval = configuration.heartbeatInterval
        let concurrency = UInt32(max(1, configuration.concurrency))
        try await withThrowingDiscardingTaskGroup { jobs in
            messages: for await batch in connection.messages {
                for message in batch {
                    switch message.body {
                    case .jobAssignment(let assignment):
                        running.count.add(1, ordering: .relaxed)
                        // Held from here, before its task starts: a registration that comes next names it.
                        running.hold(assignment)
                        let model = model
                        jobs.addTask {
                            let asked = await runJob(assignment, model: model, connection: connection, running: running)
                            running.release(assignment)
                            running.count.subtract(1, ordering: .relaxed)
                            if !asked && running.asksForMore { running.returnCredit(over: connection) }
                        }
                    case .cancelJob(let cancel):
                        running.cancel(jobID: cancel.jobID, attempt: cancel.attempt)
                    case .drain:
                        // The coordinator is stopping: ask for nothing more until a coordinator asks us to register.
                        logger.notice("coordinator is stopping; draining")
                        running.draining.store(true, ordering: .relaxed)
                    case .error(let error) where error.code == .unknownWorker:
                        // Heartbeats sent before the last registration are answered with this error too; only one
                        // that comes well after it means the coordinator restarted and no longer knows us.
                        guard ContinuousClock.now - registeredAt > interval * 2 else { continue }
                        logger.notice("coordinator forgot this worker; registering again")
                        // Slots offered to the old registration (on a completing save) are offered again when their
                        // jobs end; jobs still running are left out of the credit below.
                        running.registration.add(1, ordering: .relaxed)
                        // Stopping while the coordinator is away: the running jobs end (their saves are refused).
                        guard let registered = try await registerUnlessStopping(connection, running: running) else {
                            break messages
                        }
                        model = registered
                        registeredAt = .now
                        running.draining.store(false, ordering: .relaxed)
                        let free = concurrency - min(concurrency, running.count.load(ordering: .relaxed))
                        connection.send(.workerReady(.with { $0.credit = free }))
                        // The jobs' saves still unanswered may have died with the coordinator that held them: sent
                        // again now, rather than waiting out their timeout (an applied one is answered as such, one
                        // of a voided attempt refused, which ends its job).
                        connection.resendPendingRequests()
                    case .error(let error):
                        logger.warning("coordinator error", metadata: ["error": "\(ProtocolError(error))"])
                    default:
                        break
                    }
                }
            }
            // Graceful shutdown: no new jobs; the group waits for the running ones to finish.
        }
    }

    /// ``register(_:)`` that gives up on graceful shutdown (SIGTERM while no coordinator answers).
    /// - Returns: the store's model, or nil when the worker is stopping.
    private func registerUnlessStopping(_ connection: CoordinatorConnection, running: RunningJobs) async throws
        -> Model?
    {
        do {
            return try await cancelWhenGracefulShutdown { try await register(connection, running: running) }
        } catch is CancellationError where Task.isShuttingDownGracefully {
            return nil
        }
    }

    /// Says hello until the coordinator answers, and returns the store's model from its welcome. Registering anew,
    /// the hello names the id the worker had and the attempts it still runs, which a cluster's new primary hands to
    /// the new registration when its store still leases them to that id (docs/failover.md).
    private func register(_ connection: CoordinatorConnection, running: RunningJobs) async throws -> Model {
        var hello = Tributary_V1_WorkerHello.with {
            $0.name = configuration.name
            $0.pid = getpid()
            $0.heartbeatIntervalMs =
                UInt32(configuration.heartbeatInterval.components.seconds * 1000)
                + UInt32(configuration.heartbeatInterval.components.attoseconds / 1_000_000_000_000_000)
            $0.jobKinds = configuration.handlers.map(\.kind)
            $0.queues = configuration.queues
            $0.queueWeights = configuration.queueWeights
            $0.acceptsBatches = true
        }
        while true {
            try Task.checkCancellation()
            if let previous = running.workerID {
                hello.previousWorkerID = previous
                hello.heldJobs = running.attempts.map { job, attempt in
                    .with {
                        $0.jobID = job
                        $0.attempt = attempt
                    }
                }
            }
            do {
                let reply = try await connection.request(.workerHello(hello), timeout: .seconds(5))
                guard case .welcome(let welcome) = reply.body else {
                    throw ProtocolError(
                        .unknownMessage, "the coordinator answered hello with something other than Welcome")
                }
                let model = try Model.decode(Data(welcome.modelJson.utf8), source: "the coordinator's model")
                running.workerID = welcome.workerID
                logger.info(
                    "registered", metadata: ["worker": "\(welcome.workerID)", "coordinator": "\(connection.endpoint)"])
                return model
            } catch let error as ProtocolError where error.code == .internal {
                logger.notice("waiting for the coordinator", metadata: ["endpoint": "\(connection.endpoint)"])
            } catch let error as ProtocolError where error.code == .notPrimary {
                // Given a standby's endpoint alone (a cluster's members give the primary's): it may be promoted.
                logger.warning("waiting for the member to be primary: \(error.message)")
                try await Task.sleep(for: .seconds(1))
            } catch let error as ProtocolError where error.code == .unsupported {
                // The coordinator would serve this worker without a capability it needs (one without queues: jobs of
                // every queue), so it takes no job. An older coordinator registered it all the same: the goodbye
                // has it forgotten at once.
                logger.error("the coordinator cannot serve this worker", metadata: ["error": "\(error)"])
                connection.send(.workerBye(.init()))
                throw error
            }
        }
    }

    /// Runs one job through its handler.
    /// - Returns: whether its completing save already asked for the job that takes its slot.
    private func runJob(
        _ assignment: Tributary_V1_JobAssignment, model: Model, connection: CoordinatorConnection,
        running: RunningJobs
    ) async -> Bool {
        // Built only for a message that is logged.
        var metadata: Logger.Metadata {
            ["job": "\(assignment.jobID)", "attempt": "\(assignment.attempt)", "kind": "\(assignment.spec.kind)"]
        }
        guard let handler = configuration.handlers.first(where: { $0.kind == assignment.spec.kind }) else {
            fail(assignment, "this worker has no handler for job kind '\(assignment.spec.kind)'", connection)
            return false
        }
        let registration = running.registration.load(ordering: .relaxed)
        running.log?.record(
            .start, job: assignment.jobID, attempt: assignment.attempt, worker: running.workerID ?? "")
        var outcome = "failed"
        defer {
            running.log?.record(
                .end, job: assignment.jobID, attempt: assignment.attempt, worker: running.workerID ?? "",
                outcome: outcome)
        }
        let job = JobRun(
            assignment: assignment, model: model, connection: connection,
            asksForNextJob: { running.asksForMore && running.isCurrent(registration) }, logger: logger)
        running.add(job)
        defer { running.remove(job) }
        do {
            try await handler.run(job)
            if job.isCompleted {
                outcome = "completed"
                logger.debug("job done", metadata: metadata)
            } else if job.isInterrupted {
                outcome = "interrupted"
                logger.notice("job interrupted by the worker's stop", metadata: metadata)
            } else {
                fail(
                    assignment, "the '\(assignment.spec.kind)' handler returned without completing the job", connection)
            }
        } catch let error as ProtocolError where error.code == .staleLease {
            outcome = "lease lost"
            logger.notice("job lease lost", metadata: metadata)
        } catch is JobCancelled {
            outcome = job.isInterrupted ? "interrupted" : "cancelled"
            logger.notice(
                job.isInterrupted ? "job interrupted by the worker's stop" : "job cancelled", metadata: metadata)
        } catch let error as ProtocolError where error.code == .shuttingDown && job.isInterrupted {
            // A request of its own (a fetch) given up at the shutdown timeout: not the job's failure.
            outcome = "interrupted"
            logger.notice(
                "job interrupted by the worker's stop", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        } catch {
            logger.warning("job failed", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            fail(assignment, "\(error)", connection, permanent: JobErrors.isPermanent(error))
        }
        // Offered with its completion to the registration that is still current: nothing more to ask for.
        return job.completionAskedForNextJob && running.isCurrent(registration)
    }

    private func fail(
        _ assignment: Tributary_V1_JobAssignment, _ message: String, _ connection: CoordinatorConnection,
        permanent: Bool = false
    ) {
        connection.send(
            .jobFailed(
                .with {
                    $0.jobID = assignment.jobID
                    $0.attempt = assignment.attempt
                    $0.message = message
                    $0.permanent = permanent
                }))
    }
}

/// The jobs a worker is running, shared by its job tasks: how many, and each one's run (to cancel it).
private final class RunningJobs: Sendable {
    let count = Atomic<UInt32>(0)
    /// Where each attempt's start and end is recorded, if anywhere.
    let log: JobLog?
    /// The id of the worker's last registration; nil before the first.
    private let registeredID = Mutex<String?>(nil)

    init(log: JobLog?) {
        self.log = log
    }

    var workerID: String? {
        get { registeredID.withLock { $0 } }
        set { registeredID.withLock { $0 = newValue } }
    }

    /// The attempts assigned and not ended, by job: what a new registration names as still running.
    private let held = Mutex<[UInt64: UInt32]>([:])

    func hold(_ assignment: Tributary_V1_JobAssignment) {
        held.withLock { $0[assignment.jobID] = assignment.attempt }
    }

    func release(_ assignment: Tributary_V1_JobAssignment) {
        held.withLock { held in
            if held[assignment.jobID] == assignment.attempt { held.removeValue(forKey: assignment.jobID) }
        }
    }

    /// The attempts held, by job.
    var attempts: [(job: UInt64, attempt: UInt32)] {
        held.withLock { held in held.map { ($0.key, $0.value) }.sorted { $0.job < $1.job } }
    }
    /// Set while the coordinator is stopping: no credit is asked for.
    let draining = Atomic<Bool>(false)
    /// Counts this worker's registrations: credit offered to an earlier one (it may have been lost with it) is
    /// offered again.
    let registration = Atomic<UInt64>(0)
    /// The runs by job id, and whether the shutdown timeout has interrupted them (a run added later is too).
    private let runs = Mutex<(byJob: [UInt64: JobRun], interrupted: Bool)>(([:], false))

    /// Whether `registration` is still this worker's registration with the coordinator.
    func isCurrent(_ registration: UInt64) -> Bool { self.registration.load(ordering: .relaxed) == registration }

    /// Whether a finished job's slot is offered to the coordinator again: not while it drains or this worker
    /// stops.
    var asksForMore: Bool { !Task.isShuttingDownGracefully && !draining.load(ordering: .relaxed) }

    /// Credit owed to the coordinator and not sent yet.
    private let owedCredit = Atomic<UInt32>(0)

    /// Gives one job's slot back: jobs that finish together (their acks come from one group commit) return their
    /// credit in one `WorkerReady`, sent after the others had a turn to add theirs.
    func returnCredit(over connection: CoordinatorConnection) {
        guard owedCredit.add(1, ordering: .acquiringAndReleasing).oldValue == 0 else { return }
        // Unstructured: it must run after the other jobs of the same group commit added their credit, which a
        // child of this job's task could not wait for; it only sends, and owes nothing if lost at a stop.
        Task {
            await Task.yield()
            let credit = owedCredit.exchange(0, ordering: .acquiringAndReleasing)
            if credit > 0 { connection.send(.workerReady(.with { $0.credit = credit })) }
        }
    }

    func add(_ run: JobRun) {
        runs.withLock { runs in
            runs.byJob[run.jobID] = run
            if runs.interrupted { run.interrupt() }
        }
    }

    func remove(_ run: JobRun) { runs.withLock { _ = $0.byJob.removeValue(forKey: run.jobID) } }

    /// Interrupts every running job, and any that starts from now on (the worker's shutdown timeout passed).
    /// - Returns: how many were running.
    func interruptAll() -> Int {
        runs.withLock { runs in
            runs.interrupted = true
            for run in runs.byJob.values { run.interrupt() }
            return runs.byJob.count
        }
    }

    /// Cancels the job if this worker runs that attempt of it.
    func cancel(jobID: UInt64, attempt: UInt32) {
        runs.withLock { runs in
            if let run = runs.byJob[jobID], run.attempt == attempt { run.cancel() }
        }
    }
}
