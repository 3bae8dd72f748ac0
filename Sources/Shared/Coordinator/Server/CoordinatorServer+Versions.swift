import Foundation
import TributaryProtocol

/// Protocol versions and capabilities: what the coordinator announces, and the messages it refuses because they
/// need a capability it lacks (docs/protocol.md §2a).
extension CoordinatorServer {
    /// The names of the capabilities this coordinator has, as `Welcome` and `VersionReply` list them.
    static let capabilityNames = Capability.names(Capability.supported)

    /// Refuses a message whose `requires` names a capability this coordinator lacks (one of a newer protocol, or a
    /// name it does not know): served without it, the message would be served wrongly.
    /// - Throws: ``ProtocolError`` `UNSUPPORTED` naming the capabilities and both versions.
    static func requireCapabilities(of envelope: Tributary_V1_Envelope) throws {
        let missing = Set(envelope.requires).subtracting(capabilityNames)
        guard !missing.isEmpty else { return }
        throw ProtocolError.unsupported(
            missing: Array(missing), coordinatorVersion: ProtocolVersion.current,
            coordinatorCapabilities: capabilityNames, peerVersion: ProtocolVersion.of(envelope))
    }

    /// Answers `VersionRequest`: the reply's envelope carries the version, its body the capabilities.
    func version(from peer: Data, requestID: UInt64) {
        reply(to: peer, requestID: requestID, .versionReply(.with { $0.capabilities = Self.capabilityNames }))
    }
}
