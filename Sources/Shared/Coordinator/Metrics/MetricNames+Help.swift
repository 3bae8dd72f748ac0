extension MetricNames {
    /// Each metric's HELP text by name: one line saying what it counts, exported as the family's `# HELP` line by
    /// whatever registers the family (the swift-metrics factory, the gauges read at each scrape). The only place
    /// these texts are written, so every registration of a name gives the same text.
    public static let help: [String: String] = [
        jobsPushed: "Jobs pushed (enqueued), by kind.",
        jobsStarted: "Attempts started (jobs sent to a worker), by kind.",
        jobsDone: "Jobs done (their completing save committed), by kind.",
        jobsFailed: "Attempts failed (reported by the worker, lost with it, or timed out), by kind.",
        jobsDead: "Jobs that died (a permanent failure, or the failure of their last attempt), by kind.",
        jobsCancelled: "Jobs cancelled, by kind.",
        jobs: "Jobs in the store, by state.",
        jobRunSeconds: "An attempt's run time, from its assignment to the commit of its completing save, by kind.",
        jobQueueWaitSeconds: "A job's wait in the queue, from when it was last due to its assignment, by kind.",
        rowsCommitted: "Objects inserted, updated or deleted by committed saves.",
        commits: "Saves whose commit took a sequence number.",
        groupCommitRows: "Objects per group commit.",
        groupCommitSeconds: "A group commit's time on the writer.",
        writeSeconds:
            "A write other than a group commit or a push (pruning, a failure, a schedule...): its time on the writer, by write.",
        saveCommitSeconds: "From the router taking a save to the end of the group commit that wrote it.",
        commitPublishSeconds: "From the end of a group commit to the save's didSave being handed to the feed.",
        queueJobs: "Jobs queued in a named queue (retries and delayed jobs included), by queue.",
        queueLatencySeconds: "How long the job at the head of a queue has waited (0 when none is due), by queue.",
        queuePaused: "1 while a queue is paused (tributary queues pause), else 0, by queue.",
        workersConnected: "Workers registered now.",
        subscriberLagCommits: "Commits a durable subscriber is behind the last one, by subscriber.",
        storeBytes: "Size of the store's main file.",
        walBytes: "Size of the store's write-ahead log.",
        storeWritable:
            "1 while the store can be written; 0 after a write was refused for a full disk or a read-only filesystem.",
        clusterEpoch:
            "The leader epoch a cluster's primary writes under (on a standby: the epoch of the primary it follows).",
        clusterPrimary: "1 on a cluster's primary, 0 on a standby.",
        clusterStandbyLastRecord: "The position of the last replication record a standby's store holds.",
        clusterStandbySecondsSinceRecord: "Seconds since a standby last applied replication records.",
        clusterWritesBlocked: "1 while a cluster's primary holds every write for want of a standby in sync, else 0.",
        clusterHeldWrites: "Writes committed by a cluster's primary and not acknowledged yet (waiting for standbys).",
        clusterStandbysInSync: "Standbys in sync with a cluster's primary: each write waits for each of them.",
        clusterStandbyLagRecords: "Replication records a standby is behind its primary, by standby.",
        historyOldestSeq: "The oldest sequence number the history keeps.",
        historyNewestSeq: "The last sequence number committed.",
        peersRefused: "Connections refused at the CURVE handshake, by reason.",
        messagesRefused: "Errors sent to peers and API callers, by protocol error code.",
        processResidentMemory: "Resident memory size of the coordinator's process, in bytes.",
    ]
}
