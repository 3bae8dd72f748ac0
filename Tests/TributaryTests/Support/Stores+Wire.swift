import TributaryCore
import TributaryProtocol

@testable import TributaryCoordinator

/// Pushes and saves built as on the wire (`ImportJob.spec`, `.with { … }`), converted as the router converts them.
extension JobStore {
    func pushJobs(_ specs: [Tributary_V1_JobSpec], batch: String) async throws -> PushedJobs {
        try await pushJobs(specs.map(JobSpec.init), batch: batch)
    }
}

extension GroupCommitter {
    func applySave(_ save: Tributary_V1_SaveChanges, from worker: String) async throws -> SaveOutcome {
        try await applySave(SaveRequest(save), from: worker)
    }

    func applySaves(_ saves: [(Tributary_V1_SaveChanges, String)]) async throws -> [Result<AppliedSave, any Error>] {
        try await applySaves(saves.map { (SaveRequest($0.0), $0.1) })
    }
}
