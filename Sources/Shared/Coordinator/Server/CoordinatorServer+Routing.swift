import Foundation
import TributaryCore
import TributaryProtocol
import ZeroMQ

/// Reading messages: each envelope decoded, authorized and routed to its handler, in arrival order.
extension CoordinatorServer {
    /// Handles what one wake-up of the socket loop received, in order. A message's saves go to the writer together
    /// once it is handled (``WorkerSessions/submit(moreToCome:)``), to be committed together with the rest of the wake-up's;
    /// a write queues behind them, and a read that must see them waits for their answers on its own
    /// (``Promised``): the router goes on.
    func handle(_ batch: [SocketLoop.Inbound]) async {
        for (index, message) in batch.enumerated() {
            let peer: Data
            let envelopes: [Result<SizedEnvelope, ProtocolError>]
            switch Intake.decode(message) {
            case .envelopes(let sender, let decoded): (peer, envelopes) = (sender, decoded)
            case .malformed(let sender, let error):
                refuseMalformed(error, from: sender)
                continue
            case .empty: continue
            }
            for decoded in envelopes {
                switch decoded {
                case .success(let sized): await handle(sized, of: message, from: peer)
                case .failure(let error):
                    replies.logRefusal("malformed message from peer", error, peer: peer)
                    replies.send(to: peer, requestID: 0, .error(error.wire))
                }
            }
            await sessions.submit(moreToCome: index < batch.count - 1)
        }
    }

    /// Handles one envelope of a message: a save is gathered for the next group commit; anything else is routed to
    /// its handler.
    func handle(_ sized: SizedEnvelope, of message: SocketLoop.Inbound, from peer: Data) async {
        let envelope = sized.envelope
        do {
            try intake.admit(envelope, userID: message.userID, peer: peer)
        } catch {
            replies.refuse(envelope.requestID, from: peer, error)
            return
        }
        sessions.workers[peer]?.lastSeen = .now
        if case .saveChanges(let save) = envelope.body {
            do {
                // A context's save outside any job needs no lease, so no registered worker: its id makes it once.
                // A job's save adds its credit before it is checked: a refused completion must not cost a slot.
                var worker = ""
                if save.saveID.isEmpty {
                    worker = try sessions.requireWorker(peer).id
                    if save.credit > 0 { sessions.addCredit(save.credit, to: peer) }
                }
                let request = try intake.checkSave(save, messageBytes: sized.bytes)
                sessions.handOver.gather(
                    .init(save: request, peer: peer, worker: worker, requestID: envelope.requestID))
            } catch let error as ProtocolError {
                replies.send(to: peer, requestID: envelope.requestID, .error(error.wire))
            } catch {
                replies.send(to: peer, requestID: envelope.requestID, .error(ProtocolError(.internal, "\(error)").wire))
            }
            return
        }
        if Self.followsSaves(envelope.body) { await sessions.submit(moreToCome: true) }
        do {
            try await route(envelope, from: peer)
        } catch {
            replies.refuse(envelope.requestID, from: peer, error)
        }
    }

    /// Whether a message's handler writes the store, behind the saves before it, or reads after them: they go to
    /// the writer first (a message may carry a save and then a fetch), so that its place follows them.
    static func followsSaves(_ body: Tributary_V1_Envelope.OneOf_Body?) -> Bool {
        switch body {
        case .jobFailed, .workerBye, .workerHello, .retryJobRequest, .cancelJobRequest, .deleteJobRequest,
            .putScheduleRequest, .scheduleActionRequest, .queueActionRequest, .subscriberUpdate,
            .deleteSubscriberRequest, .fetchRequest, .aggregateRequest, .historyRequest, .backupRequest:
            true
        default: false
        }
    }

    /// Answers a message whose frames do not make one.
    private func refuseMalformed(_ error: any Error, from peer: Data) {
        guard let error = error as? ProtocolError else {
            return replies.logRefusal("cannot decode a message", error, peer: peer, level: .error)
        }
        replies.logRefusal("malformed message from peer", error, peer: peer)
        replies.send(to: peer, requestID: 0, .error(error.wire))
    }

    private func route(_ envelope: Tributary_V1_Envelope, from peer: Data) async throws {
        guard let body = envelope.body else {
            throw ProtocolError(
                .unknownMessage, "the envelope has no message body (or one this coordinator does not know)")
        }
        let requestID = envelope.requestID
        if try answerClient(body, from: peer, requestID: requestID) { return }
        switch body {
        case .workerHello(let hello): try sessions.hello(hello, from: peer, requestID: requestID)
        case .workerReady(let ready):
            try sessions.requireWorker(peer)
            sessions.addCredit(ready.credit, to: peer)
        case .heartbeat: try sessions.requireWorker(peer)
        case .saveChanges:
            // Checked and gathered as they arrive (``handle(_:of:from:)``).
            throw ProtocolError(.internal, "a save reached the router's requests")
        case .jobFailed(let failure): try sessions.failed(failure, from: peer, requestID: requestID)
        case .workerBye: sessions.left(peer, reason: "said goodbye", handsBack: true)
        case .pushJobs(let push): try await pushJobs(push, from: peer, requestID: requestID)
        case .versionRequest:
            replies.send(
                to: peer, requestID: requestID, .versionReply(.with { $0.capabilities = Self.capabilityNames }))
        case .statusRequest, .batchStatusRequest, .jobsRequest, .jobRequest, .retryJobRequest, .cancelJobRequest,
            .deleteJobRequest, .putScheduleRequest, .schedulesRequest, .scheduleActionRequest, .queueActionRequest,
            .backupRequest, .historyRequest, .snapshotRequest, .subscriberUpdate, .subscribersRequest,
            .deleteSubscriberRequest, .fetchRequest, .aggregateRequest, .modelRequest:
            throw ProtocolError(.internal, "\(Self.name(of: body)) has no handler")
        case .welcome, .jobAssignment, .saveAck, .cancelJob, .drain, .pushReply, .statusReply, .batchStatusReply,
            .jobsReply, .jobInfo, .historyReply, .snapshotPage, .subscriberInfo, .subscribersReply, .fetchReply,
            .aggregateReply, .scheduleInfo, .schedulesReply, .backupReply, .versionReply, .modelReply, .queueInfo,
            .error:
            throw ProtocolError(
                .unknownMessage, "the coordinator sends \(Self.name(of: body)) messages; it does not take them")
        }
    }
}
