import Foundation
import TributaryCore

/// What goes to the writer at the router's next hand-over (``WorkerSessions/submit(moreToCome:)``): the saves gathered
/// from the message being handled, and claims for workers' credit when a dispatch is due.
///
/// A dispatch becomes due with whatever may let jobs go out: credit offered, jobs pushed or queued, a worker gone,
/// a retry's time come, a full rate limit with room again. The claims then go with the next saves, so many jobs are
/// claimed in one transaction.
struct WriterHandOver {
    /// Whether workers' credit is to be claimed at the next hand-over.
    var isDue = false
    /// When a dispatch is due because a full rate limit has room again (seconds since 1970), if one is scheduled.
    private var rateLimitWake: Double?
    /// The saves of the message being handled.
    private var saves: [SaveGroup.Member] = []
    /// When claims last went to the writer.
    private var lastClaim: ContinuousClock.Instant?

    /// While the store cannot be written, claims go at most this often: one that finds a job to lease tells whether
    /// the store can be written again, without one failing at every step of the router.
    static let unwritableClaimInterval: Duration = .seconds(1)

    /// Adds a save for the next hand-over.
    mutating func gather(_ save: SaveGroup.Member) {
        saves.append(save)
    }

    /// The saves gathered, and claims for every worker's credit when a dispatch is due and `claiming`. While the
    /// store is not `writable`, the dispatch stays due and claims go once per ``unwritableClaimInterval``.
    mutating func take(
        from workers: inout WorkerRegistry, claiming: Bool, runLimits: RunLimits, writable: Bool = true,
        now: ContinuousClock.Instant = .now
    ) -> (saves: [SaveGroup.Member], claims: [QueuedCommit.Claim]) {
        var claims: [QueuedCommit.Claim] = []
        let held = !writable && lastClaim.map { now - $0 < Self.unwritableClaimInterval } ?? false
        if isDue && claiming && !held {
            isDue = false
            claims = workers.takeCredit(runLimits: runLimits)
            if !claims.isEmpty { lastClaim = now }
        }
        defer { saves = [] }
        return (saves, claims)
    }

    /// A claim found a rate limit full until `room` (seconds since 1970): the router is woken then
    /// (``RouterEvent/rateLimitRoom``) rather than at its next tick, up to half a second later, so the limit's pace
    /// is kept to.
    mutating func wake(at room: Double?, through io: RouterIO) {
        guard let room else { return }
        if let scheduled = rateLimitWake, scheduled <= room { return }
        rateLimitWake = room
        Task { [weak io] in
            // A moment past it, so that the oldest start has left the window when the claim looks.
            try? await Task.sleep(for: .seconds(max(0, room - Date().timeIntervalSince1970) + 0.002))
            io?.post(.rateLimitRoom)
        }
    }

    /// The wake-up scheduled by ``wake(at:through:)`` came: a dispatch is due if some worker has credit.
    mutating func roomCame(workers: WorkerRegistry) {
        rateLimitWake = nil
        if workers.anyHasCredit { isDue = true }
    }
}
