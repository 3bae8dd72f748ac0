import Foundation
import TributaryProtocol

/// Protocol versions and capabilities: what the coordinator announces (docs/protocol.md §2a). A message that
/// requires a capability it lacks is refused by ``Intake/admit(_:userID:peer:)``.
extension CoordinatorServer {
    /// The names of the capabilities this coordinator has, as `Welcome` and `VersionReply` list them.
    static let capabilityNames = Capability.names(Capability.supported)
}
