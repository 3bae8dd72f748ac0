import TributaryCore
import TributaryProtocol

@testable import TributaryCoordinator

/// Pushes specs built as on the wire (`ImportJob.spec`, `.with { … }`), converted as the router converts them.
extension RootStore {
    func pushJobs(_ specs: [Tributary_V1_JobSpec], batch: String) async throws -> PushedJobs {
        try await pushJobs(specs.map(JobSpec.init), batch: batch)
    }
}
