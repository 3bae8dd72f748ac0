import Foundation
import Synchronization
import TributaryProtocol

/// The routing ids of the peers that read batches (workers that said so in their hello), shared between the
/// coordinator's actor, which adds and removes them, and its socket loop's thread, which coalesces for them.
final class PackingPeers: Sendable {
    private let peers = Mutex<Set<Data>>([])

    func insert(_ peer: Data) { peers.withLock { _ = $0.insert(peer) } }
    func contains(_ peer: Data) -> Bool { peers.withLock { $0.contains(peer) } }
    func remove(_ peer: Data) { peers.withLock { _ = $0.remove(peer) } }

    /// Coalesces a ROUTER's queued messages for the peers known now.
    func coalesce(_ messages: [[Data]]) -> [[Data]] {
        peers.withLock { peers in
            peers.isEmpty ? messages : EnvelopePacking.coalesce(messages, accepts: { peers.contains($0) })
        }
    }
}
