/// What `JobClient/schedule(_:action:)` does to a schedule (`tributary schedules pause|resume|delete`).
public enum ScheduleAction: String, Sendable, CaseIterable {
    /// Its ticks enqueue nothing until it resumes.
    case pause
    /// It fires again from its next tick (the ticks it passed while paused do not fire).
    case resume
    /// It is gone; the jobs it enqueued stay.
    case delete

    /// Every action's name, for messages that list them.
    public static let names = allCases.map(\.rawValue)
}
