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
    /// The socket's loop, the mailbox, local requests: what the router reads and sends.
    nonisolated let io: RouterIO
    /// Starting, serving or stopping; behind a lock, since `/readyz` reads it from outside the actor.
    nonisolated let lifecycle = Mutex(RouterLifecycle.starting)
    /// The router's workers and pool as of its last step, for reads answered off the router.
    nonisolated let snapshot = RouterSnapshot()
    /// The connected workers, their credit and the jobs each holds.
    var workers: WorkerRegistry
    /// The saves and claims for the writer's next group commit (``submit(moreToCome:)``).
    var handOver = WriterHandOver()
    /// Decoding, authorization and bounds of what peers send.
    var intake: Intake
    /// Replies gathered while a group commit is answered, and what follows each of the router's own writes.
    var answers = PipelineAnswers()
    /// Job counters by kind and attempts' times, recorded as the router sees jobs go out and end.
    let jobMetrics = JobMetrics()
    /// Repeated complaints about one peer, thinned out (a peer sending bad frames in a loop).
    var peerLog = LogThrottle()

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

    /// A router over composed parts; call ``run()`` to serve.
    /// - Parameters:
    ///   - activity: the peers' last messages as the socket's loop stamps them (``RouterIO``'s).
    ///   - authorization: with CURVE, who may send what.
    init(
        configuration: CoordinatorConfiguration, logger: Logger, parts: CoordinatorParts, io: RouterIO,
        activity: PeerActivity, authorization: PeerAuthorization?
    ) {
        self.configuration = configuration
        self.logger = logger
        self.parts = parts
        self.io = io
        workers = WorkerRegistry(activity: activity)
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
        io.localPeers.close()
    }

    /// Serves the socket until it is closed: one step per wake-up of the socket loop (or ``post(_:)``): every
    /// message received since the last step, then the events posted before it began (so a pool worker's last save,
    /// received before its exit was posted, is handled before its exit).
    private func serve() async {
        for await batch in io.loop.inbound {
            let events = io.mailbox.take()
            if !batch.isEmpty {
                await handle(batch)
                await submit()
            }
            for event in events {
                await handle(event)
                // What the event let go out (credit, a claim that came back full, a worker gone) is claimed now.
                await submit()
            }
            snapshot.publish(workers: workers.workers)
        }
    }

    private func handle(_ event: RouterEvent) async {
        switch event {
        case .written: answerReleased()
        case .tick: await tick()
        case .jobsQueued: if workers.anyHasCredit { handOver.isDue = true }
        case .rateLimitRoom: handOver.roomCame(workers: workers)
        case .attemptsExpired(let attempts): stopAttempts(attempts)
        case .workerExited(let pid, let name): workerProcessExited(pid: pid, name: name)
        case .reloadAllowList: reloadAllowListNow()
        case .local(let envelope, let peer): await handleLocal(envelope, from: peer)
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
    private func tick() async {
        readers.releaseIdleSnapshots()
        peerLog.flush(to: logger)
        // Writes other than the router's (maintenance, schedules) find a fault too.
        reportWritability()
        retryRefusedWrites()
        // While stopping, a worker gone quiet is not taken for dead: the stop hands its jobs back without counting
        // an attempt.
        guard !stopping else { return }
        reapSilentWorkers()
        // Retries and delayed jobs become due with time, not with a message: look for them each tick.
        if workers.anyHasCredit { handOver.isDue = true }
    }

    /// Tells every worker to drain, then lets their running jobs save until they finish or the grace period ends.
    /// The grace period counts from the start of the stop: the local pool, stopped first, spent part of it, so that
    /// a stop takes about `--drain-seconds`, not twice that.
    private func drainWorkers() async {
        guard !workers.workers.isEmpty else { return }
        for peer in workers.workers.keys { reply(to: peer, requestID: 0, .drain(.init())) }
        let deadline = (snapshot.poolStopBegan ?? .now) + configuration.drainGracePeriod
        while ContinuousClock.now < deadline, workers.workers.values.contains(where: { !$0.jobs.isEmpty }) {
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
        let task = Task { await closeEverything(drainingWorkers: drain) }
        lifecycle.withLock { $0 = .stopping(task) }
        await task.value
    }

    private func closeEverything(drainingWorkers drain: Bool) async {
        if drain { await drainWorkers() }
        await submit()
        await writer.commitAll()
        answerReleased()
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
        await submit()
        await writer.stop()
        answerReleased()
        writer.pipeline.close()
        await io.loop.stop()
    }

    nonisolated func reply(to peer: Data, requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        io.reply(to: peer, requestID: requestID, body)
    }

    /// Replies, or gathers the reply while a group commit is answered (``answering(_:)``).
    func replyOrGather(to peer: Data, requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        guard answers.replies != nil, !LocalPeers.isLocal(peer) else {
            return reply(to: peer, requestID: requestID, body)
        }
        if case .error(let error) = body { WriterMetrics.refused(ProtocolError.name(of: error.code)) }
        answers.replies?.add(Wire.envelope(requestID, body), for: peer)
    }

    /// Runs `body` with replies gathered, then sends them per peer.
    func answering(_ body: () -> Void) {
        answers.replies = ReplyPack()
        body()
        if let batch = answers.replies { io.send(batch) }
        answers.replies = nil
    }

    /// Logs what was refused to a peer, at most a few times per peer and kind of error in a window (the rest
    /// are counted and the count logged; see ``LogThrottle``).
    func logRefusal(
        _ message: String, _ error: any Error, peer: Data, level: Logger.Level = .notice,
        metadata: Logger.Metadata = [:]
    ) {
        // A store that cannot be written is logged once, when found (``reportWritability()``), not per request.
        if (error as? StoreError)?.code == .unwritable || (error as? ProtocolError)?.code == .storeUnwritable { return }
        let kind =
            switch error {
            case let error as ProtocolError: "\(message): \(error.codeName)"
            case let error as StoreError: "\(message): \(error.code)"
            default: message
            }
        // Local requests (the HTTP endpoint's) each have an id of their own: they share one key.
        peerLog.log(
            message, level: level, peer: LocalPeers.isLocal(peer) ? LocalPeers.logKey : peer, kind: kind,
            metadata: metadata.merging(["error": "\(error)"]) { $1 },
            to: logger)
    }

    static func name(of body: Tributary_V1_Envelope.OneOf_Body) -> String {
        let text = "\(body)"
        return String(text.prefix { $0 != "(" })
    }
}
