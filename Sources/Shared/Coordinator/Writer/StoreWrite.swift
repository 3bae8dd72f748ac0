import GRDB

/// A write of the store other than a group commit or a push: failing, requeueing or releasing attempts, retrying,
/// cancelling and deleting jobs, schedules and their ticks, durable subscribers' positions, pruning. Each is a case
/// of the writer's queue (``StoreWriter/write(_:)``), run in the order queued with group commits and pushes, in a
/// transaction of its own.
///
/// The cases are static factories typed by their result (`StoreWrite<JobInfo?>.deleteJob(id:)`), so a caller
/// writes `try await writer.write(.cancelJob(id: 7))` and gets that case's own result back.
struct StoreWrite<Output: Sendable>: Sendable {
    /// What it does, for logs.
    let name: String
    /// Whether its commit is synced to the disk at every ``Durability`` level: a command whose client is told it is
    /// done (a job's retry, cancel or delete, schedules, subscribers) must not be taken back by a power loss.
    var synced = false
    /// The write, inside the transaction the writer opened for it on its connection.
    let body: @Sendable (RootStore, Database) throws -> Output
}

/// Why a write was not queued: the store's writer has too many queued (``StoreWriter/maximumRouterQueuedWrites``).
struct WriterBusyError: Error, CustomStringConvertible {
    let write: String
    let queued: Int
    var description: String {
        "the store's writer has \(queued) writes queued: '\(write)' was refused; try again once the store catches up"
    }
}

/// Why a write was not run.
struct WriterStoppedError: Error, CustomStringConvertible {
    let write: String
    var description: String { "the store's writer has stopped: '\(write)' was not written" }
}

/// Why a write's caller is not answered: the store committed it, but a stage held it until the pipeline was
/// abandoned (a primary that lost its leadership), so it is not acknowledged and may be undone when the store rejoins
/// its cluster.
struct WriteAbandonedError: Error, CustomStringConvertible {
    let write: String
    var description: String {
        "'\(write)' is not acknowledged: this coordinator stopped being the cluster's primary before a standby held it"
    }
}
