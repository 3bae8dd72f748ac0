/// The jobs pushed together as one batch: how many finished and how, and how many rows they committed.
public struct BatchStatus: Sendable, Equatable {
    /// A dead job of the batch and why it died.
    public struct DeadJob: Sendable, Equatable {
        public var id: Int64
        public var message: String
        public var attempts: Int

        public init(id: Int64, message: String, attempts: Int) {
            self.id = id
            self.message = message
            self.attempts = attempts
        }
    }

    public var batch: String
    public var totalJobs: UInt64 = 0
    public var doneJobs: UInt64 = 0
    public var deadJobs: UInt64 = 0
    public var cancelledJobs: UInt64 = 0
    public var totalRows: UInt64 = 0
    public var doneRows: UInt64 = 0
    /// The first 50 dead jobs.
    public var dead: [DeadJob] = []

    public init(batch: String) {
        self.batch = batch
    }

    /// Whether every job of the batch is done, dead or cancelled.
    public var isFinished: Bool { doneJobs + deadJobs + cancelledJobs >= totalJobs }
}
