#ifndef TRIBUTARY_POWER_LOSS_H
#define TRIBUTARY_POWER_LOSS_H

// A SQLite VFS for tests that simulates a power loss (test support: no product links it).
//
// It wraps the default VFS and, for the database and WAL files under a watched directory, keeps every write and
// truncation made since the file's last sync, with the bytes it replaced. Armed, it "loses power" at a chosen
// operation: that write or sync and every later I/O on watched files fail (SQLITE_IOERR), as if the process had
// stopped there. `power_loss_apply` then rewrites the files as a disk might have kept them: each unsynced write
// kept or dropped at random (whole, or torn at 512-byte sectors), the shared-memory index removed. What was synced
// stays. Unwatched files pass straight through, so other connections in the process are not affected.

/// Registers the VFS (once) as the process's default. Returns SQLITE_OK or SQLite's error.
int power_loss_register(void);

/// Watches the database and WAL files whose paths start with `prefix` (one directory at a time; NULL stops
/// watching), forgetting what was recorded and disarming.
void power_loss_watch(const char *prefix);

/// Loses power at the watched operation (write, truncate or sync) numbered `operation` from now (0: the next one);
/// a negative value disarms.
void power_loss_arm(long long operation);

/// Holds (`held` non-zero) or lets go the syncs of watched files: while held, a sync waits before it reaches the
/// disk, as on a disk that stalls; other I/O goes on. Letting go wakes every waiting sync.
void power_loss_hold_syncs(int held);

/// How many syncs of watched files wait now (see `power_loss_hold_syncs`).
long long power_loss_syncs_waiting(void);

/// Watched writes, truncations and syncs since the last `power_loss_watch`.
long long power_loss_operations(void);

/// Whether the power was lost.
int power_loss_happened(void);

/// Rewrites the watched files as a power loss leaves them, choosing with `seed`: each write or truncation not
/// synced is dropped with probability 1/2, and a kept write is torn (only its first sectors written) with
/// probability `torn_percent`/100. Call once the connections are closed. Returns how many unsynced operations were
/// dropped or torn, or -1 on an I/O error. Watching goes on, with nothing recorded and the power back.
long long power_loss_apply(unsigned int seed, int torn_percent);

#endif
