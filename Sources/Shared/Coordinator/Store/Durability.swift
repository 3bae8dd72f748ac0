/// What a commit survives before it is acknowledged: SQLite's `synchronous` setting of the writer connection, named
/// as SQLite names it.
///
/// Either level survives a crash of the coordinator process (SIGKILL included): a commit is in the WAL file, in the
/// operating system's cache, before anything in it is answered. They differ on a power loss or a kernel crash,
/// which can take back what the OS had not written to the disk yet.
public enum Durability: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Every commit's WAL frames are synced to the disk (`fdatasync`) before anything in it is acknowledged: an
    /// acknowledged save, completion or push survives a power loss. One sync per group commit, so commits of many
    /// saves share it.
    case full
    /// Commits are synced only when the WAL is checkpointed: a power loss can take back the last commits
    /// (acknowledged saves and completions: their jobs run again; the store stays consistent). Pushes and the job,
    /// schedule and subscriber commands a client is told are done are synced at this level too.
    case normal

    /// The `PRAGMA synchronous` value.
    var pragma: String {
        switch self {
        case .full: "FULL"
        case .normal: "NORMAL"
        }
    }

    public var description: String { rawValue }
}
