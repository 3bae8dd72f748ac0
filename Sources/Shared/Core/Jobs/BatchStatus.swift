/// The jobs pushed together as one batch: how many finished and how, and how many rows they committed.
public struct BatchStatus: Sendable, Equatable {
    /// A dead job of the batch and why it died.
    public struct DeadJob: Sendable, Equatable {
        /// The job's id.
        public var id: Int64
        /// Its last error.
        public var message: String
        /// The attempts it made that counted against its maximum (``JobInfo/attemptsCounted``).
        public var attempts: Int

        /// Dead job `id` after `attempts` attempts, the last failing with `message`.
        public init(id: Int64, message: String, attempts: Int) {
            self.id = id
            self.message = message
            self.attempts = attempts
        }
    }

    /// The batch's name.
    public var batch: String
    /// The jobs pushed to it.
    public var totalJobs: UInt64 = 0
    /// Its jobs that are done.
    public var doneJobs: UInt64 = 0
    /// Its jobs that are dead.
    public var deadJobs: UInt64 = 0
    /// Its jobs that were cancelled.
    public var cancelledJobs: UInt64 = 0
    /// The progress units of its jobs together (``JobSpec/total``: rows, for `import` jobs).
    public var totalRows: UInt64 = 0
    /// The progress units its jobs committed so far.
    public var doneRows: UInt64 = 0
    /// The first 50 dead jobs.
    public var dead: [DeadJob] = []

    /// An empty status of `batch`, to fill in.
    public init(batch: String) {
        self.batch = batch
    }

    /// Whether every job of the batch is done, dead or cancelled.
    public var isFinished: Bool { doneJobs + deadJobs + cancelledJobs >= totalJobs }
}
