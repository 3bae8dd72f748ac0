import Foundation
import Logging
import TributaryCore
import TributaryProtocol

/// What the router sends its peers: replies now, or gathered while a group commit is answered and then sent together
/// (packed for the workers that read several envelopes in one message), and refusals, logged at most a few times per
/// peer and kind of error in a window (``LogThrottle``).
///
/// Owned by the router (``CoordinatorServer``) and used only in its turn, by it and the parts it composes.
final class PeerReplies {
    let io: RouterIO
    let logger: Logger
    /// Replies gathered while a group commit is answered (``answering(_:)``).
    private var gathered: ReplyPack?
    /// Repeated complaints about one peer, thinned out (a peer sending bad frames in a loop).
    private var log = LogThrottle()

    init(io: RouterIO, logger: Logger) {
        self.io = io
        self.logger = logger
    }

    /// Sends `body` to `peer` now.
    func send(to peer: Data, requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        io.reply(to: peer, requestID: requestID, body)
    }

    /// Sends `body` to `peer`, or gathers it while a group commit is answered (``answering(_:)``).
    func sendOrGather(to peer: Data, requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        guard gathered != nil else { return send(to: peer, requestID: requestID, body) }
        if case .error(let error) = body { WriterMetrics.refused(ProtocolError.name(of: error.code)) }
        gathered?.add(Wire.envelope(requestID, body), for: peer)
    }

    /// Runs `body` with replies gathered, then sends them per peer.
    func answering(_ body: () -> Void) {
        gathered = ReplyPack()
        body()
        if let pack = gathered { io.send(pack) }
        gathered = nil
    }

    /// Answers a request that failed with the error, as the protocol names it.
    func refuse(_ requestID: UInt64, from peer: Data, _ error: any Error) {
        switch error {
        case let error as ProtocolError:
            logRefusal("request refused", error, peer: peer)
            send(to: peer, requestID: requestID, .error(error.wire))
        case let error as StoreError:
            logRefusal("store refused a request", error, peer: peer)
            send(to: peer, requestID: requestID, .error(ProtocolError(error).wire))
        default:
            logRefusal("request failed", error, peer: peer, level: .error)
            send(to: peer, requestID: requestID, .error(ProtocolError(.internal, "\(error)").wire))
        }
    }

    /// Logs what was refused to a peer, at most a few times per peer and kind of error in a window (the rest
    /// are counted and the count logged; see ``LogThrottle``).
    func logRefusal(
        _ message: String, _ error: any Error, peer: Data, level: Logger.Level = .notice,
        metadata: Logger.Metadata = [:]
    ) {
        // A store that cannot be written is logged once, when found (``CommitAnswers/reportWritability()``), not per
        // request.
        if (error as? StoreError)?.code == .unwritable || (error as? ProtocolError)?.code == .storeUnwritable { return }
        let kind =
            switch error {
            case let error as ProtocolError: "\(message): \(error.codeName)"
            case let error as StoreError: "\(message): \(error.code)"
            default: message
            }
        log.log(
            message, level: level, peer: peer, kind: kind, metadata: metadata.merging(["error": "\(error)"]) { $1 },
            to: logger)
    }

    /// Logs the counts of the complaints thinned out in windows that ended.
    func flushLog() {
        log.flush(to: logger)
    }
}
