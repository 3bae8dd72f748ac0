import Foundation
import GRDB

extension GroupCommitter {
    /// Runs a group commit's claims, sharing the due jobs among the workers claiming when there are fewer than they
    /// ask for: each claim first takes at most its share (the jobs it could take, divided among the claims, rounded
    /// up), then, in the same order, what is left up to its own limit. With enough jobs for every claim each takes
    /// its whole limit at once, as a single claim does. So 12 jobs claimed by 2 idle workers of 32 slots go 6 and 6,
    /// not 12 to the first.
    ///
    /// Each claim runs in a savepoint: one that fails after its UPDATE (reading payloads, say) leases nothing, and
    /// leaves the others standing. Paused queues are left out of every claim, read once per group commit.
    func claimSpread(_ claims: [ClaimRequest], in db: Database) -> [Result<[ClaimedJob], any Error>] {
        guard !claims.isEmpty else { return [] }
        let paused: Set<String>
        do {
            paused = try JobStore.pausedQueues(in: db)
        } catch {
            return claims.map { _ in .failure(error) }
        }
        let claims = paused.isEmpty ? claims : claims.map { $0.leavingOut(paused) }
        func claim(_ request: ClaimRequest, limit: Int) -> Result<[ClaimedJob], any Error> {
            Result {
                try writer.statements.savepoint(db) {
                    try jobs.claimJobs(
                        for: request.worker, kinds: request.kinds, queues: request.queues, limit: limit,
                        runLimits: request.runLimits, in: db)
                }
            }
        }
        guard claims.count > 1 else { return claims.map { claim($0, limit: $0.limit) } }
        let wanted = claims.reduce(0) { $0 + $1.limit }
        let shares = claims.map { request -> Int in
            // A count that fails leaves the claim its whole limit: the claim itself reports the failure.
            guard
                let ready = try? jobs.readyJobs(kinds: request.kinds, queues: request.queues, upTo: wanted, in: db),
                ready < wanted
            else { return request.limit }
            return min(request.limit, max(1, (ready + claims.count - 1) / claims.count))
        }
        var results = zip(claims, shares).map { claim($0, limit: $1) }
        for index in claims.indices where shares[index] < claims[index].limit {
            guard case .success(let first) = results[index], first.count == shares[index] else { continue }
            switch claim(claims[index], limit: claims[index].limit - first.count) {
            case .success(let more): results[index] = .success(first + more)
            case .failure:
                // The first part stands: a claim that failed leased nothing.
                continue
            }
        }
        return results
    }
}
