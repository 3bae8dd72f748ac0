import Foundation
import GRDBSQLite
import Synchronization

/// Copies the store's write-ahead log into the database file from a connection and thread of its own, so the
/// writer does not stop to do it.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that commit copies pages and
/// waits for `fdatasync` while saves queue behind it. Here passive checkpoints run on another connection, alongside
/// the writer, every ``interval``, and one after another while more than ``catchUpFrames`` wait. A checkpoint copies
/// the latest version of each page in the log: bulk writes rewrite the same index pages in commit after commit, so
/// one checkpoint a second copies each of them once where one after every commit would copy it each time. The
/// writer's own automatic checkpoint stays as a backstop at ``writerThresholdPages``, which bounds the WAL when this
/// one falls behind.
///
/// Sized for bulk writes: a large group commit adds thousands of pages to the WAL (its index pages), so a threshold
/// of a few thousand pages would have the writer checkpointing every other commit. SQLite starts the WAL over only
/// once a checkpoint has copied every frame, which this thread cannot do while the writer appends commit after
/// commit: under bulk writes the WAL grows to the writer's threshold, and the writer copies the rest and waits for
/// `fdatasync`. The threshold sets how often that happens and how often each index page is copied into the file: in
/// a store of millions of rows a commit rewrites some 100 MB of index pages, so a threshold of a few hundred MiB
/// would put a checkpoint in the writer every two or three commits, where 1 GiB makes a quarter as many (see
/// docs/benchmarks.md, 'Import'). The WAL file keeps its size (up to ``journalSizeLimit``) when SQLite starts it
/// over, and is removed when the coordinator stops.
final class WALCheckpointer: Sendable {
    /// The writer's automatic checkpoint threshold while a checkpointer runs (1 GiB of 4 KiB pages): the bound of
    /// the WAL under bulk writes, a commit past it aside.
    static let writerThresholdPages = 262_144
    /// The size the WAL file is truncated to when SQLite starts it over (`journal_size_limit`): above the most
    /// the WAL holds (the writer's threshold and a commit past it), so that under bulk writes the file keeps its
    /// blocks and each cycle overwrites them; truncated further, every cycle would have the file system allocate and
    /// zero the blocks again. SQLite's own default never truncates.
    static let journalSizeLimit = writerThresholdPages * 4096 + 256 * 1024 * 1024
    /// How long the checkpointer waits between checkpoints while the log holds few frames.
    static let interval = DispatchTimeInterval.seconds(1)
    /// Frames left in the log (256 MiB of 4 KiB pages, a quarter of the writer's threshold) above which the next
    /// checkpoint follows at once: a page copied now and rewritten by the next commit is copied again, so copying
    /// less often copies fewer bytes, while a quarter keeps the writer's own checkpoint far off.
    static let catchUpFrames: Int32 = 65_536

    private struct State {
        var connection: OpaquePointer?
        var stopped = false
    }

    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    /// Told what each checkpoint copied, so the writer knows when the log holds only small commits' frames.
    private let restart: WALRestart?

    /// Opens a connection to `path` and starts checkpointing; nil when the connection cannot be opened (the
    /// writer's automatic checkpoint then does the work, as without a checkpointer).
    init?(path: String, restart: WALRestart? = nil) {
        var connection: OpaquePointer?
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            sqlite3_close(connection)
            return nil
        }
        sqlite3_busy_timeout(connection, 5000)
        sqlite3_exec(connection, "PRAGMA synchronous = NORMAL", nil, nil, nil)
        self.restart = restart
        state = Mutex(State(connection: connection))
        let thread = Thread { [self] in run() }
        thread.name = "tributary-checkpoint"
        thread.start()
    }

    private func run() {
        var previous: (logFrames: Int32, checkpointed: Int32) = (0, 0)
        while true {
            let outcome = state.withLock { state -> (logFrames: Int32, checkpointed: Int32)? in
                guard !state.stopped, let connection = state.connection else { return nil }
                var logFrames: Int32 = 0
                var checkpointed: Int32 = 0
                let generation = restart?.generation
                if sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &checkpointed)
                    == SQLITE_OK, checkpointed >= 0, let generation
                {
                    restart?.report(generation: generation, checkpointed: checkpointed)
                }
                return (logFrames, checkpointed)
            }
            guard let outcome else { break }
            defer { previous = outcome }
            // Frames left and this checkpoint copied some (the writer appended more meanwhile): go on at once.
            // With nothing left, or no progress (a reader holds the frames back), wait.
            if Self.goesOnAtOnce(outcome, after: previous) { continue }
            _ = wake.wait(timeout: .now() + Self.interval)
        }
        stopped.signal()
    }

    /// Whether a checkpoint that left `outcome` (frames in the log, frames copied) should be followed by another at
    /// once: more than `catchUp` frames are left, and it copied some since `previous` (a log started over counts as
    /// progress).
    static func goesOnAtOnce(
        _ outcome: (logFrames: Int32, checkpointed: Int32), after previous: (logFrames: Int32, checkpointed: Int32),
        catchUp: Int32 = catchUpFrames
    ) -> Bool {
        guard outcome.checkpointed >= 0, outcome.logFrames - outcome.checkpointed > catchUp else { return false }
        return outcome.checkpointed > previous.checkpointed || outcome.logFrames < previous.logFrames
    }

    /// Opens and closes a read-write connection to `path`: the last connection to close checkpoints the WAL
    /// into the database file and removes it.
    static func closeLast(path: String) {
        var connection: OpaquePointer?
        if sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK {
            sqlite3_busy_timeout(connection, 5000)
            // A read opens the WAL, which the close then checkpoints and removes.
            sqlite3_exec(connection, "SELECT count(*) FROM sqlite_master", nil, nil, nil)
        }
        sqlite3_close_v2(connection)
    }

    /// Stops checkpointing and closes the connection; returns once it is closed.
    func stop() {
        let connection = state.withLock { state -> OpaquePointer? in
            guard !state.stopped else { return nil }
            state.stopped = true
            defer { state.connection = nil }
            return state.connection
        }
        guard let connection else { return }
        wake.signal()
        stopped.wait()
        sqlite3_close_v2(connection)
    }
}
