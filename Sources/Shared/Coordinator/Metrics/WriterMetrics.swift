import Metrics

/// What the writer and the router record of each commit, through swift-metrics (exported by the backend the
/// process bootstrapped; without one each call does nothing). Handles are made on first use, so a process that
/// bootstraps a backend at start gets them.
enum WriterMetrics {
    static let groupCommitRows = Recorder(label: MetricNames.groupCommitRows)
    static let groupCommitDuration = Metrics.Timer(label: MetricNames.groupCommitSeconds)
    /// The time on the store of a write other than a group commit or a push, by its name.
    static func writeDuration(_ write: String) -> Metrics.Timer {
        Metrics.Timer(label: MetricNames.writeSeconds, dimensions: [("write", write)])
    }
    static let saveToCommit = Metrics.Timer(label: MetricNames.saveCommitSeconds)
    static let commitToPublish = Metrics.Timer(label: MetricNames.commitPublishSeconds)
    static let rowsCommitted = Counter(label: MetricNames.rowsCommitted)
    static let commits = Counter(label: MetricNames.commits)
    static let peersRefused = Counter(label: MetricNames.peersRefused, dimensions: [("reason", "curve")])

    /// Counts a refusal sent to a peer (or a local request), by its error code.
    static func refused(_ code: String) {
        Counter(label: MetricNames.messagesRefused, dimensions: [("code", code)]).increment()
    }
}
