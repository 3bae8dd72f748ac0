import Dispatch

extension DispatchTime {
    /// The time `duration` from now, for a thread that blocks on a semaphore; beyond a billion seconds, never (the
    /// nanoseconds would overflow).
    package static func after(_ duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        guard seconds <= 1_000_000_000 else { return .distantFuture }
        return .now() + .nanoseconds(Int(max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000))
    }
}
