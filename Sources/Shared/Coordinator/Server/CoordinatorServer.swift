import Foundation
import Logging
import TributaryCore
import TributaryProtocol
import ZeroMQ

/// The coordinator: owns the root store, serves the jobs/control ROUTER and publishes the change feed.
///
/// Messages from every peer are handled one at a time, in arrival order, on this actor; store writes run on
/// GRDB's writer queue and network I/O on the socket loop's thread, so neither blocks the cooperative pool.
/// A malformed or invalid message is answered with an ``ProtocolError`` to its sender, and the coordinator goes
/// on serving everyone else.
public actor CoordinatorServer {
    /// The endpoints actually bound (a `*` port resolved).
    public nonisolated let listenEndpoint: String
    public nonisolated var feedEndpoint: String { publisher.endpoint }
    public nonisolated let store: RootStore

    let configuration: CoordinatorConfiguration
    nonisolated let logger: Logger
    nonisolated let loop: SocketLoop
    let modelJSON: String
    var workers = WorkerRegistry()
    let activity = PeerActivity()
    var stopping = false
    /// The stop under way, for a second caller to wait on.
    private var stopTask: Task<Void, Never>?
    var dispatching = false
    /// The local pool, for `status`.
    var supervisor: WorkerSupervisor?
    /// Set by messages that may let jobs go out (credit, new jobs); dispatch runs once per batch of messages, so
    /// many jobs are claimed in one transaction.
    var needsDispatch = false
    var dispatchRequested = false
    /// Saves gathered for the next group commit while the writer runs the last one (see ``advanceCommits()``).
    var pendingSaves = SaveGroup()
    /// Replies gathered while a group commit is answered, sent together once it is.
    var replyBatch: ReplyBatch?
    /// Writes queued on the store's writer and not answered yet, oldest first.
    var queuedWrites: [QueuedWrite] = []
    /// Snapshots being paged through by subscribers, with when a page was last asked for.
    /// Fetches, history and snapshot pages, answered from the store's readers.
    nonisolated let readers: ReaderPool
    /// With CURVE: who may send what (the ZAP handler that admits peers is the service's).
    let authorization: PeerAuthorization?
    /// With CURVE: the key each peer last sent with, to drop it when the key is revoked.
    var peerKeys: [Data: String] = [:]
    /// Repeated complaints about one peer, thinned out (a peer sending bad frames in a loop).
    var peerLog = LogThrottle()
    /// Workers that read several envelopes in one message: what is queued for them is sent packed.
    nonisolated let batchingPeers = BatchingPeers()
    /// The topics the feed's subscribers asked for: nothing is built for a topic nobody gets.
    /// The change feed, which this server hands each commit's didSave parts.
    nonisolated let publisher: FeedPublisher

    static let routerSocket = 0

    /// Opens the store and binds the jobs/control ROUTER; call ``run()`` to serve. Commits are published through
    /// `publisher`, which owns the feed's socket.
    /// - Throws: ``ModelError``/``StoreError`` when the store cannot be opened for the model, ``ZMQError`` when an
    ///   endpoint cannot be bound (for example, the port is taken).
    init(
        configuration: CoordinatorConfiguration, logger: Logger, context: ZMQContext, publisher: FeedPublisher,
        admission: PeerAdmission?
    ) throws {
        self.configuration = configuration
        self.publisher = publisher
        self.logger = logger
        store = try RootStore.open(path: configuration.storePath, model: configuration.model)
        for left in store.jobsLeftRunning {
            logger.notice(
                "jobs left running by the previous coordinator: their attempt counts as lost",
                metadata: ["batch": "\(left.batch)", "requeued": "\(left.requeued)", "dead": "\(left.dead)"])
        }
        modelJSON = String(decoding: configuration.model.encodedJSON(), as: UTF8.self)

        authorization = admission?.authorization
        let router = try context.makeSocket(.router)
        if let curve = configuration.curve {
            try router.setCurveServer(secretKey: curve.secretKey)
            try router.setZAPDomain("tributary")
        }
        try router.setMaximumMessageSize(configuration.limits.maximumMessageBytes)
        try router.setRouterMandatory(true)
        try router.setRouterHandover(true)
        try router.setSendHighWaterMark(100_000)
        try router.setReceiveHighWaterMark(100_000)
        listenEndpoint = try router.bind(configuration.listen)

        let logger = logger
        let activity = self.activity
        let batchingPeers = self.batchingPeers
        let loop = try SocketLoop(
            name: "tributary-coordinator",
            sockets: [
                .init(
                    router, receives: true, readsUserID: configuration.curve != nil,
                    coalesce: { batchingPeers.coalesce($0) })
            ],
            onSendFailure: { error, socket in
                // A peer that went away (EHOSTUNREACH) before its reply: nothing to deliver it to.
                logger.debug("message not delivered on socket \(socket): \(error)")
            },
            onReceive: { socket, frames in
                if socket == Self.routerSocket, let peer = frames.first { activity.heard(peer) }
            })
        self.loop = loop
        readers = ReaderPool(
            store: store, limitPerPeer: configuration.limits.maximumPendingRequestsPerPeer, logger: logger
        ) { peer, requestID, body in
            loop.send([peer] + Wire.frames(Wire.envelope(requestID, body)), on: Self.routerSocket)
        }
    }

    /// Serves until ``stop()``; returns once the sockets are closed.
    public func run() async throws {
        loop.start()
        logger.info(
            "serving",
            metadata: ["jobs": "\(listenEndpoint)", "feed": "\(feedEndpoint)", "store": "\(store.path)"])
        await withDiscardingTaskGroup { timers in
            timers.addTask { await self.runTimers() }
            for await batch in loop.inbound {
                await handle(batch)
            }
            timers.cancelAll()
        }
    }

    /// Tells every worker to drain, then lets their running jobs save until they finish or the grace period ends.
    private func drainWorkers() async {
        guard !workers.workers.isEmpty else { return }
        for peer in workers.workers.keys { reply(to: peer, requestID: 0, .drain(.init())) }
        let deadline = ContinuousClock.now + configuration.drainGracePeriod
        while ContinuousClock.now < deadline, workers.workers.values.contains(where: { !$0.jobs.isEmpty }) {
            // Saves keep arriving and are handled meanwhile: the actor runs them during this sleep.
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Tells the server about its local pool, so `status` reports it.
    public func attach(_ supervisor: WorkerSupervisor) {
        self.supervisor = supervisor
    }

    /// Stops taking work, closes the sockets and the store.
    /// A graceful stop: no more dispatching; jobs still running (on workers outside the local pool, which was
    /// drained first) are handed back to the queue without counting an attempt, so a deploy costs no retries.
    /// Only a crash, found by the next start, counts the attempts it interrupted.
    /// A second call (the service returning after a signal's stop began) waits for the first to finish, so the
    /// process never exits with the store still open (its WAL not checkpointed into the file).
    /// - Parameter drain: whether running jobs may finish first (false once nothing reads the sockets: the service
    ///   was cancelled, so no save could arrive).
    public func stop(drainingWorkers drain: Bool = true) async {
        if let stopTask { return await stopTask.value }
        let task = Task { await closeEverything(drainingWorkers: drain) }
        stopTask = task
        await task.value
    }

    private func closeEverything(drainingWorkers drain: Bool) async {
        stopping = true
        if drain { await drainWorkers() }
        await commitReceived()
        do {
            let released = try await store.releaseAllRunningJobs()
            if released > 0 {
                logger.info("running jobs handed back for the next start", metadata: ["jobs": "\(released)"])
            }
        } catch {
            logger.error("cannot hand back running jobs", metadata: ["error": "\(error)"])
        }
        // Saves that came meanwhile are answered too (their jobs were handed back: refused as stale).
        await commitReceived()
        await loop.stop()
        // Reads under way finish first: none may open a connection once the store is closed.
        await readers.finish()
        // SQLite's last checkpoint waits on the disk: not on the cooperative pool.
        let store = self.store
        do {
            try await BlockingWork.run { try store.close() }
        } catch {
            logger.error("cannot close the store", metadata: ["error": "\(error)"])
        }
    }

    // MARK: - Routing

    /// Handles what one wake-up of the socket loop received, in order. Saves gather for the next group commit
    /// (one transaction, a savepoint each; see ``advanceCommits()``); any other message that touches the store
    /// first has every save before it committed and answered.
    private func handle(_ batch: [SocketLoop.Inbound]) async {
        for message in batch {
            guard let (peer, envelopes) = decode(message) else { continue }
            for decoded in envelopes {
                switch decoded {
                case .success(let sized): await handle(sized, of: message, from: peer)
                case .failure(let error):
                    logRefusal("malformed message from peer", error, peer: peer)
                    reply(to: peer, requestID: 0, .error(error.wire))
                }
            }
            advanceCommits()
        }
    }

    /// Handles one envelope of a message: a save is gathered for the next group commit; anything else first has
    /// the saves before it committed, unless it leaves the store alone.
    private func handle(_ sized: SizedEnvelope, of message: SocketLoop.Inbound, from peer: Data) async {
        let envelope = sized.envelope
        if authorization != nil {
            do {
                try authorize(envelope, userID: message.userID, peer: peer)
            } catch let error as ProtocolError {
                reply(to: peer, requestID: envelope.requestID, .error(error.wire))
                return
            } catch {
                return
            }
        }
        workers[peer]?.lastSeen = .now
        if case .saveChanges(let save) = envelope.body {
            do {
                let worker = try requireWorker(peer)
                if save.credit > 0 { addCredit(save.credit, to: peer) }
                try checkChangeSetLimits(save, messageBytes: sized.bytes)
                try Self.requireInt64(save.jobID, "job_id")
                try Self.requireProgress(save.progressDone, "progress_done")
                await gather(save, from: peer, worker: worker.id, requestID: envelope.requestID)
            } catch let error as ProtocolError {
                reply(to: peer, requestID: envelope.requestID, .error(error.wire))
            } catch {
                reply(to: peer, requestID: envelope.requestID, .error(ProtocolError(.internal, "\(error)").wire))
            }
            return
        }
        // Credit and heartbeats do not touch the store, and a push's write queues behind the group commits (new
        // jobs are nothing a save touches): the saves before them need not be committed first.
        if !Self.leavesStoreAlone(envelope) && !Self.queuesBehindSaves(envelope) { await commitAll() }
        await respond(to: envelope, from: peer)
    }

    private static func leavesStoreAlone(_ envelope: Tributary_V1_Envelope) -> Bool {
        switch envelope.body {
        case .workerReady, .heartbeat: true
        default: false
        }
    }

    private static func queuesBehindSaves(_ envelope: Tributary_V1_Envelope) -> Bool {
        if case .pushJobs = envelope.body { return true }
        return false
    }

    /// The routing id and envelopes of a message (an envelope of a batch that does not decode is answered in its
    /// place), or nil after answering a malformed message.
    private func decode(_ message: SocketLoop.Inbound) -> (Data, [Result<SizedEnvelope, ProtocolError>])? {
        let frames = message.frames
        guard let routingID = frames.first else { return nil }
        do {
            return (routingID, try Wire.decodeEach(frames.dropFirst()))
        } catch let error as ProtocolError {
            logRefusal("malformed message from peer", error, peer: routingID)
            reply(to: routingID, requestID: 0, .error(error.wire))
        } catch {
            logRefusal("cannot decode a message", error, peer: routingID, level: .error)
        }
        return nil
    }

    private func respond(to envelope: Tributary_V1_Envelope, from routingID: Data) async {
        do {
            try await route(envelope, from: routingID)
        } catch {
            refuse(envelope.requestID, from: routingID, error)
        }
    }

    /// Answers a request that failed with the error, as the protocol names it.
    func refuse(_ requestID: UInt64, from peer: Data, _ error: any Error) {
        switch error {
        case let error as ProtocolError:
            logRefusal("request refused", error, peer: peer)
            reply(to: peer, requestID: requestID, .error(error.wire))
        case let error as StoreError:
            logRefusal("store refused a request", error, peer: peer)
            reply(to: peer, requestID: requestID, .error(ProtocolError(error).wire))
        default:
            logRefusal("request failed", error, peer: peer, level: .error)
            reply(to: peer, requestID: requestID, .error(ProtocolError(.internal, "\(error)").wire))
        }
    }

    private func route(_ envelope: Tributary_V1_Envelope, from peer: Data) async throws {
        guard let body = envelope.body else {
            throw ProtocolError(
                .unknownMessage, "the envelope has no message body (or one this coordinator does not know)")
        }
        let requestID = envelope.requestID
        switch body {
        case .workerHello(let hello): try await workerHello(hello, from: peer, requestID: requestID)
        case .workerReady(let ready): try await workerReady(ready, from: peer)
        case .heartbeat: try requireWorker(peer)
        case .saveChanges(let save):
            let worker = try requireWorker(peer).id
            if save.credit > 0 { addCredit(save.credit, to: peer) }
            await gather(save, from: peer, worker: worker, requestID: requestID)
            await commitAll()
        case .jobFailed(let failure): try await jobFailed(failure, from: peer)
        case .workerBye: try await workerLeft(peer, reason: "said goodbye", handsBack: true)
        case .pushJobs(let push): try await pushJobs(push, from: peer, requestID: requestID)
        case .statusRequest: try await status(from: peer, requestID: requestID)
        case .batchStatusRequest(let request): try await batchStatus(request, from: peer, requestID: requestID)
        case .jobsRequest(let request): try await listJobs(request, from: peer, requestID: requestID)
        case .jobRequest(let request): try await showJob(request.jobID, from: peer, requestID: requestID)
        case .retryJobRequest(let request): try await retryJob(request.jobID, from: peer, requestID: requestID)
        case .cancelJobRequest(let request): try await cancelJob(request.jobID, from: peer, requestID: requestID)
        case .deleteJobRequest(let request): try await deleteJob(request.jobID, from: peer, requestID: requestID)
        case .historyRequest(let request): try history(request, from: peer, requestID: requestID)
        case .snapshotRequest(let request): try snapshot(request, from: peer, requestID: requestID)
        case .subscriberUpdate(let update): try await subscriberUpdate(update, from: peer, requestID: requestID)
        case .subscribersRequest: try await listSubscribers(from: peer, requestID: requestID)
        case .deleteSubscriberRequest(let request):
            try await deleteSubscriber(request, from: peer, requestID: requestID)
        case .fetchRequest(let request):
            let store = self.store
            try readers.submit(peer: peer, requestID: requestID) { .fetchReply(try await store.fetch(request)) }
        case .welcome, .jobAssignment, .saveAck, .cancelJob, .drain, .pushReply, .statusReply, .batchStatusReply,
            .jobsReply, .jobInfo, .historyReply, .snapshotPage, .subscriberInfo, .subscribersReply, .fetchReply, .error:
            throw ProtocolError(
                .unknownMessage, "the coordinator sends \(Self.name(of: body)) messages; it does not take them")
        }
    }

    nonisolated func reply(to peer: Data, requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        loop.send([peer] + Wire.frames(Wire.envelope(requestID, body)), on: Self.routerSocket)
    }

    /// Replies, or gathers the reply while a group commit is answered (``answering(_:)``).
    func replyOrGather(to peer: Data, requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        guard replyBatch != nil else { return reply(to: peer, requestID: requestID, body) }
        replyBatch?.add(Wire.envelope(requestID, body), for: peer)
    }

    /// Runs `body` with replies gathered, then sends them per peer.
    func answering(_ body: () -> Void) {
        replyBatch = ReplyBatch()
        body()
        let batch = replyBatch
        replyBatch = nil
        let batchingPeers = self.batchingPeers
        for message in batch?.messages(batching: { batchingPeers.contains($0) }) ?? [] {
            loop.send(message, on: Self.routerSocket)
        }
    }

    // MARK: - Timers

    /// What the server does with time rather than with a message (pruning is ``StoreMaintenance``'s).
    private func runTimers() async {
        while !Task.isCancelled && !stopping {
            readers.releaseIdleSnapshots()
            peerLog.flush(to: logger)
            await reapSilentWorkers()
            await expireTimedOutAttempts()
            // Retries and delayed jobs become due with time, not with a message: look for them each tick.
            if workers.anyHasCredit {
                do {
                    try await dispatch()
                } catch {
                    logger.error("dispatch failed", metadata: ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: configuration.feedHeartbeatInterval)
        }
    }

    /// Logs what was refused to a peer, at most a few times per peer and kind of error in a window (the rest
    /// are counted and the count logged; see ``LogThrottle``).
    func logRefusal(
        _ message: String, _ error: any Error, peer: Data, level: Logger.Level = .notice,
        metadata: Logger.Metadata = [:]
    ) {
        let kind =
            switch error {
            case let error as ProtocolError: "\(message): \(error.codeName)"
            case let error as StoreError: "\(message): \(error.code)"
            default: message
            }
        peerLog.log(
            message, level: level, peer: peer, kind: kind, metadata: metadata.merging(["error": "\(error)"]) { $1 },
            to: logger)
    }

    static func name(of body: Tributary_V1_Envelope.OneOf_Body) -> String {
        let text = "\(body)"
        return String(text.prefix { $0 != "(" })
    }
}
