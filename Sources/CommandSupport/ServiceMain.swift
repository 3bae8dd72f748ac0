import Logging
import ServiceLifecycle
import TributaryMessaging

/// How each executable runs its services: until they stop (for a pool worker, also until its parent is gone),
/// then the process's ZeroMQ context ends, so messages queued on closed sockets still go out.
public enum ServiceMain {
    /// Runs `group`; with `parentPid`, cancels it as soon as this process is no longer that process's child.
    public static func run(_ group: ServiceGroup, parentPid: Int32? = nil, logger: Logger) async throws {
        // On an error the process exits as it is: a service that failed may have left a socket open, and ending
        // the context would wait for it for ever.
        if let parentPid {
            try await ParentWatch.run(group, whileChildOf: parentPid, logger: logger)
        } else {
            try await group.run()
        }
        await MessagingRuntime.shutDown()
    }
}
