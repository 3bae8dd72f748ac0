// The power-loss VFS of PowerLoss.h: a shim over the default VFS that records the unsynced writes of watched files.

#include "PowerLoss.h"

#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SECTOR = 512 };

/// A write or truncation not synced yet, with what it replaced.
typedef struct Unsynced {
    int truncation;                // 1: the file was cut to `offset`; 0: `new_data` written at `offset`
    sqlite3_int64 offset;
    sqlite3_int64 size_before;     // the file's size before it
    unsigned char *old_data;       // the bytes it replaced (up to the old end of the file)
    int old_length;
    unsigned char *new_data;       // a write's bytes
    int new_length;
    struct Unsynced *next;
} Unsynced;

/// A watched file, by path: its unsynced operations in order.
typedef struct Tracked {
    char *path;
    Unsynced *first, *last;
    struct Tracked *next;
} Tracked;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sqlite3_vfs *base;
static sqlite3_vfs shim;
static char *watched;
static Tracked *tracked;
static long long operations;
static long long crash_at = -1;
static int lost;
/// While set, a sync of a watched file waits (without the lock) until it is cleared.
static int syncs_held;
static long long syncs_waiting;
static pthread_cond_t syncs_released = PTHREAD_COND_INITIALIZER;

typedef struct {
    sqlite3_file file;
    sqlite3_file *real;
    Tracked *tracked;   // NULL: not watched
} ShimFile;

static void free_unsynced(Tracked *t) {
    Unsynced *u = t->first;
    while (u) {
        Unsynced *next = u->next;
        free(u->old_data);
        free(u->new_data);
        free(u);
        u = next;
    }
    t->first = t->last = NULL;
}

static Tracked *track(const char *path) {
    for (Tracked *t = tracked; t; t = t->next)
        if (strcmp(t->path, path) == 0) return t;
    Tracked *t = calloc(1, sizeof(Tracked));
    t->path = strdup(path);
    t->next = tracked;
    tracked = t;
    return t;
}

/// Counts a watched operation; returns 1 when the power is (now) lost. Called with the lock held.
static int losing_power(void) {
    if (lost) return 1;
    if (crash_at >= 0 && operations >= crash_at) {
        lost = 1;
        return 1;
    }
    operations += 1;
    return 0;
}

/// The `length` bytes at `offset` as they are now (zeros past the end), for the record.
static unsigned char *read_old(ShimFile *f, sqlite3_int64 offset, int length) {
    unsigned char *data = calloc(1, length > 0 ? (size_t)length : 1);
    int rc = f->real->pMethods->xRead(f->real, data, length, offset);
    (void)rc;  // SQLITE_IOERR_SHORT_READ zero-fills the rest, as wanted
    return data;
}

static void append(Tracked *t, Unsynced *u) {
    if (t->last) t->last->next = u; else t->first = u;
    t->last = u;
}

static int shim_close(sqlite3_file *file) {
    ShimFile *f = (ShimFile *)file;
    int rc = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    return rc;
}

static int shim_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    ShimFile *f = (ShimFile *)file;
    if (f->tracked) {
        pthread_mutex_lock(&lock);
        int down = lost;
        pthread_mutex_unlock(&lock);
        if (down) return SQLITE_IOERR_READ;
    }
    return f->real->pMethods->xRead(f->real, buffer, amount, offset);
}

static int shim_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    ShimFile *f = (ShimFile *)file;
    if (!f->tracked) return f->real->pMethods->xWrite(f->real, buffer, amount, offset);
    pthread_mutex_lock(&lock);
    if (losing_power()) {
        pthread_mutex_unlock(&lock);
        return SQLITE_IOERR_WRITE;
    }
    Unsynced *u = calloc(1, sizeof(Unsynced));
    u->offset = offset;
    f->real->pMethods->xFileSize(f->real, &u->size_before);
    u->old_length = amount;
    u->old_data = read_old(f, offset, amount);
    u->new_length = amount;
    u->new_data = malloc((size_t)amount);
    memcpy(u->new_data, buffer, (size_t)amount);
    append(f->tracked, u);
    int rc = f->real->pMethods->xWrite(f->real, buffer, amount, offset);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int shim_truncate(sqlite3_file *file, sqlite3_int64 size) {
    ShimFile *f = (ShimFile *)file;
    if (!f->tracked) return f->real->pMethods->xTruncate(f->real, size);
    pthread_mutex_lock(&lock);
    if (losing_power()) {
        pthread_mutex_unlock(&lock);
        return SQLITE_IOERR_TRUNCATE;
    }
    Unsynced *u = calloc(1, sizeof(Unsynced));
    u->truncation = 1;
    u->offset = size;
    f->real->pMethods->xFileSize(f->real, &u->size_before);
    u->old_length = u->size_before > size ? (int)(u->size_before - size) : 0;
    u->old_data = read_old(f, size, u->old_length);
    append(f->tracked, u);
    int rc = f->real->pMethods->xTruncate(f->real, size);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int shim_sync(sqlite3_file *file, int flags) {
    ShimFile *f = (ShimFile *)file;
    if (!f->tracked) return f->real->pMethods->xSync(f->real, flags);
    pthread_mutex_lock(&lock);
    while (syncs_held) {
        syncs_waiting += 1;
        pthread_cond_wait(&syncs_released, &lock);
        syncs_waiting -= 1;
    }
    if (losing_power()) {
        pthread_mutex_unlock(&lock);
        return SQLITE_IOERR_FSYNC;
    }
    int rc = f->real->pMethods->xSync(f->real, flags);
    if (rc == SQLITE_OK) free_unsynced(f->tracked);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int shim_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xFileSize(f->real, size);
}

static int shim_lock(sqlite3_file *file, int level) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xLock(f->real, level);
}

static int shim_unlock(sqlite3_file *file, int level) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xUnlock(f->real, level);
}

static int shim_check_reserved(sqlite3_file *file, int *out) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int shim_file_control(sqlite3_file *file, int op, void *argument) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xFileControl(f->real, op, argument);
}

static int shim_sector_size(sqlite3_file *file) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xSectorSize(f->real);
}

static int shim_device_characteristics(sqlite3_file *file) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int shim_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xShmMap(f->real, page, size, extend, out);
}

static int shim_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void shim_shm_barrier(sqlite3_file *file) {
    ShimFile *f = (ShimFile *)file;
    f->real->pMethods->xShmBarrier(f->real);
}

static int shim_shm_unmap(sqlite3_file *file, int delete_flag) {
    ShimFile *f = (ShimFile *)file;
    return f->real->pMethods->xShmUnmap(f->real, delete_flag);
}

/// Memory-mapped reads are refused, so every read of a watched file goes through xRead.
static int shim_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    (void)file; (void)offset; (void)amount;
    *out = NULL;
    return SQLITE_OK;
}

static int shim_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *pointer) {
    (void)file; (void)offset; (void)pointer;
    return SQLITE_OK;
}

static const sqlite3_io_methods shim_methods = {
    3, shim_close, shim_read, shim_write, shim_truncate, shim_sync, shim_file_size, shim_lock, shim_unlock,
    shim_check_reserved, shim_file_control, shim_sector_size, shim_device_characteristics, shim_shm_map,
    shim_shm_lock, shim_shm_barrier, shim_shm_unmap, shim_fetch, shim_unfetch,
};

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    ShimFile *f = (ShimFile *)file;
    f->real = (sqlite3_file *)(f + 1);
    f->tracked = NULL;
    int rc = base->xOpen(base, name, f->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        file->pMethods = NULL;
        return rc;
    }
    pthread_mutex_lock(&lock);
    if (name && watched && strncmp(name, watched, strlen(watched)) == 0
        && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL))) {
        f->tracked = track(name);
    }
    pthread_mutex_unlock(&lock);
    file->pMethods = &shim_methods;
    return SQLITE_OK;
}

static int shim_delete(sqlite3_vfs *vfs, const char *name, int sync_directory) {
    (void)vfs;
    pthread_mutex_lock(&lock);
    if (name && watched && strncmp(name, watched, strlen(watched)) == 0) {
        if (lost) {
            pthread_mutex_unlock(&lock);
            return SQLITE_IOERR_DELETE;
        }
        for (Tracked *t = tracked; t; t = t->next)
            if (strcmp(t->path, name) == 0) free_unsynced(t);
    }
    pthread_mutex_unlock(&lock);
    return base->xDelete(base, name, sync_directory);
}

static int shim_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return base->xAccess(base, name, flags, out);
}

static int shim_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return base->xFullPathname(base, name, size, out);
}

static void *shim_dl_open(sqlite3_vfs *vfs, const char *name) { (void)vfs; return base->xDlOpen(base, name); }
static void shim_dl_error(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; base->xDlError(base, n, out); }
static void (*shim_dl_sym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    (void)vfs;
    return base->xDlSym(base, handle, symbol);
}
static void shim_dl_close(sqlite3_vfs *vfs, void *handle) { (void)vfs; base->xDlClose(base, handle); }
static int shim_randomness(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; return base->xRandomness(base, n, out); }
static int shim_sleep(sqlite3_vfs *vfs, int microseconds) { (void)vfs; return base->xSleep(base, microseconds); }
static int shim_current_time(sqlite3_vfs *vfs, double *out) { (void)vfs; return base->xCurrentTime(base, out); }
static int shim_last_error(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs;
    return base->xGetLastError ? base->xGetLastError(base, n, out) : 0;
}
static int shim_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return base->xCurrentTimeInt64(base, out);
}

int power_loss_register(void) {
    pthread_mutex_lock(&lock);
    if (base) {
        pthread_mutex_unlock(&lock);
        return SQLITE_OK;
    }
    sqlite3_initialize();
    base = sqlite3_vfs_find(NULL);
    if (!base) {
        pthread_mutex_unlock(&lock);
        return SQLITE_ERROR;
    }
    memset(&shim, 0, sizeof(shim));
    shim.iVersion = 2;
    shim.szOsFile = (int)sizeof(ShimFile) + base->szOsFile;
    shim.mxPathname = base->mxPathname;
    shim.zName = "tributary-power-loss";
    shim.xOpen = shim_open;
    shim.xDelete = shim_delete;
    shim.xAccess = shim_access;
    shim.xFullPathname = shim_full_pathname;
    shim.xDlOpen = shim_dl_open;
    shim.xDlError = shim_dl_error;
    shim.xDlSym = shim_dl_sym;
    shim.xDlClose = shim_dl_close;
    shim.xRandomness = shim_randomness;
    shim.xSleep = shim_sleep;
    shim.xCurrentTime = shim_current_time;
    shim.xGetLastError = shim_last_error;
    shim.xCurrentTimeInt64 = shim_current_time_int64;
    int rc = sqlite3_vfs_register(&shim, 1);
    pthread_mutex_unlock(&lock);
    return rc;
}

/// Forgets what was recorded. The tracked files stay listed (a file still open keeps its pointer to its entry),
/// with nothing recorded.
static void forget_all(void) {
    for (Tracked *t = tracked; t; t = t->next) free_unsynced(t);
    operations = 0;
    crash_at = -1;
    lost = 0;
}

void power_loss_watch(const char *prefix) {
    pthread_mutex_lock(&lock);
    forget_all();
    free(watched);
    watched = prefix ? strdup(prefix) : NULL;
    pthread_mutex_unlock(&lock);
}

void power_loss_arm(long long operation) {
    pthread_mutex_lock(&lock);
    crash_at = operation < 0 ? -1 : operations + operation;
    pthread_mutex_unlock(&lock);
}

void power_loss_hold_syncs(int held) {
    pthread_mutex_lock(&lock);
    syncs_held = held;
    if (!held) pthread_cond_broadcast(&syncs_released);
    pthread_mutex_unlock(&lock);
}

long long power_loss_syncs_waiting(void) {
    pthread_mutex_lock(&lock);
    long long n = syncs_waiting;
    pthread_mutex_unlock(&lock);
    return n;
}

long long power_loss_operations(void) {
    pthread_mutex_lock(&lock);
    long long n = operations;
    pthread_mutex_unlock(&lock);
    return n;
}

int power_loss_happened(void) {
    pthread_mutex_lock(&lock);
    int down = lost;
    pthread_mutex_unlock(&lock);
    return down;
}

/// A small generator of our own, so that a seed gives the same choices on every libc.
static unsigned int next_random(unsigned int *state) {
    *state = *state * 1103515245u + 12345u;
    return (*state >> 16) & 0x7fff;
}

static int write_at(int fd, const unsigned char *data, sqlite3_int64 length, sqlite3_int64 offset) {
    while (length > 0) {
        ssize_t n = pwrite(fd, data, (size_t)length, (off_t)offset);
        if (n <= 0) return -1;
        data += n;
        length -= n;
        offset += n;
    }
    return 0;
}

/// Puts back what one unsynced operation replaced.
static int revert(int fd, const Unsynced *u) {
    if (u->truncation) return write_at(fd, u->old_data, u->old_length, u->offset);
    sqlite3_int64 kept = u->size_before - u->offset;
    if (kept > u->old_length) kept = u->old_length;
    if (kept > 0 && write_at(fd, u->old_data, kept, u->offset) != 0) return -1;
    if (u->offset + u->new_length > u->size_before && ftruncate(fd, (off_t)u->size_before) != 0) return -1;
    return 0;
}

/// Puts back what a file's unsynced operations replaced, last first: the file as of its last sync.
static int revert_all(int fd, Unsynced *first) {
    size_t count = 0;
    for (Unsynced *u = first; u; u = u->next) count += 1;
    Unsynced **all = malloc(count * sizeof(Unsynced *));
    size_t i = 0;
    for (Unsynced *u = first; u; u = u->next) all[i++] = u;
    int rc = 0;
    while (i > 0 && rc == 0) rc = revert(fd, all[--i]);
    free(all);
    return rc;
}

long long power_loss_apply(unsigned int seed, int torn_percent) {
    pthread_mutex_lock(&lock);
    unsigned int state = seed;
    long long changed = 0;
    int failed = 0;
    for (Tracked *t = tracked; t; t = t->next) {
        if (!t->first) continue;
        int fd = open(t->path, O_RDWR);
        if (fd < 0) continue;  // deleted since: nothing of it to keep
        if (revert_all(fd, t->first) != 0) {
            close(fd);
            pthread_mutex_unlock(&lock);
            return -1;
        }
        for (Unsynced *u = t->first; u; u = u->next) {
            if (next_random(&state) % 2 == 0) {
                changed += 1;
                continue;
            }
            if (u->truncation) {
                if (ftruncate(fd, (off_t)u->offset) != 0) failed = 1;
                continue;
            }
            sqlite3_int64 length = u->new_length;
            if ((int)(next_random(&state) % 100) < torn_percent && length > SECTOR) {
                length = (sqlite3_int64)(next_random(&state) % (unsigned)(length / SECTOR)) * SECTOR;
                changed += 1;
            }
            if (length > 0 && write_at(fd, u->new_data, length, u->offset) != 0) failed = 1;
        }
        close(fd);
        free_unsynced(t);
        if (failed) break;
    }
    // The WAL index lives in shared memory: after a power loss it is rebuilt from the WAL.
    for (Tracked *t = tracked; t; t = t->next) {
        size_t n = strlen(t->path);
        char *shm = malloc(n + 5);
        memcpy(shm, t->path, n);
        memcpy(shm + n, "-shm", 5);
        unlink(shm);
        free(shm);
    }
    operations = 0;
    crash_at = -1;
    lost = 0;
    pthread_mutex_unlock(&lock);
    return failed ? -1 : changed;
}
