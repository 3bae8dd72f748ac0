import Foundation
import Logging
import ServiceLifecycle
import TributaryCluster
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// A standby's jobs/control endpoint (docs/failover.md, "Clients"): it binds the endpoint the member advertises and
/// answers every message `NOT_PRIMARY`, naming the primary it follows, so that a client that reached it moves there.
/// Nothing a client sends it is done, so the client may send the same request to the primary.
///
/// Answers are made on the socket's loop thread as messages arrive; a message with no request id (a heartbeat) is
/// answered under id 0. With CURVE it takes the coordinator's key, and admits any client that knows it: it tells
/// nothing but where the primary is.
struct StandbyRouter: Service {
    let configuration: CoordinatorConfiguration
    /// The member this node follows, and the epoch it leads under.
    let primary: ClusterMember
    let epoch: Int64
    let name: String
    let logger: Logger

    func run() async throws {
        let router = try ZMQContext.shared().makeSocket(.router)
        if let curve = configuration.curve { try router.setCurveServer(secretKey: curve.secretKey) }
        try router.setMaximumMessageSize(configuration.limits.maximumMessageBytes)
        try router.setLinger(milliseconds: 0)
        // The primary role this node just left may still hold the endpoint for a moment: its socket closes on
        // libzmq's own threads.
        var tries = 0
        while true {
            do {
                _ = try router.bind(configuration.listen)
                break
            } catch let error as ZMQError where error.code == EADDRINUSE {
                tries += 1
                if tries == 50 {
                    logger.warning(
                        "standby cannot bind \(configuration.listen) yet (another process holds it?); trying each 100 ms"
                    )
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let answers = Answers(primary: primary, epoch: epoch, name: name)
        let loop = try SocketLoop(
            name: "tributary-standby",
            sockets: [.init(router, receives: true, consume: { answers.answer($0) })])
        answers.loop = loop
        loop.start()
        logger.info("standby answering NOT_PRIMARY at \(configuration.listen), naming '\(primary.name)'")
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        }
        await loop.stop()
    }

    /// What the loop answers with; the loop itself is set once, before it starts.
    private final class Answers: @unchecked Sendable {
        // @unchecked: `loop` is set once, before the loop starts (its thread's start is the barrier); only read on
        // the loop thread after.
        weak var loop: SocketLoop?
        let body: Tributary_V1_Envelope.OneOf_Body

        init(primary: ClusterMember, epoch: Int64, name: String) {
            var error = ProtocolError(
                .notPrimary,
                "'\(name)' is a standby of the cluster: send requests to the primary '\(primary.name)' at \(primary.endpoint) (epoch \(epoch))"
            ).wire
            error.primary = .with {
                $0.name = primary.name
                $0.endpoint = primary.endpoint
                $0.feed = primary.feed
                $0.epoch = epoch
            }
            body = .error(error)
        }

        /// Answers each envelope of a message (`[peer, "TRB1", envelope…]`) under its request id; a message not in
        /// the protocol's layout is answered once, under id 0. On the loop thread: sent at once.
        func answer(_ frames: [Data]) {
            guard let loop, let peer = frames.first else { return }
            let ids: [UInt64]
            if let decoded = try? Wire.decodeEach(frames.dropFirst(), discardingUnknownFields: true) {
                ids = decoded.map { (try? $0.get().envelope.requestID) ?? 0 }
            } else {
                ids = [0]
            }
            for id in ids { loop.send([peer] + Wire.frames(Wire.envelope(id, body)), on: 0) }
        }
    }
}
