import Foundation
import Synchronization
import TributaryProtocol

/// Requests made inside the coordinator's process (its HTTP endpoint's), each waiting for its one reply under a
/// routing id no ZeroMQ peer can have: ZeroMQ's own ids are 5 bytes starting with 0, and a peer may not choose
/// one starting with 0, while these are 13 bytes starting with 0.
final class LocalPeers: Sendable {
    private struct State {
        var next: UInt64 = 0
        var waiting: [Data: CheckedContinuation<Tributary_V1_Envelope.OneOf_Body, any Error>] = [:]
        var closed = false
    }

    private let state = Mutex(State())
    private static let prefix = Data([0, 0x6c, 0x6f, 0x63, 0x61])  // 0, "loca"
    /// What the router's log throttle counts every local request's refusals under.
    static let logKey = Data("http".utf8)
    /// Most requests waiting at once: beyond it a request is refused (``LocalRequestError/busy``), so callers
    /// in a loop cannot queue work in front of the workers' saves without bound.
    static let maximumWaiting = 32

    /// Whether `peer` names a local request rather than a ZeroMQ peer.
    static func isLocal(_ peer: Data) -> Bool {
        peer.count == 13 && peer.starts(with: prefix)
    }

    /// Registers a request waiting for its reply.
    /// - Returns: the routing id to handle it under; nil once closed or too many wait (the continuation was
    ///   resumed with the error).
    func register(_ continuation: CheckedContinuation<Tributary_V1_Envelope.OneOf_Body, any Error>) -> Data? {
        var refusal = LocalRequestError.stopped
        let peer: Data? = state.withLock { state in
            guard !state.closed else { return nil }
            guard state.waiting.count < Self.maximumWaiting else {
                refusal = .busy
                return nil
            }
            state.next += 1
            var id = Self.prefix
            withUnsafeBytes(of: state.next.bigEndian) { id.append(contentsOf: $0) }
            state.waiting[id] = continuation
            return id
        }
        if peer == nil { continuation.resume(throwing: refusal) }
        return peer
    }

    /// Hands `body` to the request waiting under `peer`.
    /// - Returns: whether `peer` is a local request (its reply goes nowhere else, even when it is no longer waiting).
    func deliver(_ body: Tributary_V1_Envelope.OneOf_Body, to peer: Data) -> Bool {
        guard Self.isLocal(peer) else { return false }
        state.withLock { $0.waiting.removeValue(forKey: peer) }?.resume(returning: body)
        return true
    }

    /// Fails every request still waiting, and any made from now on: the router stopped.
    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting = [:] }
            return state.waiting
        }
        for continuation in waiting.values { continuation.resume(throwing: LocalRequestError.stopped) }
    }
}

/// Why a request made in the coordinator's process got no reply.
public enum LocalRequestError: Error, CustomStringConvertible {
    /// The coordinator stopped before answering.
    case stopped
    /// The request is not one the coordinator answers for a local caller.
    case notLocal(String)
    /// Too many requests are waiting for the router (`LocalPeers.maximumWaiting`).
    case busy

    public var description: String {
        switch self {
        case .stopped: "the coordinator is stopping"
        case .notLocal(let name): "\(name) is not a request the coordinator answers in its process"
        case .busy: "too many requests are waiting for the coordinator; try again"
        }
    }
}
