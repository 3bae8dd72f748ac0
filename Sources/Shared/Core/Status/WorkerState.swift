/// What a connected worker is doing, as `tributary status` shows it.
public enum WorkerState: String, Sendable, Hashable, CaseIterable {
    /// Connected, running no job.
    case idle
    /// Running one job or more.
    case busy

    /// Every state's name, for messages that list them.
    public static let names = allCases.map(\.rawValue)
}
