import Foundation
import TributaryProtocol

/// Replies gathered while a group commit is answered, sent per worker once it is: one message carries many acks
/// and assignments (``EnvelopePacking``) instead of each being queued, packed and sent on its own.
struct ReplyPack {
    private var envelopes: [Data: [Data]] = [:]
    private var peers: [Data] = []

    /// Adds an envelope for `peer`, after those added before.
    mutating func add(_ envelope: Tributary_V1_Envelope, for peer: Data) {
        // Serializing a message built in memory cannot fail; an empty frame would be answered as malformed.
        let frame = (try? envelope.serializedData()) ?? Data()
        if envelopes[peer] == nil { peers.append(peer) }
        envelopes[peer, default: []].append(frame)
    }

    /// The messages to send: packed for peers that read batches, one envelope each for the others.
    func messages(batching: (Data) -> Bool) -> [[Data]] {
        var messages: [[Data]] = []
        for peer in peers {
            guard let frames = envelopes[peer] else { continue }
            if batching(peer) {
                messages += EnvelopePacking.pack(frames, behind: [peer])
            } else {
                messages += frames.map { [peer, Wire.signature, $0] }
            }
        }
        return messages
    }
}
