/// The refusal of a message that needs a capability the coordinator lacks: the same sentence whether the
/// coordinator refuses it or a peer finds out from the coordinator's version.
extension ProtocolError {
    /// `UNSUPPORTED`, naming the capabilities missing and both sides' versions.
    /// - Parameters:
    ///   - missing: the names of the capabilities the message needs and the coordinator lacks.
    ///   - coordinatorVersion: the coordinator's protocol version (1 when it announces none).
    ///   - coordinatorCapabilities: the names of the capabilities the coordinator has.
    ///   - peerVersion: the protocol version of the peer that sent the message.
    public static func unsupported(
        missing: [String], coordinatorVersion: UInt32, coordinatorCapabilities: [String], peerVersion: UInt32
    ) -> ProtocolError {
        let needs = missing.sorted().map { "'\($0)'" }.joined(separator: ", ")
        let has =
            coordinatorVersion < ProtocolVersion.firstAnnounced
            ? "which announces no capabilities"
            : coordinatorCapabilities.isEmpty
                ? "with no capabilities" : "with " + coordinatorCapabilities.sorted().joined(separator: ", ")
        return ProtocolError(
            .unsupported,
            "this request needs capabilit\(missing.count == 1 ? "y" : "ies") \(needs); the coordinator speaks "
                + "protocol \(coordinatorVersion), \(has); this peer speaks protocol \(peerVersion): upgrade the "
                + "coordinator before the peers that use the capability (docs/scale-out.md)")
    }
}
