import ServiceLifecycle
import ZeroMQ

/// CURVE admission for every socket of a coordinator: the allow-list and the ZAP handler that consults it.
///
/// Started before any socket is bound, so that no peer connects unchecked: a CURVE socket with a ZAP domain but
/// no handler bound yet admits any key (libzmq's default without the draft `ZMQ_ZAP_ENFORCE_DOMAIN`).
///
/// As a `Service` it answers until graceful shutdown; in the coordinator's group it is the first started and the
/// last to stop.
struct PeerAdmission: Service {
    let authorization: PeerAuthorization
    let zap: ZAPHandler

    /// Loads the allow-list and starts answering ZAP requests in `context`; nil without CURVE.
    /// - Throws: ``KeyFileError`` for an unreadable allow-list; ``ZMQError`` when a ZAP handler is bound already.
    static func start(_ configuration: CoordinatorConfiguration, context: ZMQContext) throws -> PeerAdmission? {
        guard let curve = configuration.curve else { return nil }
        let authorization = PeerAuthorization(
            allowList: try AllowList.load(directory: curve.allowDirectory), ownKey: curve.publicKey)
        let zap = try ZAPHandler(context: context) { authorization.decide($0) }
        zap.start()
        return PeerAdmission(authorization: authorization, zap: zap)
    }

    func run() async {
        try? await gracefulShutdown()
        await stop()
    }

    /// Stops answering (once every socket it admitted for is closed).
    func stop() async {
        let zap = self.zap
        await BlockingWork.run { zap.stop() }
    }
}
