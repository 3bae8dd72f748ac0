import Foundation
import Logging
import Synchronization
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// A relay's request path: subscribers' feed requests arrive on its ROUTER and go upstream on one DEALER with
/// request ids of the relay's own; each reply goes back to the subscriber that asked, with its own id. Requests a
/// subscriber has no business sending through a relay (pushes, saves, job control) are refused, naming what to do.
///
/// Its loop runs on one thread (``run()``), which owns the two sockets and the table of requests in flight.
final class RelayRequestForwarder: @unchecked Sendable {
    // @unchecked: the sockets and `pending` are touched only by the thread running run(); `stopped` is a Mutex.

    /// Requests in flight at once; the next is refused `TOO_MANY_REQUESTS`.
    static let maximumPending = 10_000
    /// A request not answered in this long is forgotten (its reply, if it comes, is dropped).
    static let forgetAfter: Duration = .seconds(120)
    /// The largest request a subscriber may send (feed requests are small).
    static let maximumRequestBytes: Int64 = 1 << 20

    let listenEndpoint: String
    private let downstream: ZMQSocket
    private let upstream: ZMQSocket
    private let logger: Logger
    private let stopped = Mutex(false)

    private struct Pending {
        let peer: Data
        let requestID: UInt64
        let since: ContinuousClock.Instant
    }

    private var pending: [UInt64: Pending] = [:]
    private var nextRequestID: UInt64 = 1

    init(context: ZMQContext, upstream address: String, curve: CurveClientKeys?, downstream: String, logger: Logger)
        throws
    {
        self.logger = logger
        upstream = try context.makeSocket(.dealer)
        try curve?.apply(to: upstream)
        try upstream.connect(address)
        self.downstream = try context.makeSocket(.router)
        try self.downstream.setRouterMandatory(true)
        try self.downstream.setMaximumMessageSize(Self.maximumRequestBytes)
        listenEndpoint = try self.downstream.bind(downstream)
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

    /// Forwards until ``stop()``; then closes the sockets.
    func run() {
        defer {
            downstream.close()
            upstream.close()
        }
        while !stopped.withLock({ $0 }) {
            do {
                let ready = try ZMQSocket.waitForInput([downstream, upstream], milliseconds: 200)
                if ready[0] { try drainDownstream() }
                if ready[1] { try drainUpstream() }
                forgetStale()
            } catch {
                logger.error("relay request loop", metadata: ["error": "\(error)"])
            }
        }
    }

    func stop() {
        stopped.withLock { $0 = true }
    }

    private func drainDownstream() throws {
        while let frames = try downstream.receive(dontWait: true) {
            guard let peer = frames.first else { continue }
            let decoded: [Result<SizedEnvelope, ProtocolError>]
            do {
                decoded = try Wire.decodeEach(frames.dropFirst())
            } catch let error as ProtocolError {
                answer(peer, 0, .error(error.wire))
                continue
            }
            for item in decoded {
                switch item {
                case .failure(let error): answer(peer, 0, .error(error.wire))
                case .success(let sized): forward(sized.envelope, from: peer)
                }
            }
        }
    }

    private func forward(_ envelope: Tributary_V1_Envelope, from peer: Data) {
        guard let body = envelope.body, Self.forwards(body) else {
            let name = envelope.body.map { String("\($0)".prefix { $0 != "(" }) } ?? "an empty envelope"
            answer(
                peer, envelope.requestID,
                .error(
                    ProtocolError(
                        .unknownMessage,
                        "a relay forwards the feed's requests only (history, snapshot, status, subscriber, fetch, version), not \(name): send it to the coordinator"
                    ).wire))
            return
        }
        guard pending.count < Self.maximumPending else {
            answer(
                peer, envelope.requestID,
                .error(
                    ProtocolError(
                        .tooManyRequests, "the relay has \(pending.count) requests in flight upstream; retry shortly"
                    ).wire))
            return
        }
        let id = nextRequestID
        nextRequestID += 1
        pending[id] = Pending(peer: peer, requestID: envelope.requestID, since: .now)
        var upward = envelope
        upward.requestID = id
        do {
            try upstream.send(Wire.frames(upward))
        } catch {
            pending[id] = nil
            answer(
                peer, envelope.requestID, .error(ProtocolError(.internal, "the relay could not forward: \(error)").wire)
            )
        }
    }

    private func drainUpstream() throws {
        while let frames = try upstream.receive(dontWait: true) {
            guard let decoded = try? Wire.decodeEach(frames[...]) else { continue }
            for case .success(let sized) in decoded {
                guard let asked = pending.removeValue(forKey: sized.envelope.requestID) else { continue }
                var downward = sized.envelope
                downward.requestID = asked.requestID
                send(to: asked.peer, downward)
            }
        }
    }

    private func answer(_ peer: Data, _ requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        send(to: peer, Wire.envelope(requestID, body))
    }

    /// Sends to a subscriber; one that left meanwhile (unroutable) is skipped.
    private func send(to peer: Data, _ envelope: Tributary_V1_Envelope) {
        do {
            try downstream.send([peer] + Wire.frames(envelope), dontWait: true)
        } catch {
            logger.debug("relay reply dropped", metadata: ["error": "\(error)"])
        }
    }

    private func forgetStale() {
        guard !pending.isEmpty else { return }
        let cutoff = ContinuousClock.now - Self.forgetAfter
        pending = pending.filter { $0.value.since > cutoff }
    }
}
