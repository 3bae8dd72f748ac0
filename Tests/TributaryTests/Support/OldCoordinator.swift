import Foundation
import Synchronization
import ZeroMQ

@testable import TributaryDemo
@testable import TributaryProtocol

/// A coordinator of protocol version 1 as its peers see it, played by a ROUTER of the test's own: it announces no
/// version and reads no `requires`, so it serves what it understands as a coordinator without any capability would.
/// A hello gets a `Welcome` (without capabilities), a fetch an empty `FetchReply`, a push a `PushReply`; one-way
/// messages get nothing, and anything else (a `VersionRequest`, unknown to version 1) gets `UNKNOWN_MESSAGE`. Every
/// envelope it received is kept, in order.
final class OldCoordinator: @unchecked Sendable {
    // @unchecked: the socket is used only by the thread serving it, and the context only to make it and, once that
    // thread closed it, to end; `state` is a Mutex.
    let endpoint: String
    private let context: ZMQContext
    private let socket: ZMQSocket
    private let state = Mutex(State())

    private struct State {
        var received: [Tributary_V1_Envelope] = []
        var stopping = false
        var stopped = false
    }

    /// Binds a free loopback port and serves it from a thread of its own until ``stop()``.
    init() throws {
        context = try ZMQContext()
        socket = try context.makeSocket(.router)
        try socket.setLinger(milliseconds: 0)
        endpoint = try socket.bind("tcp://127.0.0.1:*")
        Thread.detachNewThread { [self] in serve() }
    }

    /// Runs `body` with an old coordinator, stopping it afterwards, also when `body` throws.
    static func with<T>(_ body: (OldCoordinator) async throws -> T) async throws -> T {
        let old = try OldCoordinator()
        do {
            let value = try await body(old)
            try await old.stop()
            return value
        } catch {
            try? await old.stop()
            throw error
        }
    }

    /// Whether it received an envelope whose body `matches`.
    func received(_ matches: (Tributary_V1_Envelope.OneOf_Body?) -> Bool) -> Bool {
        state.withLock { $0.received.contains { matches($0.body) } }
    }

    /// The envelopes received so far, in order.
    var received: [Tributary_V1_Envelope] { state.withLock { $0.received } }

    /// Stops serving, closes the socket and ends the context (bounded).
    func stop() async throws {
        state.withLock { $0.stopping = true }
        try await waitUntil("the old coordinator's thread to stop", timeout: .seconds(10)) {
            state.withLock { $0.stopped }
        }
        context.terminate()
    }

    private func serve() {
        defer {
            socket.close()
            state.withLock { $0.stopped = true }
        }
        while !state.withLock({ $0.stopping }) {
            guard (try? socket.waitForInput(milliseconds: 20)) == true else { continue }
            while let frames = (try? socket.receive(dontWait: true)) ?? nil, let peer = frames.first {
                guard let decoded = try? Wire.decodeEach(frames.dropFirst()) else { continue }
                for case .success(let sized) in decoded { answer(sized.envelope, from: peer) }
            }
        }
    }

    private func answer(_ envelope: Tributary_V1_Envelope, from peer: Data) {
        state.withLock { $0.received.append(envelope) }
        let body: Tributary_V1_Envelope.OneOf_Body
        switch envelope.body {
        case .workerHello:
            body = .welcome(
                .with {
                    $0.workerID = "w1"
                    $0.modelJson = DemoData.modelJSON
                    $0.liveness = 3
                })
        case .fetchRequest(let request): body = .fetchReply(.with { $0.objects.entity = request.entity })
        case .pushJobs(let push):
            body = .pushReply(
                .with {
                    $0.batch = "old"
                    $0.jobIds = push.jobs.indices.map { UInt64($0 + 1) }
                })
        case .workerReady, .heartbeat, .workerBye, .jobFailed: return
        default:
            body = .error(
                ProtocolError(
                    .unknownMessage, "the envelope has no message body (or one this coordinator does not know)"
                )
                .wire)
        }
        // As version 1 built it: no protocol_version.
        var reply = Tributary_V1_Envelope()
        reply.requestID = envelope.requestID
        reply.body = body
        try? socket.send([peer, Wire.signature, (try? reply.serializedData()) ?? Data()], dontWait: true)
    }
}
