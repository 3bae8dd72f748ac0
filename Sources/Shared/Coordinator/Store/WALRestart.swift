import CSQLiteSettings
import GRDB

/// Starts the writer's write-ahead log over from the beginning under small writes.
///
/// The background ``WALCheckpointer`` copies the log into the database file, but SQLite starts the log over only
/// once every frame was copied, which never happens while the writer appends commit after commit: the log grows to
/// the writer's backstop (1 GiB), and every small commit appends to the file. An `fdatasync` of an appended file
/// commits the file system's metadata too (its size, its newly allocated blocks): at `--durability full` that made
/// a lone save's sync about half again as long as one that overwrites blocks the file already has. So, right after
/// a small commit (up to ``smallCommitFrames`` frames) that leaves ``restartFrames`` or more in the log, the writer
/// checkpoints it passively, once that commit is answered (``checkpointIfDue(_:)``): a checkpoint copies each page once, its latest version, so under small writes that is a
/// few pages, and the next write starts the log over. A large commit (an import's) never triggers it, so bulk
/// writes keep the checkpointer's rhythm, and a small commit after a large one waits until the background checkpointer
/// has copied the large one's frames (it reports what it copied, ``report(generation:checkpointed:)``), so the writer
/// never copies an import's pages; any commit checkpoints at the backstop, as `wal_autocheckpoint` would.
final class WALRestart: Sendable {
    /// 16 MiB of 4 KiB pages: the log's size from which a small commit starts it over.
    static let restartFrames: Int32 = 4096
    /// The most frames a commit may add and still count as small (a few saves' worth).
    static let smallCommitFrames: Int32 = 256

    // Owned here; the C side keeps its fields consistent between the writer's thread and the checkpointer's.
    nonisolated(unsafe) private let state: OpaquePointer

    init() {
        guard
            let state = tributary_wal_restart_create(
                Self.restartFrames, Self.smallCommitFrames, Int32(WALCheckpointer.writerThresholdPages))
        else { fatalError("out of memory") }
        self.state = state
    }

    deinit { tributary_wal_restart_destroy(state) }

    /// Installs the hook on the writer's connection (in place of `wal_autocheckpoint`'s); this object must outlive
    /// the connection.
    func install(on db: Database) {
        guard let connection = db.sqliteConnection else { return }
        tributary_wal_restart_install(connection, state)
    }

    /// Whether a checkpoint to start the log over is due (on the writer's connection, after a commit).
    var isDue: Bool { tributary_wal_restart_is_due(state) != 0 }

    /// Runs the due checkpoint on the writer's connection, outside any transaction: after the commit that made it
    /// due was answered, so that no acknowledgement waits for it.
    func checkpointIfDue(_ db: Database) {
        guard let connection = db.sqliteConnection else { return }
        tributary_wal_restart_checkpoint_if_due(state, connection)
    }

    /// The log's generation (how many times it started over), read by the background checkpointer before each
    /// checkpoint.
    var generation: Int32 { tributary_wal_restart_generation(state) }

    /// The background checkpointer's report: it copied `checkpointed` frames of the log of `generation`.
    func report(generation: Int32, checkpointed: Int32) {
        tributary_wal_restart_report(state, generation, checkpointed)
    }

    /// How many checkpoints the writer ran to start the log over.
    var checkpoints: Int64 { Int64(tributary_wal_restart_checkpoints(state)) }
}
