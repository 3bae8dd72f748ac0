import CZeroMQ
import Foundation
import Synchronization

/// A ZAP handler (ZeroMQ RFC 27) on a thread of its own: libzmq asks it about every peer that connects to a socket
/// of the same context that has a ZAP domain, and lets the peer in only if it answers "200". The user id it gives
/// comes with each of that peer's messages as the `User-Id` property.
///
/// Create it before binding the sockets it guards, and stop it before the context terminates.
public final class ZAPHandler: @unchecked Sendable {
    // @unchecked: `socket` is used only by the handler's thread once it started; `stopping` is atomic.

    /// What libzmq asks about a connecting peer.
    public struct Request: Sendable {
        /// The socket's ZAP domain.
        public let domain: String
        /// The peer's IP address.
        public let address: String
        /// The security mechanism: "NULL", "PLAIN" or "CURVE".
        public let mechanism: String
        /// For CURVE, one frame: the peer's 32-byte public key.
        public let credentials: [Data]
    }

    /// The answer about one peer.
    public enum Decision: Sendable {
        /// Let it in; its messages carry `userID`.
        case allow(userID: String)
        /// Keep it out (the handshake fails; the peer's messages never arrive).
        case deny(reason: String)
    }

    /// The endpoint libzmq sends ZAP requests to.
    public static let endpoint = "inproc://zeromq.zap.01"

    private let socket: ZMQSocket
    private let authorize: @Sendable (Request) -> Decision
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    /// Binds the ZAP endpoint in `context`.
    /// - Throws: ``ZMQError`` when another handler is bound in this context.
    public init(context: ZMQContext, authorize: @escaping @Sendable (Request) -> Decision) throws {
        socket = try context.makeSocket(.rep)
        try socket.setLinger(milliseconds: 0)
        _ = try socket.bind(Self.endpoint)
        self.authorize = authorize
    }

    /// Starts answering on the handler's thread.
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in run() }
        thread.name = "tributary-zap"
        thread.start()
    }

    /// Stops answering and closes the socket; returns once the thread ended.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        if started.load(ordering: .acquiring) {
            finished.wait()
        } else {
            socket.close()
        }
    }

    private func run() {
        while !stopping.load(ordering: .acquiring) {
            guard (try? socket.waitForInput(milliseconds: 100)) == true,
                let frames = try? socket.receive(dontWait: true)
            else { continue }
            let reply = answer(frames)
            try? socket.send(reply)
        }
        socket.close()
        finished.signal()
    }

    /// The ZAP reply to one request: version, request id, status code, status text, user id, metadata.
    private func answer(_ frames: [Data]) -> [Data] {
        guard frames.count >= 6, String(decoding: frames[0], as: UTF8.self) == "1.0" else {
            return [
                Data("1.0".utf8), frames.count > 1 ? frames[1] : Data(), Data("500".utf8),
                Data("malformed ZAP request".utf8), Data(), Data(),
            ]
        }
        let text = { (index: Int) in String(decoding: frames[index], as: UTF8.self) }
        let request = Request(
            domain: text(2), address: text(3), mechanism: text(5), credentials: Array(frames.dropFirst(6)))
        switch authorize(request) {
        case .allow(let userID):
            return [Data("1.0".utf8), frames[1], Data("200".utf8), Data("OK".utf8), Data(userID.utf8), Data()]
        case .deny(let reason):
            return [Data("1.0".utf8), frames[1], Data("400".utf8), Data(reason.utf8), Data(), Data()]
        }
    }
}
