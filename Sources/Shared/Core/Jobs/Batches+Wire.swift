import TributaryProtocol

// The conversions between a push's and a batch's answers and their messages on the wire (docs/protocol.md).

extension PushedBatch {
    /// The result a `PushReply` carries.
    public init(_ wire: Tributary_V1_PushReply) {
        self.init(
            batch: wire.batch, ids: wire.jobIds.map { Int64(clamping: $0) },
            duplicates: wire.duplicates.map { Int($0) })
    }

    /// As `PushReply` carries it.
    public var wire: Tributary_V1_PushReply {
        Tributary_V1_PushReply.with {
            $0.batch = batch
            $0.jobIds = ids.map { UInt64(max(0, $0)) }
            $0.duplicates = duplicates.map { UInt32(clamping: $0) }
        }
    }
}

extension BatchStatus {
    /// The status a `BatchStatusReply` carries.
    public init(_ wire: Tributary_V1_BatchStatusReply) {
        self.init(batch: wire.batch)
        totalJobs = wire.totalJobs
        doneJobs = wire.doneJobs
        deadJobs = wire.deadJobs
        cancelledJobs = wire.cancelledJobs
        totalRows = wire.totalRows
        doneRows = wire.doneRows
        dead = wire.dead.map {
            DeadJob(id: Int64(clamping: $0.jobID), message: $0.message, attempts: Int($0.attempts))
        }
    }

    /// As `BatchStatusReply` carries it.
    public var wire: Tributary_V1_BatchStatusReply {
        Tributary_V1_BatchStatusReply.with {
            $0.batch = batch
            $0.totalJobs = totalJobs
            $0.doneJobs = doneJobs
            $0.deadJobs = deadJobs
            $0.cancelledJobs = cancelledJobs
            $0.totalRows = totalRows
            $0.doneRows = doneRows
            $0.dead = dead.map { job in
                Tributary_V1_DeadJob.with {
                    $0.jobID = UInt64(max(0, job.id))
                    $0.message = job.message
                    $0.attempts = UInt32(clamping: job.attempts)
                }
            }
        }
    }
}
