import Foundation
import TributaryCore
import TributaryProtocol
import ZeroMQ

/// Reading messages: each envelope decoded, authorized and routed to its handler, in arrival order.
extension CoordinatorServer {
    /// Handles what one wake-up of the socket loop received, in order. A message's saves go to the writer together
    /// once it is handled (``submit(moreToCome:)``), to be committed together with the rest of the wake-up's;
    /// a write queues behind them, and a read that must see them waits for their answers on its own
    /// (``readAfterSaves(peer:requestID:_:)``): the router goes on.
    func handle(_ batch: [SocketLoop.Inbound]) async {
        for (index, message) in batch.enumerated() {
            let peer: Data
            let envelopes: [Result<SizedEnvelope, ProtocolError>]
            switch Intake.decode(message) {
            case .envelopes(let sender, let decoded): (peer, envelopes) = (sender, decoded)
            case .malformed(let sender, let error):
                refuseMalformed(error, from: sender)
                continue
            case .dropped:
                logger.warning("message dropped: its sender's routing id is one kept for local requests")
                continue
            }
            for decoded in envelopes {
                switch decoded {
                case .success(let sized): await handle(sized, of: message, from: peer)
                case .failure(let error):
                    logRefusal("malformed message from peer", error, peer: peer)
                    reply(to: peer, requestID: 0, .error(error.wire))
                }
            }
            await submit(moreToCome: index < batch.count - 1)
        }
    }

    /// Handles one envelope of a message: a save is gathered for the next group commit; anything else is routed to
    /// its handler.
    func handle(_ sized: SizedEnvelope, of message: SocketLoop.Inbound, from peer: Data) async {
        let envelope = sized.envelope
        do {
            try intake.admit(envelope, userID: message.userID, peer: peer)
        } catch {
            refuse(envelope.requestID, from: peer, error)
            return
        }
        workers[peer]?.lastSeen = .now
        if case .saveChanges(let save) = envelope.body {
            do {
                // A context's save outside any job needs no lease, so no registered worker: its id makes it once.
                // A job's save adds its credit before it is checked: a refused completion must not cost a slot.
                var worker = ""
                if save.saveID.isEmpty {
                    worker = try requireWorker(peer).id
                    if save.credit > 0 { addCredit(save.credit, to: peer) }
                }
                let request = try intake.checkSave(save, messageBytes: sized.bytes)
                handOver.gather(.init(save: request, peer: peer, worker: worker, requestID: envelope.requestID))
            } catch let error as ProtocolError {
                reply(to: peer, requestID: envelope.requestID, .error(error.wire))
            } catch {
                reply(to: peer, requestID: envelope.requestID, .error(ProtocolError(.internal, "\(error)").wire))
            }
            return
        }
        // A write queues behind the saves gathered so far, and a read after them waits for them: they go to the
        // writer first (a message may carry a save and then a fetch).
        if Self.writes(envelope.body) || Self.readsAfterSaves(envelope.body) { await submit(moreToCome: true) }
        await respond(to: envelope, from: peer)
    }

    /// Whether a message's handler writes the store (``write(_:then:)``), behind the saves before it.
    static func writes(_ body: Tributary_V1_Envelope.OneOf_Body?) -> Bool {
        switch body {
        case .jobFailed, .workerBye, .workerHello, .retryJobRequest, .cancelJobRequest, .deleteJobRequest,
            .putScheduleRequest, .scheduleActionRequest, .queueActionRequest, .subscriberUpdate,
            .deleteSubscriberRequest:
            true
        default: false
        }
    }

    /// Whether a message's handler reads after the saves before it (``readAfterSaves(peer:requestID:_:)``).
    static func readsAfterSaves(_ body: Tributary_V1_Envelope.OneOf_Body?) -> Bool {
        switch body {
        case .fetchRequest, .historyRequest, .backupRequest: true
        default: false
        }
    }

    /// Has the reader pool answer `work` once every save and write handed to the writer before it was answered, so
    /// that it sees them (a fetch after a save sent without waiting for its ack, say). The router does not wait.
    func readAfterSaves(
        peer: Data, requestID: UInt64, _ work: @escaping @Sendable () async throws -> ReaderPool.Body
    ) throws {
        let (barrier, pipeline) = (writer.barrier(), writer.pipeline)
        try readers.submit(peer: peer, requestID: requestID) {
            await pipeline.waitUntilAnswered(barrier)
            return try await work()
        }
    }

    /// Answers a message whose frames do not make one.
    private func refuseMalformed(_ error: any Error, from peer: Data) {
        guard let error = error as? ProtocolError else {
            return logRefusal("cannot decode a message", error, peer: peer, level: .error)
        }
        logRefusal("malformed message from peer", error, peer: peer)
        reply(to: peer, requestID: 0, .error(error.wire))
    }

    func respond(to envelope: Tributary_V1_Envelope, from routingID: Data) async {
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
        case .workerHello(let hello): try workerHello(hello, from: peer, requestID: requestID)
        case .workerReady(let ready): try workerReady(ready, from: peer)
        case .heartbeat: try requireWorker(peer)
        case .saveChanges:
            // Checked and gathered as they arrive (``handle(_:of:from:)``); a local caller cannot send one.
            throw ProtocolError(.internal, "a save reached the router's requests")
        case .jobFailed(let failure): try jobFailed(failure, from: peer, requestID: requestID)
        case .workerBye: workerLeft(peer, reason: "said goodbye", handsBack: true)
        case .pushJobs(let push): try await pushJobs(push, from: peer, requestID: requestID)
        case .statusRequest: try status(from: peer, requestID: requestID)
        case .batchStatusRequest(let request): try batchStatus(request, from: peer, requestID: requestID)
        case .jobsRequest(let request): try listJobs(request, from: peer, requestID: requestID)
        case .jobRequest(let request): try showJob(request.jobID, from: peer, requestID: requestID)
        case .retryJobRequest(let request): try retryJob(request.jobID, from: peer, requestID: requestID)
        case .cancelJobRequest(let request): try cancelJob(request.jobID, from: peer, requestID: requestID)
        case .deleteJobRequest(let request): try deleteJob(request.jobID, from: peer, requestID: requestID)
        case .putScheduleRequest(let request): try putSchedule(request, from: peer, requestID: requestID)
        case .schedulesRequest: try listSchedules(from: peer, requestID: requestID)
        case .scheduleActionRequest(let request): try scheduleAction(request, from: peer, requestID: requestID)
        case .queueActionRequest(let request): try queueAction(request, from: peer, requestID: requestID)
        case .backupRequest(let request): try backup(request, from: peer, requestID: requestID)
        case .versionRequest: version(from: peer, requestID: requestID)
        case .historyRequest(let request): try history(request, from: peer, requestID: requestID)
        case .snapshotRequest(let request): try snapshot(request, from: peer, requestID: requestID)
        case .subscriberUpdate(let update): try subscriberUpdate(update, from: peer, requestID: requestID)
        case .subscribersRequest: try listSubscribers(from: peer, requestID: requestID)
        case .deleteSubscriberRequest(let request):
            try deleteSubscriber(request, from: peer, requestID: requestID)
        case .fetchRequest(let request):
            let store = self.store
            try readAfterSaves(peer: peer, requestID: requestID) { .fetchReply(try await store.fetch(request)) }
        case .modelRequest:
            reply(to: peer, requestID: requestID, .modelReply(.with { $0.modelJson = modelJSON }))
        case .welcome, .jobAssignment, .saveAck, .cancelJob, .drain, .pushReply, .statusReply, .batchStatusReply,
            .jobsReply, .jobInfo, .historyReply, .snapshotPage, .subscriberInfo, .subscribersReply, .fetchReply,
            .scheduleInfo, .schedulesReply, .backupReply, .versionReply, .modelReply, .queueInfo,
            .error:
            throw ProtocolError(
                .unknownMessage, "the coordinator sends \(Self.name(of: body)) messages; it does not take them")
        }
    }
}
