import TributaryCore

/// A job that ended (done, dead or cancelled) in a write, as the store tells the router: the one record the
/// feed's `$jobs` topic and the job counters both take, whichever way the job ended (its completing save, a
/// failure, a lost worker, a timeout, a cancel, or a parent's failure settling it).
public struct JobEnding: Sendable, Equatable {
    /// Its kind; empty for a completing save's ending, whose kind the router knows from the attempt it sent out.
    public let kind: String
    /// Its state (`.done`, `.dead` or `.cancelled`) and progress as the write left them, as `$jobs` carries them.
    public let progress: JobProgress
    /// Whether an attempt of it was running when it ended (a settled child, a queued job cancelled: no).
    public let ranAttempt: Bool

    /// An ending of the job whose `progress` it is.
    public init(kind: String, progress: JobProgress, ranAttempt: Bool) {
        self.kind = kind
        self.progress = progress
        self.ranAttempt = ranAttempt
    }

    /// The job's id.
    public var id: Int64 { progress.id }
    /// How it ended: `.done`, `.dead` or `.cancelled`.
    public var state: JobState { progress.state }
}
