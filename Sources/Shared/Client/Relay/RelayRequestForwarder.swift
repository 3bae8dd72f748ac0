import Foundation
import Logging
import Synchronization
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// A relay's request path: subscribers' feed requests arrive on its ROUTER, which a ``/ZeroMQ/SocketLoop`` of its
/// own reads, and go upstream through a ``CoordinatorConnection`` under request ids of the connection's; each reply
/// goes back to the subscriber that asked, with its own id. Upstream may be a coordinator, another relay, or a
/// cluster's members: the connection follows the primary as every client does (docs/failover.md), so a standby's
/// `NOT_PRIMARY` never reaches a subscriber. Requests a subscriber has no business sending through a relay (pushes,
/// saves, job control) are refused, naming what to do.
final class RelayRequestForwarder: Sendable {
    /// Requests in flight at once; the next is refused `TOO_MANY_REQUESTS`.
    static let maximumPending = 10_000
    /// How long a request may wait for its reply upstream before its subscriber is answered that none came.
    static let replyTimeout: Duration = .seconds(120)
    /// The largest request a subscriber may send (feed requests are small).
    static let maximumRequestBytes: Int64 = 1 << 20

    let listenEndpoint: String
    /// The downstream ROUTER's loop: index 0.
    private let downstream: SocketLoop
    private let upstream: CoordinatorConnection
    private let inFlight = Atomic<Int>(0)

    /// Connects upstream (`upstream` one endpoint, or a cluster's members comma-separated) and binds `downstream`.
    init(context: ZMQContext, upstream address: String, curve: CurveClientKeys?, downstream: String, logger: Logger)
        throws
    {
        upstream = try CoordinatorConnection(endpoint: address, curve: curve, context: context)
        // Nothing upstream sends unasked matters here (a reply after its request's deadline).
        upstream.finishMessages()
        let router = try context.makeSocket(.router)
        try router.setRouterMandatory(true)
        try router.setMaximumMessageSize(Self.maximumRequestBytes)
        listenEndpoint = try router.bind(downstream)
        self.downstream = try SocketLoop(
            name: "tributary-relay-requests", sockets: [.init(router, receives: true)],
            onSendFailure: { error, _ in
                // A subscriber that left meanwhile (unroutable).
                logger.debug("relay reply dropped", metadata: ["error": "\(error)"])
            })
    }

    /// Whether a relay forwards a message upstream.
    static func forwards(_ body: Tributary_V1_Envelope.OneOf_Body) -> Bool {
        switch body {
        case .historyRequest, .snapshotRequest, .statusRequest, .subscriberUpdate, .subscribersRequest, .fetchRequest,
            .aggregateRequest, .versionRequest, .modelRequest:
            true
        default: false
        }
    }

    /// Forwards what subscribers send until ``stop()``.
    func run() async {
        downstream.start()
        for await batch in downstream.inbound {
            for message in batch { receive(message.frames) }
        }
    }

    /// Stops reading subscribers, closes the sockets, and returns once they are closed.
    func stop() async {
        await downstream.stop()
        await upstream.close()
    }

    private func receive(_ frames: [Data]) {
        guard let peer = frames.first else { return }
        let decoded: [Result<SizedEnvelope, ProtocolError>]
        do {
            decoded = try Wire.decodeEach(frames.dropFirst())
        } catch let error as ProtocolError {
            return answer(peer, 0, .error(error.wire))
        } catch {
            return
        }
        for item in decoded {
            switch item {
            case .failure(let error): answer(peer, 0, .error(error.wire))
            case .success(let sized): forward(sized.envelope, from: peer)
            }
        }
    }

    private func forward(_ envelope: Tributary_V1_Envelope, from peer: Data) {
        guard let body = envelope.body, Self.forwards(body) else {
            let name = envelope.body.map { String("\($0)".prefix { $0 != "(" }) } ?? "an empty envelope"
            return answer(
                peer, envelope.requestID,
                .error(
                    ProtocolError(
                        .unknownMessage,
                        "a relay forwards the feed's requests only (history, snapshot, status, subscriber, fetch, version), not \(name): send it to the coordinator"
                    ).wire))
        }
        guard inFlight.add(1, ordering: .relaxed).oldValue < Self.maximumPending else {
            inFlight.subtract(1, ordering: .relaxed)
            return answer(
                peer, envelope.requestID,
                .error(
                    ProtocolError(
                        .tooManyRequests,
                        "the relay has \(Self.maximumPending) requests in flight upstream; retry shortly"
                    ).wire))
        }
        let asked = envelope.requestID
        upstream.forward(envelope, timeout: Self.replyTimeout) { [self] result in
            inFlight.subtract(1, ordering: .relaxed)
            var reply: Tributary_V1_Envelope
            switch result {
            case .success(let envelope): reply = envelope
            case .failure(let error as ProtocolError): reply = Wire.envelope(0, .error(error.wire))
            case .failure(let error):
                reply = Wire.envelope(0, .error(ProtocolError(.internal, "the relay could not forward: \(error)").wire))
            }
            reply.requestID = asked
            downstream.send([peer] + Wire.frames(reply), on: 0)
        }
    }

    private func answer(_ peer: Data, _ requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        downstream.send([peer] + Wire.frames(Wire.envelope(requestID, body)), on: 0)
    }
}
