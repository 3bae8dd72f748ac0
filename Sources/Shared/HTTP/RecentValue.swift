import Synchronization

/// A value made at most once per `maximumAge` whoever asks: callers that come while one is being made wait for it,
/// and those that come within `maximumAge` of its start share it. The dashboard's snapshot (each open page's event
/// stream and `/api/dashboard`) goes through one, so the coordinator's load does not grow with the pages open. What
/// must show a command's effect as soon as it returns (`/metrics`, `/api/status`) is not shared this way.
final class RecentValue<Value: Sendable>: Sendable {
    private let maximumAge: Duration
    private let make: @Sendable () async throws -> Value
    private let latest = Mutex<(at: ContinuousClock.Instant, task: Task<Value, any Error>)?>(nil)

    init(maximumAge: Duration, make: @escaping @Sendable () async throws -> Value) {
        self.maximumAge = maximumAge
        self.make = make
    }

    /// The value made within `maximumAge`, or a new one.
    func value() async throws -> Value {
        let task = latest.withLock { latest in
            if let current = latest, current.at.duration(to: .now) < maximumAge { return current.task }
            let task = Task { [make] in try await make() }
            latest = (.now, task)
            return task
        }
        return try await task.value
    }
}
