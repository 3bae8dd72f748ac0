import ArgumentParser
import TributaryCore
import TributaryProtocol

/// `--after JOB … --after-batch BATCH … --on-parent-failure fail|cancel|run`: the parents a pushed job waits for
/// (docs/jobs.md, "Dependencies").
struct ParentOptions: ParsableArguments {
    @Option(
        name: .customLong("after"),
        help: ArgumentHelp("A job this one waits for: it runs once each is done (repeatable).", valueName: "job-id"))
    var afterJobs: [UInt64] = []

    @Option(
        name: .customLong("after-batch"),
        help: ArgumentHelp(
            "A batch this one waits for: every job it has must be done (repeatable).", valueName: "batch"))
    var afterBatches: [String] = []

    @Option(
        help: ArgumentHelp(
            "When a parent dies or is cancelled: fail (this job dies), cancel, or run (once every parent finished).",
            valueName: "policy"))
    var onParentFailure: String?

    func validate() throws {
        if let onParentFailure {
            guard ParentFailure(rawValue: onParentFailure) != nil else {
                throw ValidationError(
                    "--on-parent-failure must be one of \(ParentFailure.names.joined(separator: ", "))")
            }
            if afterJobs.isEmpty && afterBatches.isEmpty {
                throw ValidationError("--on-parent-failure needs --after or --after-batch")
            }
        }
        if afterJobs.contains(0) { throw ValidationError("--after must name a job id (from 1)") }
        if afterBatches.contains("") { throw ValidationError("--after-batch must name a batch") }
    }

    func apply(to spec: inout Tributary_V1_JobSpec) {
        spec.afterJobs = afterJobs
        spec.afterBatches = afterBatches
        spec.onParentFailure = onParentFailure ?? ""
    }
}
