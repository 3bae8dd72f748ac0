import Foundation
import TributaryCore
import TributaryProtocol

/// The coordinator's status (`tributary status`, `/api/status`, `/metrics`, the dashboard): read from what is
/// committed and from the router's last published state, so a status asked each second never holds up the router.
package struct StatusHandler: Sendable {
    let parts: HandlerParts

    /// Workers, the local pool, running jobs, counts by state, queues, limits and the feed's positions.
    package func status() -> Promised<CoordinatorStatus> {
        let reader = StatusReader(store: parts.store, limits: parts.configuration.runLimits, snapshot: parts.snapshot)
        let cluster = parts.cluster
        return RequestPlace.committed(parts) {
            var status = try CoordinatorStatus(try await reader.reply())
            status.cluster = cluster?()
            return status
        }
    }
}
