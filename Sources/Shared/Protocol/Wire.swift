import Foundation
import SwiftProtobuf

/// Frame layout of the jobs/control socket: `["TRB1", Envelope]`, behind the routing id on the ROUTER side, or
/// several envelopes in one message, `["TRB1", Envelope, Envelope, …]` (see ``EnvelopePacking``).
public enum Wire {
    /// The protocol signature, frame 0 of every message from a DEALER.
    public static let signature = Data("TRB1".utf8)

    /// The feed topic of coordinator heartbeats (entity names cannot start with `$`).
    public static let heartbeatTopic = "$heartbeat"

    /// The feed topic of commit summaries (`CommitSummary`), one per commit after its didSave parts.
    public static let commitsTopic = "$commits"

    /// The feed topic of job progress and state changes (`JobProgress`).
    public static let jobsTopic = "$jobs"

    /// The queue an empty `JobSpec.queue` or `WorkerHello.queues` stands for.
    public static let defaultQueue = "default"

    /// The frames a DEALER sends for an envelope.
    public static func frames(_ envelope: Tributary_V1_Envelope) -> [Data] {
        // Serializing a message built in memory cannot fail; an empty frame would be answered as malformed.
        [signature, (try? envelope.serializedData()) ?? Data()]
    }

    /// Decodes a message of exactly one envelope (what a peer that did not ask for batches receives).
    /// - Throws: ``ProtocolError`` `MALFORMED_FRAME` naming what is wrong.
    public static func decode(_ frames: ArraySlice<Data>) throws -> Tributary_V1_Envelope {
        guard frames.count == 2 else {
            throw ProtocolError(
                .malformedFrame, "expected 2 frames (\"TRB1\", Envelope), got \(frames.count)")
        }
        return try decodeEach(frames)[0].get().envelope
    }

    /// Decodes the frames a DEALER sent (without the routing id): one envelope or a batch of them, in order.
    /// - Returns: each envelope with its size in bytes, or the `MALFORMED_FRAME` error naming what is wrong
    ///   with that one (the others stand).
    /// - Parameters:
    ///   - frames: the message's frames after the routing id: the signature, then one envelope or several.
    ///   - discardingUnknownFields: skip fields this build does not know instead of keeping them for re-encoding:
    ///     for a receiver that never forwards what it decodes (the coordinator), so that a frame of countless
    ///     unknown fields costs a scan, not an allocation per field.
    /// - Throws: ``ProtocolError`` `MALFORMED_FRAME` when the message is not in the protocol's layout at all.
    public static func decodeEach(
        _ frames: ArraySlice<Data>, discardingUnknownFields: Bool = false
    ) throws -> [Result<SizedEnvelope, ProtocolError>] {
        guard frames.count >= 2 else {
            throw ProtocolError(
                .malformedFrame, "expected the frames (\"TRB1\", Envelope, …), got \(frames.count)")
        }
        guard frames[frames.startIndex] == signature else {
            throw ProtocolError(.malformedFrame, "frame 0 is not the protocol signature \"TRB1\"")
        }
        // One message is one turn's work for the coordinator: a peer may not make it arbitrarily large.
        guard frames.count - 1 <= EnvelopePacking.maximumEnvelopes else {
            throw ProtocolError(
                .malformedFrame,
                "a message carries at most \(EnvelopePacking.maximumEnvelopes) envelopes, got \(frames.count - 1)")
        }
        var options = BinaryDecodingOptions()
        options.discardUnknownFields = discardingUnknownFields
        return frames.dropFirst().enumerated().map { offset, frame in
            do {
                return .success(
                    SizedEnvelope(
                        envelope: try Tributary_V1_Envelope(serializedBytes: frame, options: options),
                        bytes: frame.count))
            } catch {
                return .failure(
                    ProtocolError(.malformedFrame, "frame \(offset + 1) is not a valid Envelope (\(error))"))
            }
        }
    }

    /// An envelope carrying `body`, answering `requestID`, announcing this build's protocol version (every
    /// envelope this build sends does, so its receiver knows what it speaks).
    /// - Parameters:
    ///   - requestID: a request's own id, or the id of the request a reply answers; one-way messages may use 0.
    ///   - body: the message.
    ///   - requires: the capabilities the message needs from its receiver (``Capability/needed(by:)``).
    public static func envelope(
        _ requestID: UInt64 = 0, _ body: Tributary_V1_Envelope.OneOf_Body, requires: Set<Capability> = []
    ) -> Tributary_V1_Envelope {
        var envelope = Tributary_V1_Envelope()
        envelope.requestID = requestID
        envelope.protocolVersion = ProtocolVersion.current
        envelope.requires = Capability.names(requires)
        envelope.body = body
        return envelope
    }
}

/// An envelope as received, with the size of its frame (limits on saves are in bytes).
public struct SizedEnvelope: Sendable {
    /// The decoded envelope.
    public let envelope: Tributary_V1_Envelope
    /// The size of its frame, in bytes.
    public let bytes: Int
}
