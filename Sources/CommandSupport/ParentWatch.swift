import Foundation
import Logging
import ServiceLifecycle

/// Notices that the process that started this one has gone (a coordinator killed with SIGKILL leaves its pool
/// workers behind), by watching the parent pid: Linux re-parents orphans, so `getppid()` changes.
public enum ParentWatch {
    /// Returns once the parent is no longer `parent`, or when the task is cancelled.
    public static func waitUntilOrphaned(from parent: Int32, every interval: Duration = .milliseconds(500)) async {
        while !Task.isCancelled && getppid() == parent {
            try? await Task.sleep(for: interval)
        }
    }

    /// Runs `group` until it ends, or cancels it as soon as this process is no longer a child of `parent`.
    ///
    /// An orphaned pool worker stops at once rather than gracefully: the coordinator that would answer its saves
    /// is gone (a graceful stop waited out each running job's save timeout, a minute), and whatever it had not
    /// committed runs again under the next coordinator.
    public static func run(_ group: ServiceGroup, whileChildOf parent: Int32, logger: Logger) async throws {
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                await waitUntilOrphaned(from: parent)
                guard !Task.isCancelled else { return }
                logger.notice("parent process \(parent) is gone; stopping now (its unfinished jobs run again)")
            }
            // Whichever ends first ends the other: a cancelled service group cancels its services.
            try await tasks.next()
            tasks.cancelAll()
        }
    }
}
