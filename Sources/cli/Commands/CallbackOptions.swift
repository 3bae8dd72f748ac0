import ArgumentParser
import TributaryCore

/// `--on-complete KIND [--on-complete-argument k=v …]`: the batch's callback job, pushed once when every job of
/// the batch is done, dead or cancelled, with the batch's counts added to its arguments (docs/jobs.md).
struct CallbackOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp("A job of this kind runs once when the batch finishes, with its counts.", valueName: "kind"))
    var onComplete: String?

    @Option(
        help: ArgumentHelp(
            "An argument of the --on-complete job (repeatable).", valueName: "key=value"))
    var onCompleteArgument: [String] = []

    func validate() throws {
        if let onComplete, onComplete.isEmpty { throw ValidationError("--on-complete must name a job kind") }
        if onComplete == nil && !onCompleteArgument.isEmpty {
            throw ValidationError("--on-complete-argument needs --on-complete")
        }
        for argument in onCompleteArgument where !argument.contains("=") || argument.hasPrefix("=") {
            throw ValidationError("--on-complete-argument '\(argument)' is not key=value")
        }
    }

    /// The callback's spec, when one was asked for, in the push's queue.
    func spec(queue: String) -> JobSpec? {
        guard let onComplete else { return nil }
        var spec = JobSpec(kind: onComplete, queue: queue)
        for argument in onCompleteArgument {
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            spec.arguments[String(parts[0])] = String(parts[1])
        }
        return spec
    }
}
