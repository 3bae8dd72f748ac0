import Foundation
import TributaryCore

/// When a failed job runs again: exponential backoff with jitter, up to a number of attempts, after which the job
/// is dead (kept, with its error history, for inspection).
///
/// The delay before attempt `n + 1` is `min(cap, base × 2^(n−1))`, then a random point in its upper half, so jobs
/// that failed together do not all come back at the same instant.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The delay after the first failed attempt.
    public var base: Duration
    /// The longest delay.
    public var cap: Duration

    /// 20 attempts, 1 s doubling to 10 minutes (about 2 hours from the first failure to the last attempt).
    public static let `default` = RetryPolicy(maxAttempts: 20, base: .seconds(1), cap: .seconds(600))

    /// A policy of `maxAttempts` attempts, retried after `base`, doubling per attempt up to `cap` (with jitter).
    public init(maxAttempts: Int, base: Duration, cap: Duration) {
        self.maxAttempts = maxAttempts
        self.base = base
        self.cap = cap
    }

    /// The policy a job asked for, with the defaults where it left a field 0.
    public init(_ spec: JobSpec) {
        let defaults = Self.default
        self.init(
            maxAttempts: spec.maxAttempts == 0 ? defaults.maxAttempts : Int(spec.maxAttempts),
            base: spec.backoffBase == .zero ? defaults.base : spec.backoffBase,
            cap: spec.backoffCap == .zero ? defaults.cap : spec.backoffCap)
    }

    /// The delay after failed attempt `attempt` (1-based), with jitter drawn from `random`.
    public func delay(afterAttempt attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let exponent = min(max(attempt - 1, 0), 40)
        let seconds = min(cap.seconds, base.seconds * pow(2, Double(exponent)))
        return .seconds(seconds * Double.random(in: 0.5...1, using: &random))
    }
}
