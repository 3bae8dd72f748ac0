import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCore
import TributaryProtocol
import ZeroMQ

/// The coordinator: owns the root store, serves the jobs/control ROUTER and publishes the change feed.
///
/// Messages from every peer are handled one at a time, in arrival order, on this actor, which runs on its socket
/// loop's thread (the loop is its executor): a message reaches it and its replies leave without another thread
/// woken. It is the intake of the commit pipeline: writes run on the store's writer thread (`StoreWriter`) and
/// come back through the `CommitPipeline` to be answered; reads run on the reader pool's threads. The router never
/// runs a commit nor waits for one, so a store that stalls holds up saves and writes, not heartbeats, versions or
/// reads of what is committed.
/// A malformed or invalid message is answered with an ``/TributaryProtocol/ProtocolError`` to its sender, and the
/// coordinator goes on serving everyone else.
public actor CoordinatorServer: Service {
    let configuration: CoordinatorConfiguration
    nonisolated let logger: Logger
    /// The store, its writer and readers, the feed's publisher and the totals, composed by ``CoordinatorService``.
    nonisolated let parts: CoordinatorParts
    /// The socket's loop and the mailbox: what the router reads and sends.
    nonisolated let io: RouterIO
    /// Starting, serving or stopping; behind a lock, since `/readyz` reads it from outside the actor.
    nonisolated let lifecycle = Mutex(RouterLifecycle.starting)
    /// The workers' sessions, their credit and jobs, and the saves and claims gathered for the writer.
    let sessions: WorkerSessions
    /// The commit pipeline's last stage: what the writer wrote, answered in order.
    let answers: CommitAnswers
    /// What the router sends its peers, and its refusals' log.
    let replies: PeerReplies
    /// Decoding, authorization and bounds of what peers send.
    var intake: Intake

    /// The socket loop's thread: see the type's description.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { io.loop.asUnownedSerialExecutor() }

    /// The jobs/control endpoint actually bound (a `*` port resolved).
    public nonisolated var listenEndpoint: String { io.listenEndpoint }
    /// The feed endpoint actually bound.
    public nonisolated var feedEndpoint: String { parts.publisher.endpoint }
    /// The root store.
    public nonisolated var store: RootStore { parts.store }
    /// What this process committed since it started (the dashboard's totals).
    public nonisolated var totals: CoordinatorTotals { parts.totals }
    nonisolated var writer: StoreWriter { parts.writer }
    nonisolated var readers: ReaderPool { parts.readers }
    nonisolated var publisher: FeedPublisher { parts.publisher }
    /// The router's workers and pool as of its last step, for reads answered off the router.
    nonisolated var snapshot: RouterSnapshot { parts.snapshot }
    nonisolated var codec: ClientCodec { ClientCodec(handlers: parts.handlers, store: parts.store) }

    /// A router over composed parts; call ``run()`` to serve.
    /// - Parameters:
    ///   - activity: the peers' last messages as the socket's loop stamps them (``RouterIO``'s).
    ///   - authorization: with CURVE, who may send what.
    ///   - workerIDPrefix: what the worker ids it grants start with (a cluster's primary's epoch).
    init(
        configuration: CoordinatorConfiguration, logger: Logger, parts: CoordinatorParts, io: RouterIO,
        activity: PeerActivity, authorization: PeerAuthorization?, workerIDPrefix: String = ""
    ) {
        self.configuration = configuration
        self.logger = logger
        self.parts = parts
        self.io = io
        let replies = PeerReplies(io: io, logger: logger)
        sessions = WorkerSessions(
            configuration: configuration, logger: logger, parts: parts, io: io,
            workers: WorkerRegistry(activity: activity, idPrefix: workerIDPrefix),
            replies: replies, followUps: FollowUps(writer: parts.writer))
        answers = CommitAnswers(sessions: sessions)
        self.replies = replies
        intake = Intake(authorization: authorization, limits: configuration.limits)
    }

    /// Serves until graceful shutdown (or `stop()`): then drains the workers, has the writer commit and answer
    /// what came, hands back running jobs and closes the socket; returns once it is closed. Cancelled, it stops
    /// the same way without waiting for workers (nothing reads their saves any more).
    public func run() async throws {
        io.loop.start()
        lifecycle.withLock { state in
            if case .starting = state { state = .serving }
        }
        logger.info(
            "serving",
            metadata: [
                "jobs": "\(listenEndpoint)", "feed": "\(feedEndpoint)", "store": "\(store.path)",
                "durability": "\(store.durability)",
            ])
        let interval = configuration.feedHeartbeatInterval
        await withDiscardingTaskGroup { tasks in
            tasks.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    self.post(.tick)
                }
            }
            tasks.addTask {
                // Cancelled instead (or the socket closed by a stop from elsewhere): no drain.
                let graceful = (try? await gracefulShutdown()) != nil
                self.logger.info("shutting down")
                await self.stop(drainingWorkers: graceful)
            }
            // The loop as the task's preferred executor too: a continuation resumed by the loop or the store's
            // writer then resumes the router on the loop's thread (see ``SocketLoop``'s executor).
            await withTaskExecutorPreference(io.loop) { await serve() }
            tasks.cancelAll()
        }
    }

    /// Serves the socket until it is closed: one step per wake-up of the socket loop (or ``post(_:)``): every
    /// message received since the last step, then the events posted before it began (so a pool worker's last save,
    /// received before its exit was posted, is handled before its exit).
    private func serve() async {
        for await batch in io.loop.inbound {
            let events = io.mailbox.take()
            if !batch.isEmpty {
                await handle(batch)
                await sessions.submit()
            }
            for event in events {
                await handle(event)
                // What the event let go out (credit, a claim that came back full, a worker gone) is claimed now.
                await sessions.submit()
            }
            snapshot.publish(workers: sessions.workers.workers)
        }
    }

    private func handle(_ event: RouterEvent) async {
        switch event {
        case .written: answers.answerReleased()
        case .tick: tick()
        case .jobsQueued: sessions.jobsChanged(.due)
        case .rateLimitRoom: sessions.handOver.roomCame(workers: sessions.workers)
        case .attemptsExpired(let attempts): sessions.attemptsExpired(attempts)
        case .workerExited(let pid, let name): sessions.processExited(pid: pid, name: name)
        case .reloadAllowList: reloadAllowListNow()
        case .jobsChanged(let change): sessions.jobsChanged(change)
        }
    }

    /// Posts an event to the router's mailbox and wakes its loop.
    nonisolated func post(_ event: RouterEvent) {
        io.post(event)
    }

    /// A local pool process exited: its jobs go back at once rather than after its heartbeats lapse.
    public nonisolated func workerExited(pid: Int32, name: String) {
        post(.workerExited(pid: pid, name: name))
    }

    /// Jobs were queued outside the router (a schedule fired): they go out with the next claims.
    public nonisolated func jobsQueued() {
        post(.jobsQueued)
    }

    /// Reads the allow-list again (on SIGHUP): see `reloadAllowListNow()`.
    public nonisolated func reloadAllowList() {
        post(.reloadAllowList)
    }

    /// Attempts that outlived their job's timeout, failed by maintenance: their workers are told to stop them.
    nonisolated func attemptsExpired(_ attempts: [JobStore.TimedOutAttempt]) {
        post(.attemptsExpired(attempts))
    }

    /// What the router does with time rather than with a message.
    private func tick() {
        readers.releaseIdleSnapshots()
        replies.flushLog()
        // Writes other than the router's (maintenance, schedules) find a fault too.
        answers.reportWritability()
        sessions.retryRefusedWrites()
        // While stopping, a worker gone quiet is not taken for dead: the stop hands its jobs back without counting
        // an attempt.
        guard !sessions.stopping else { return }
        sessions.reapSilentWorkers()
        // Retries and delayed jobs become due with time, not with a message: look for them each tick.
        sessions.jobsChanged(.due)
    }

    /// Tells every worker to drain, then lets their running jobs save until they finish or the grace period ends.
    /// The grace period counts from the start of the stop: the local pool, stopped first, spent part of it, so that
    /// a stop takes about `--drain-seconds`, not twice that.
    private func drainWorkers() async {
        guard !sessions.workers.workers.isEmpty else { return }
        for peer in sessions.workers.workers.keys { replies.send(to: peer, requestID: 0, .drain(.init())) }
        let deadline = (snapshot.poolStopBegan ?? .now) + configuration.drainGracePeriod
        while ContinuousClock.now < deadline, sessions.workers.workers.values.contains(where: { !$0.jobs.isEmpty }) {
            // Saves keep arriving and are handled meanwhile: the actor runs them during this sleep.
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Tells the server about its local pool, so `status` reports it.
    public nonisolated func attach(_ supervisor: WorkerSupervisor) {
        snapshot.attach(supervisor)
    }

    /// Stops taking work and closes the socket; the store is its owner's to close (after the readers finish).
    /// A graceful stop: no more dispatching; jobs still running (on workers outside the local pool, which was
    /// drained first) are handed back to the queue without counting an attempt, so a deploy costs no retries.
    /// Only a crash, found by the next start, counts the attempts it interrupted.
    /// A second call waits for the first to finish.
    /// - Parameter drain: whether running jobs may finish first (false once nothing reads the sockets: the service
    ///   was cancelled, so no save could arrive).
    public func stop(drainingWorkers drain: Bool = true) async {
        if case .stopping(let stop) = lifecycle.withLock({ $0 }) { return await stop.value }
        // Unstructured: the stop is shared by every caller (the graceful-shutdown child, the service closing the
        // store) and must run to its end even when the caller that started it is cancelled.
        sessions.stopping = true
        let task = Task { await closeEverything(drainingWorkers: drain) }
        lifecycle.withLock { $0 = .stopping(task) }
        await task.value
    }

    private func closeEverything(drainingWorkers drain: Bool) async {
        if drain { await drainWorkers() }
        await sessions.submit()
        await writer.commitAll()
        answers.answerReleased()
        do {
            let released = try await writer.write(.releaseAllRunningJobs())
            if released > 0 {
                logger.info("running jobs handed back for the next start", metadata: ["jobs": "\(released)"])
            }
        } catch {
            logger.error("cannot hand back running jobs", metadata: ["error": "\(error)"])
        }
        // Saves that came meanwhile are answered too (their jobs were handed back: refused as stale); the writer
        // takes nothing more, and reads waiting for answers go on.
        await sessions.submit()
        await writer.stop()
        answers.answerReleased()
        writer.pipeline.close()
        await io.loop.stop()
    }

    /// A message's name as the protocol spells it (`statusRequest`), for refusals.
    static func name(of body: Tributary_V1_Envelope.OneOf_Body) -> String {
        let text = "\(body)"
        return String(text.prefix { $0 != "(" })
    }
}
