#ifndef TRIBUTARY_SQLITE_SETTINGS_H
#define TRIBUTARY_SQLITE_SETTINGS_H

#include <stddef.h>
#include <sqlite3.h>

/// Turns off SQLite's memory statistics for the whole process (`SQLITE_CONFIG_MEMSTATUS`): each allocation and
/// free then skips a global mutex. Call before SQLite is first used; afterwards it changes nothing.
/// Returns SQLite's result code (SQLITE_MISUSE once SQLite is initialized).
int tributary_sqlite_disable_memory_statistics(void);

/// When a writer connection starts its write-ahead log over from the beginning (see `tributary_wal_restart_install`).
typedef struct tributary_wal_restart tributary_wal_restart;

/// A new state with these thresholds (see the fields in SQLiteSettings.c); free it with
/// `tributary_wal_restart_destroy` once its connection is closed.
tributary_wal_restart *tributary_wal_restart_create(int restart_frames, int small_commit_frames, int backstop_frames);

/// Frees a state made by `tributary_wal_restart_create`.
void tributary_wal_restart_destroy(tributary_wal_restart *state);

/// Installs a write-ahead-log hook on `db` (a store's writer connection) that marks a checkpoint due once a commit
/// leaves `restart_frames` in the log, that commit was small and the background checkpointer has copied every large
/// commit's frames: what is left to copy is then a few pages, and once it is copied the next write starts the log
/// over, so small commits overwrite the file's blocks rather than append to it (an `fdatasync` of an appended file
/// also commits its metadata). Any commit checkpoints from `backstop_frames`, inside it, as `wal_autocheckpoint` does.
/// `state` must outlive the connection.
void tributary_wal_restart_install(sqlite3 *db, tributary_wal_restart *state);

/// Whether a checkpoint is due (read on the writer's thread).
int tributary_wal_restart_is_due(tributary_wal_restart *state);

/// Runs the due checkpoint, passive, on `db` (the writer's connection, outside a transaction); returns 1 when it ran.
int tributary_wal_restart_checkpoint_if_due(tributary_wal_restart *state, sqlite3 *db);

/// The log's generation, for the background checkpointer to read before a checkpoint.
int tributary_wal_restart_generation(tributary_wal_restart *state);

/// The background checkpointer's report: in `generation` (read before its checkpoint), `checkpointed` frames copied.
void tributary_wal_restart_report(tributary_wal_restart *state, int generation, int checkpointed);

/// How many checkpoints ran to start the log over.
long long tributary_wal_restart_checkpoints(tributary_wal_restart *state);

/// A change session on a connection (SQLite's session extension): records every change to the store's tables from
/// now on, except the derived inverse index and the replication state (tables `tributary_inverse*`,
/// `tributary_replication*`). Free it with `tributary_session_delete`.
typedef struct tributary_session tributary_session;

/// A new session on `db`'s main database, in `*out`. Returns SQLite's result code.
int tributary_session_create(sqlite3 *db, tributary_session **out);

/// The changes recorded, as a changeset in `*bytes` (free with `sqlite3_free`) of `*size` bytes.
int tributary_session_changeset(tributary_session *session, int *size, void **bytes);

/// Whether no change was recorded (1) or some may have been (0).
int tributary_session_is_empty(tributary_session *session);

/// Ends and frees a session (NULL is allowed).
void tributary_session_delete(tributary_session *session);

/// Applies a changeset to `db` (inside the caller's transaction: a savepoint of its own, undone when it fails). Any
/// conflict aborts it (SQLITE_ABORT) and is described in `conflict` (`capacity` bytes): the target holds other rows
/// than the changeset's source held before it.
int tributary_changeset_apply(sqlite3 *db, int size, const void *bytes, char *conflict, size_t capacity);

#endif
