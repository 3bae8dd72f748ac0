import ArgumentParser
import TributaryCore

/// `--after JOB … --after-batch BATCH … --on-parent-failure fail|cancel|run`: the parents a pushed job waits for
/// (docs/jobs.md, "Dependencies").
struct ParentOptions: ParsableArguments {
    /// Read as text, whatever it looks like (`--after -3` included), so that a value that is not a job id is
    /// named as such rather than taken for a missing value.
    @Option(
        name: .customLong("after"), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("A job this one waits for: it runs once each is done (repeatable).", valueName: "job-id"))
    var afterValues: [String] = []

    /// The `--after` job ids (valid once ``validate()`` passed).
    var afterJobs: [Int64] { afterValues.compactMap { Int64($0) } }

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
        for value in afterValues where (Int64(value) ?? 0) <= 0 {
            throw ValidationError("--after '\(value)' is not a job id (a whole number from 1)")
        }
        if afterBatches.contains("") { throw ValidationError("--after-batch must name a batch") }
    }

    /// Sets the parents and the policy on `spec` (the policy read by ``validate()``; `fail` when not given).
    func apply(to spec: inout JobSpec) {
        spec.afterJobs = afterJobs
        spec.afterBatches = afterBatches
        spec.onParentFailure = onParentFailure.flatMap(ParentFailure.init(rawValue:)) ?? .fail
    }
}
