import Foundation

/// Notices that the process that started this one has gone (a coordinator killed with SIGKILL leaves its pool
/// workers behind), by watching the parent pid: Linux re-parents orphans, so `getppid()` changes.
public enum ParentWatch {
    /// Returns once the parent is no longer `parent`, or when the task is cancelled.
    public static func waitUntilOrphaned(from parent: Int32, every interval: Duration = .milliseconds(500)) async {
        while !Task.isCancelled && getppid() == parent {
            try? await Task.sleep(for: interval)
        }
    }
}
