/// What `tributary queues pause|resume` (`JobClient.queue(_:action:)`) does to a named queue.
public enum QueueAction: String, Sendable, CaseIterable {
    /// No job of the queue is claimed until it is resumed: pushes, retries and running jobs go on; kept in the
    /// store, so across restarts.
    case pause
    /// Its due jobs are claimed again.
    case resume

    /// Every action's name, for messages that list them.
    public static let names = allCases.map(\.rawValue)
}
