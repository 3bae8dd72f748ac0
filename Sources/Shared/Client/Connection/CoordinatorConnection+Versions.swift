import TributaryProtocol

/// What a connection knows of the coordinator's protocol version, and the requests it keeps from a coordinator that
/// lacks a capability they need.
extension CoordinatorConnection {
    /// The coordinator's protocol version: the one its last message announced, else asked for (`VersionRequest`;
    /// a version 1 coordinator answers it with an error that announces no version).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` when no answer comes within `timeout`.
    func coordinatorVersion(timeout: Duration) async throws -> UInt32 {
        if let version = coordinatorProtocolVersion { return version }
        return ProtocolVersion.of(try await exchange(.versionRequest(.init()), requires: [], timeout: timeout))
    }

    /// Requests a coordinator acts on before it answers, in a way that one without a capability they use would get
    /// wrong for good (jobs enqueued without their queue or parents): they wait until its version is known.
    static func changesStore(_ body: Tributary_V1_Envelope.OneOf_Body) -> Bool {
        switch body {
        case .pushJobs, .putScheduleRequest: true
        default: false
        }
    }

    /// Refuses a request needing `capabilities` from a coordinator of `coordinatorVersion` that cannot have them: one
    /// of version 1 announces none and checks no `requires`. A later one checks `requires` itself.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `UNSUPPORTED` naming the capabilities and both versions.
    static func require(_ capabilities: Set<Capability>, coordinatorVersion: UInt32) throws {
        guard coordinatorVersion < ProtocolVersion.firstAnnounced, !capabilities.isEmpty else { return }
        throw ProtocolError.unsupported(
            missing: Capability.names(capabilities), coordinatorVersion: coordinatorVersion,
            coordinatorCapabilities: [], peerVersion: ProtocolVersion.current)
    }
}
