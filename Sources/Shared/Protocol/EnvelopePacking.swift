import Foundation

/// Several envelopes in one ZeroMQ message: `["TRB1", Envelope, Envelope, …]`.
///
/// A job's life is a handful of small messages (assignment, save, ack, credit), and under load most of the cost
/// of each was its own send, poll wake-up and read on both sides. A socket loop queues what its process sends
/// while it is busy; these coalescers pack what was queued for one peer into messages of up to
/// ``maximumEnvelopes`` envelopes and ``maximumBytes`` bytes, in order. Nothing waits to fill a batch: an idle
/// connection sends each message at once, as before.
///
/// The coordinator takes batches from any peer. It sends them only to workers whose hello said they read them
/// (`accepts_batches`), so a client written against the one-envelope layout keeps working.
public enum EnvelopePacking {
    /// The most envelopes packed into one message.
    public static let maximumEnvelopes = 256
    /// The most envelope bytes packed into one message; a larger envelope travels alone. Far below the smallest
    /// message size limit a coordinator accepts (`--max-message-mb 1`).
    public static let maximumBytes = 64 << 10

    /// For a DEALER: every message goes to the coordinator, so all of them pack together.
    public static func coalesce(_ messages: [[Data]]) -> [[Data]] {
        var packer = Packer(prefix: [])
        for frames in messages { packer.add(frames, envelopeAt: 1) }
        return packer.finish()
    }

    /// For the coordinator's ROUTER: messages pack per routing id, for the peers `accepts` admits; the others
    /// are sent as queued.
    public static func coalesce(_ messages: [[Data]], accepts: (Data) -> Bool) -> [[Data]] {
        var packers: [Data: Packer] = [:]
        var order: [Data] = []
        var result: [[Data]] = []
        for frames in messages {
            guard let peer = frames.first, accepts(peer) else {
                result.append(frames)
                continue
            }
            if packers[peer] == nil {
                packers[peer] = Packer(prefix: [peer])
                order.append(peer)
            }
            packers[peer]!.add(frames, envelopeAt: 2)
        }
        for peer in order { result += packers[peer]!.finish() }
        return result
    }

    /// Packs one peer's envelopes (each already serialized) into messages behind `prefix` (a ROUTER's routing id),
    /// in order, within the limits.
    public static func pack(_ envelopes: [Data], behind prefix: [Data]) -> [[Data]] {
        var packer = Packer(prefix: prefix)
        for envelope in envelopes { packer.add(envelope) }
        return packer.finish()
    }

    /// Packs one peer's messages, in order.
    private struct Packer {
        let prefix: [Data]
        var done: [[Data]] = []
        var envelopes: [Data] = []
        var bytes = 0

        init(prefix: [Data]) {
            self.prefix = prefix
        }

        mutating func add(_ frames: [Data], envelopeAt index: Int) {
            guard frames.count == index + 1, frames[index - 1] == Wire.signature else {
                // Not one envelope in the protocol's layout: it goes as it is, after what came before it.
                flush()
                done.append(frames)
                return
            }
            add(frames[index])
        }

        mutating func add(_ envelope: Data) {
            if envelopes.count == maximumEnvelopes || (!envelopes.isEmpty && bytes + envelope.count > maximumBytes) {
                flush()
            }
            envelopes.append(envelope)
            bytes += envelope.count
        }

        mutating func flush() {
            guard !envelopes.isEmpty else { return }
            done.append(prefix + [Wire.signature] + envelopes)
            envelopes = []
            bytes = 0
        }

        mutating func finish() -> [[Data]] {
            flush()
            return done
        }
    }
}
