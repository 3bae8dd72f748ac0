/// The wire protocol's version, as every envelope announces it (`Envelope.protocol_version`).
///
/// Version 1 peers predate the announcement: their envelopes carry 0 there, and they read no `requires`. Version 2
/// announces itself, lists in `requires` the ``Capability``s a message needs, and a version 2 coordinator refuses
/// a message needing one it lacks (`UNSUPPORTED`) instead of serving it without the feature. docs/protocol.md §2a
/// gives the rules; docs/scale-out.md the order of a rolling upgrade.
public enum ProtocolVersion {
    /// The version this build speaks.
    public static let current: UInt32 = 2

    /// The first version that announces itself and checks `requires`: a coordinator below it cannot be known to
    /// have any capability.
    public static let firstAnnounced: UInt32 = 2

    /// The version the sender of `envelope` speaks: 1 when it announces none.
    public static func of(_ envelope: Tributary_V1_Envelope) -> UInt32 {
        max(envelope.protocolVersion, 1)
    }
}
