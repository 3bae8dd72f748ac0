/// Where the router is in its life.
enum RouterLifecycle: Sendable {
    /// Made, not serving yet: `/readyz` says not ready.
    case starting
    /// Serving messages (``CoordinatorServer/run()``).
    case serving
    /// A stop is under way (or done): no new workers, pushes or claims; a second caller waits on the same stop.
    case stopping(Task<Void, Never>)
}
