#include "SQLiteSettings.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>

// What the coordinator asks of SQLite in C: sqlite3_config is variadic, which Swift cannot call, and the WAL hook's
// state is shared between two threads with C11 atomics.

// sqlite3_config is variadic, which Swift cannot call.
int tributary_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

// The hook's fields are written on the writer's thread; `generation` and `reported` are shared with the background
// checkpointer's thread.
struct tributary_wal_restart {
    // Frames in the log from which a small commit checkpoints it, so that the next write starts it over.
    int restart_frames;
    // The most frames a commit may add to count as small.
    int small_commit_frames;
    // Frames in the log from which any commit checkpoints it (SQLite's `wal_autocheckpoint`, which this replaces).
    int backstop_frames;
    // Frames in the log after the previous commit.
    int last_frames;
    // Frames from which the next small commit tries (a try the readers kept from starting the log over is not
    // repeated at every commit).
    int next_try;
    // The log's size after the last large commit of this generation (0: none): a small commit checkpoints only
    // once the background checkpointer has copied up to it, so the writer never copies a large commit's pages.
    int large_until;
    // How many times the log started over, as the hook saw it.
    _Atomic int generation;
    // The background checkpointer's last report: the generation it read before its checkpoint (high 32 bits) and
    // the frames copied (low 32 bits).
    _Atomic long long reported;
    // A checkpoint to start the log over is due: run after the commit is answered
    // (`tributary_wal_restart_checkpoint_if_due`), not inside it.
    int due;
    // Checkpoints run to start the log over.
    _Atomic long long checkpoints;
};

tributary_wal_restart *tributary_wal_restart_create(int restart_frames, int small_commit_frames, int backstop_frames) {
    tributary_wal_restart *state = calloc(1, sizeof(tributary_wal_restart));
    if (!state) return NULL;
    state->restart_frames = restart_frames;
    state->small_commit_frames = small_commit_frames;
    state->backstop_frames = backstop_frames;
    state->next_try = restart_frames;
    return state;
}

void tributary_wal_restart_destroy(tributary_wal_restart *state) {
    free(state);
}

static int tributary_wal_restart_hook(void *context, sqlite3 *db, const char *name, int frames) {
    tributary_wal_restart *state = context;
    int added = frames - state->last_frames;
    state->last_frames = frames;
    if (added < 0) {
        // The log started over: a new generation, with no large commit in it yet.
        atomic_fetch_add(&state->generation, 1);
        state->large_until = 0;
        added = frames;
    }
    if (frames < state->restart_frames) state->next_try = state->restart_frames;
    int small = added <= state->small_commit_frames;
    if (!small) state->large_until = frames;
    if (frames >= state->backstop_frames) {
        // The backstop, as `wal_autocheckpoint` runs it: inside the commit that crossed it.
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, 0, 0);
        return SQLITE_OK;
    }
    if (small && frames >= state->next_try) {
        long long reported = atomic_load(&state->reported);
        int copied_large = state->large_until == 0
            || ((int)(reported >> 32) == atomic_load(&state->generation)
                && (int)(reported & 0xffffffff) >= state->large_until);
        if (copied_large) {
            state->due = 1;
            state->next_try = frames + state->restart_frames / 4;
        }
    }
    return SQLITE_OK;
}

int tributary_wal_restart_is_due(tributary_wal_restart *state) {
    return state->due;
}

int tributary_wal_restart_checkpoint_if_due(tributary_wal_restart *state, sqlite3 *db) {
    if (!state->due) return 0;
    state->due = 0;
    // Passive: it copies what no reader still needs and never waits; the next write starts the log over once
    // every frame was copied and no reader reads from the log.
    sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, 0, 0);
    atomic_fetch_add(&state->checkpoints, 1);
    return 1;
}

void tributary_wal_restart_install(sqlite3 *db, tributary_wal_restart *state) {
    sqlite3_wal_hook(db, tributary_wal_restart_hook, state);
}

int tributary_wal_restart_generation(tributary_wal_restart *state) {
    return atomic_load(&state->generation);
}

void tributary_wal_restart_report(tributary_wal_restart *state, int generation, int checkpointed) {
    atomic_store(&state->reported, ((long long)generation << 32) | (unsigned int)checkpointed);
}

long long tributary_wal_restart_checkpoints(tributary_wal_restart *state) {
    return atomic_load(&state->checkpoints);
}
