// shoal_powercut.c: the power-cut VFS (see include/shoal_powercut.h), after SQLite's own crash
// VFS (src/test6.c), which also keeps unsynced writes per sector and garbles or drops them.
//
// What is modelled:
// - File data. Every sector (512 bytes) written or truncated away since the file's last xSync is
//   remembered with its content as of that sync. A sync (fsync or fdatasync: the unix VFS issues
//   one or the other, both persist data and size) makes the file's writes durable; it is not
//   passed on to the disk, since the cut, not the disk, decides what survives. At the cut
//   each file, seeded, keeps all of them, drops all, keeps a random subset of sectors, or is torn:
//   sectors last written before a chosen write are kept, the chosen write's sectors each kept or
//   not, later ones dropped. A dropped sector takes its synced content back; one beyond the
//   synced size reads as zeros (a hole) when a later sector is kept, else the file ends at its
//   synced size.
// - Directory entries, as the unix VFS syncs them: a journal or log opened with
//   SQLITE_OPEN_CREATE syncs its directory at its first xSync (unix VFS UNIXFILE_DIRSYNC), and
//   xDelete with its dirSync flag set syncs it after the unlink. Creations and deletions since
//   the directory's last such sync are kept in order, and the cut keeps a seeded prefix of them
//   (a journaling file system commits metadata in order): a creation undone removes the file, a
//   deletion undone brings the file back (it is renamed aside, not unlinked, until the directory
//   is synced). The main database file's own creation syncs nothing, as in SQLite.
//
// What is not: a sector keeps either its synced content or its newest, never one written in
// between; sectors are never garbled (a torn sector is whole or absent: WAL frames carry
// checksums, and SQLite's crash VFS garbles only with an option the store does not rely on); the
// shared-memory index (-shm) is not modelled, SQLite rebuilds it from the log on first open; a
// sync is never lost or reported falsely (unless a test asks, shoal_powercut_ignore_log_syncs);
// what the disk's own cache does with a flush is the file system's promise, taken as given.
// Files decide alone, so unsynced writes to one may survive while another's are lost.

#include "shoal_powercut.h"

#include <sqlite3.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>

#define SECTOR 512

typedef struct Sector {
    int64_t index;          // -1: empty slot
    uint64_t last_write;    // the event that last wrote (or truncated) it
    int old_len;            // bytes of synced content (0: beyond the synced size)
    unsigned char old[SECTOR];
} Sector;

typedef struct Tracked {
    char *path;             // where the file is now (a deleted file's aside name)
    int64_t synced_size;
    Sector *slots;
    size_t capacity, count;
    int is_log;             // a journal or write-ahead log
    int open_handles;
    struct Tracked *next;
} Tracked;

typedef struct DirOp {
    int is_delete;
    char *path;             // the name created or deleted
    char *aside;            // a deleted file's content, until the directory is synced
} DirOp;

typedef struct PowerFile {
    sqlite3_file base;
    Tracked *tracked;       // NULL: a file the VFS does not track (temporary files)
    int dirsync_pending;
    char *name;             // the name it was opened by (NULL: a temporary file)
    struct PowerFile *next_open, *prev_open;
    sqlite3_file *real;     // follows this struct in the same allocation
} PowerFile;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sqlite3_vfs *real_vfs;
static sqlite3_vfs power_vfs;
static Tracked *tracked_files;
static DirOp *dirops;
static size_t dirop_count, dirop_capacity;
static uint64_t rng_state, events, cut_at, aside_counter, full_at;
static int dead, ignore_log_syncs, open_files, forced_mode = -1;
/// The directory (a path prefix ending in '/') whose files the next cut takes; NULL: every file.
/// Only its files count events, fail once it is cut, and lose unsynced writes and entries.
static char *domain;
static size_t domain_len;
static PowerFile *open_list;
static uint64_t stat_kept, stat_dropped, stat_undone;

/// SHOAL_POWERCUT_TRACE set: every open, sync and delete is written to stderr.
static int tracing(void) {
    static int t = -1;
    if (t < 0) t = getenv("SHOAL_POWERCUT_TRACE") != NULL;
    return t;
}

static uint64_t next_random(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t random_below(uint64_t n) { return n == 0 ? 0 : next_random() % n; }

/// Whether `path` lies in the domain (every path, temporary files included, when there is none).
static int under_domain(const char *path) {
    if (!domain) return 1;
    return path != NULL && strncmp(path, domain, domain_len) == 0;
}

/// Whether `p`'s power is off: the domain it lies in was cut.
static int file_off(PowerFile *p) { return dead && under_domain(p->name); }

/// The length of `path`'s directory part (up to its last '/'), 0 when it has none.
static size_t directory_len(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) : 0;
}

// MARK: sectors

static Sector *sector_find(Tracked *t, int64_t index, int insert) {
    if (insert && (t->count + 1) * 2 > t->capacity) {
        size_t old_cap = t->capacity;
        Sector *old = t->slots;
        t->capacity = old_cap ? old_cap * 2 : 64;
        t->slots = malloc(t->capacity * sizeof(Sector));
        for (size_t i = 0; i < t->capacity; i++) t->slots[i].index = -1;
        t->count = 0;
        for (size_t i = 0; i < old_cap; i++) {
            if (old[i].index < 0) continue;
            Sector *s = sector_find(t, old[i].index, 1);
            *s = old[i];
        }
        free(old);
    }
    if (t->capacity == 0) return NULL;
    size_t i = (size_t)((uint64_t)index * 0x9E3779B97F4A7C15ULL) & (t->capacity - 1);
    for (;;) {
        if (t->slots[i].index == index) return &t->slots[i];
        if (t->slots[i].index < 0) {
            if (!insert) return NULL;
            t->slots[i].index = index;
            t->count++;
            return &t->slots[i];
        }
        i = (i + 1) & (t->capacity - 1);
    }
}

static void sectors_clear(Tracked *t) {
    free(t->slots);
    t->slots = NULL;
    t->capacity = t->count = 0;
}

static int64_t size_of_path(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/// Remembers the synced content of the sectors in [from, to) not remembered yet; `real` reads
/// the file as it is now.
static void remember(Tracked *t, sqlite3_file *real, int64_t from, int64_t to) {
    if (to <= from) return;
    for (int64_t s = from / SECTOR; s * SECTOR < to; s++) {
        Sector *sec = sector_find(t, s, 0);
        if (!sec) {
            sec = sector_find(t, s, 1);
            int64_t start = s * SECTOR;
            int64_t len = t->synced_size - start;
            if (len > SECTOR) len = SECTOR;
            if (len < 0) len = 0;
            sec->old_len = (int)len;
            memset(sec->old, 0, SECTOR);
            if (len > 0) {
                // Short reads zero-fill: what lies past the end now was truncated, and is zero
                // only if it was never synced, which old_len already says.
                real->pMethods->xRead(real, sec->old, (int)len, start);
            }
        }
        sec->last_write = events;
    }
}

// MARK: the cut

static void write_at(int fd, const void *buf, size_t n, int64_t off) {
    if (pwrite(fd, buf, n, off) != (ssize_t)n) perror("shoal_powercut: pwrite");
}

static void lose_unsynced(Tracked *t) {
    if (t->count == 0 || !t->path) return;
    int mode = (int)random_below(4); // 0 keep all, 1 drop all, 2 subset, 3 torn
    if (forced_mode >= 0) mode = forced_mode;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < t->capacity; i++) {
        if (t->slots[i].index < 0) continue;
        if (t->slots[i].last_write < lo) lo = t->slots[i].last_write;
        if (t->slots[i].last_write > hi) hi = t->slots[i].last_write;
    }
    uint64_t tear = lo + random_below(hi - lo + 1);
    int64_t cur = size_of_path(t->path);
    int64_t final = cur < t->synced_size ? cur : t->synced_size;
    // Decide every sector, and from that the size the file ends at, before writing anything.
    char *keep = malloc(t->capacity);
    for (size_t i = 0; i < t->capacity; i++) {
        Sector *s = &t->slots[i];
        keep[i] = 0;
        if (s->index < 0) continue;
        switch (mode) {
        case 0: keep[i] = 1; break;
        case 1: keep[i] = 0; break;
        case 2: keep[i] = (char)random_below(2); break;
        default:
            keep[i] = s->last_write < tear ? 1 : s->last_write == tear ? (char)random_below(2) : 0;
        }
        int64_t end = (s->index + 1) * SECTOR;
        if (keep[i]) {
            stat_kept++;
            int64_t e = end < cur ? end : cur;
            if (e > final) final = e;
        } else {
            stat_dropped++;
            int64_t e = s->index * SECTOR + s->old_len;
            if (s->old_len > 0 && e > final) final = e;
        }
    }
    int fd = open(t->path, O_RDWR);
    if (fd < 0) { free(keep); return; }
    if (ftruncate(fd, final) != 0) perror("shoal_powercut: ftruncate");
    unsigned char buf[SECTOR];
    for (size_t i = 0; i < t->capacity; i++) {
        Sector *s = &t->slots[i];
        if (s->index < 0 || keep[i]) continue;
        int64_t start = s->index * SECTOR;
        if (start >= final) continue;
        memset(buf, 0, SECTOR);
        memcpy(buf, s->old, (size_t)s->old_len);
        int64_t n = final - start < SECTOR ? final - start : SECTOR;
        write_at(fd, buf, (size_t)n, start);
    }
    close(fd);
    free(keep);
}

static void forget_path(const char *path) {
    for (Tracked *t = tracked_files; t; t = t->next) {
        if (t->path && strcmp(t->path, path) == 0) {
            free(t->path);
            t->path = NULL;
            sectors_clear(t);
        }
    }
}

/// The directory holding `path` was synced: its creations and deletions are durable. Entries
/// of other directories (other nodes' stores) stay as they are.
static void directory_synced(const char *path) {
    size_t len = directory_len(path), kept = 0;
    for (size_t i = 0; i < dirop_count; i++) {
        DirOp op = dirops[i];
        if (directory_len(op.path) != len || strncmp(op.path, path, len) != 0) {
            dirops[kept++] = op;
            continue;
        }
        if (op.is_delete) {
            unlink(op.aside);
            forget_path(op.aside);
        }
        free(op.path);
        free(op.aside);
    }
    dirop_count = kept;
}

static void cut(void) {
    if (dead) return;
    dead = 1;
    stat_kept = stat_dropped = stat_undone = 0;
    for (Tracked *t = tracked_files; t; t = t->next) {
        if (under_domain(t->path)) lose_unsynced(t);
    }
    // The domain's entries, in order, move to the front; the others stay behind them.
    size_t mine = 0;
    for (size_t i = 0; i < dirop_count; i++) {
        if (!under_domain(dirops[i].path)) continue;
        DirOp op = dirops[i];
        memmove(&dirops[mine + 1], &dirops[mine], (i - mine) * sizeof(DirOp));
        dirops[mine++] = op;
    }
    size_t survive = (size_t)random_below(mine + 1);
    if (forced_mode == 0) survive = mine;
    if (forced_mode == 1) survive = 0;
    for (size_t i = mine; i > survive; i--) {
        DirOp *op = &dirops[i - 1];
        stat_undone++;
        if (op->is_delete) {
            if (rename(op->aside, op->path) != 0) perror("shoal_powercut: rename back");
            free(op->aside);
            op->aside = NULL;
        } else {
            unlink(op->path);
        }
    }
    for (size_t i = 0; i < survive; i++) {
        if (dirops[i].is_delete) unlink(dirops[i].aside);
    }
    for (size_t i = 0; i < mine; i++) {
        free(dirops[i].path);
        free(dirops[i].aside);
    }
    memmove(&dirops[0], &dirops[mine], (dirop_count - mine) * sizeof(DirOp));
    dirop_count -= mine;
}

/// Counts a mutating event on `path` and cuts the power when it is the chosen one. Returns
/// whether the power is off there (the caller then fails without touching the disk). Files
/// outside the domain count nothing and never fail.
static int event(const char *path) {
    if (!under_domain(path)) return 0;
    events++;
    if (!dead && cut_at != 0 && events >= cut_at) cut();
    return dead;
}

static void push_dirop(int is_delete, const char *path, const char *aside) {
    if (dirop_count == dirop_capacity) {
        dirop_capacity = dirop_capacity ? dirop_capacity * 2 : 16;
        dirops = realloc(dirops, dirop_capacity * sizeof(DirOp));
    }
    dirops[dirop_count].is_delete = is_delete;
    dirops[dirop_count].path = strdup(path);
    dirops[dirop_count].aside = aside ? strdup(aside) : NULL;
    dirop_count++;
}

// MARK: file methods

#define REAL(f) (((PowerFile *)(f))->real)
#define TRACKED(f) (((PowerFile *)(f))->tracked)

static int pf_close(sqlite3_file *f) {
    PowerFile *p = (PowerFile *)f;
    int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
    pthread_mutex_lock(&lock);
    if (TRACKED(f)) TRACKED(f)->open_handles--;
    open_files--;
    if (p->prev_open) p->prev_open->next_open = p->next_open; else open_list = p->next_open;
    if (p->next_open) p->next_open->prev_open = p->prev_open;
    free(p->name);
    p->name = NULL;
    pthread_mutex_unlock(&lock);
    return rc;
}

static int pf_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off) {
    pthread_mutex_lock(&lock);
    int off_now = file_off((PowerFile *)f);
    pthread_mutex_unlock(&lock);
    if (off_now) return SQLITE_IOERR_READ;
    return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}

/// Whether the disk is full and a write to `f` up to `end` would need new space.
static int needs_space(sqlite3_file *f, sqlite3_int64 end) {
    if (full_at == 0 || events < full_at || !TRACKED(f)) return 0;
    sqlite3_int64 size = 0;
    REAL(f)->pMethods->xFileSize(REAL(f), &size);
    return end > size;
}

static int pf_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off) {
    pthread_mutex_lock(&lock);
    if (event(((PowerFile *)f)->name)) { pthread_mutex_unlock(&lock); return SQLITE_IOERR_WRITE; }
    // A full disk refuses what would grow a file (ENOSPC, which the unix VFS reports as
    // SQLITE_FULL); a write in place still lands in blocks the file holds.
    if (needs_space(f, off + n)) { pthread_mutex_unlock(&lock); return SQLITE_FULL; }
    Tracked *t = TRACKED(f);
    if (t) remember(t, REAL(f), off, off + n);
    int rc = REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int pf_truncate(sqlite3_file *f, sqlite3_int64 size) {
    pthread_mutex_lock(&lock);
    if (event(((PowerFile *)f)->name)) { pthread_mutex_unlock(&lock); return SQLITE_IOERR_TRUNCATE; }
    if (needs_space(f, size)) { pthread_mutex_unlock(&lock); return SQLITE_FULL; }
    Tracked *t = TRACKED(f);
    if (t) {
        sqlite3_int64 cur = 0;
        REAL(f)->pMethods->xFileSize(REAL(f), &cur);
        remember(t, REAL(f), size, cur);
    }
    int rc = REAL(f)->pMethods->xTruncate(REAL(f), size);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int pf_sync(sqlite3_file *f, int flags) {
    pthread_mutex_lock(&lock);
    if (event(((PowerFile *)f)->name)) { pthread_mutex_unlock(&lock); return SQLITE_IOERR_FSYNC; }
    PowerFile *p = (PowerFile *)f;
    Tracked *t = p->tracked;
    if (t && t->is_log && ignore_log_syncs) { pthread_mutex_unlock(&lock); return SQLITE_OK; }
    // Durability is what this model says it is, so a tracked file's sync is not passed on to
    // the disk (as in SQLite's crash VFS): a soak then costs no fsyncs.
    (void)flags;
    int rc = t ? SQLITE_OK : p->real->pMethods->xSync(p->real, flags);
    if (tracing()) fprintf(stderr, "powercut: event %llu sync %s%s\n", (unsigned long long)events,
                           t && t->path ? t->path : "(untracked)", p->dirsync_pending ? " and its directory" : "");
    if (rc == SQLITE_OK && t) {
        sectors_clear(t);
        sqlite3_int64 size = 0;
        p->real->pMethods->xFileSize(p->real, &size);
        t->synced_size = size;
        if (p->dirsync_pending) {
            p->dirsync_pending = 0;
            if (t->path) directory_synced(t->path);
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int pf_file_size(sqlite3_file *f, sqlite3_int64 *size) { return REAL(f)->pMethods->xFileSize(REAL(f), size); }

static int pf_lock(sqlite3_file *f, int level) {
    pthread_mutex_lock(&lock);
    int off_now = file_off((PowerFile *)f);
    pthread_mutex_unlock(&lock);
    if (off_now) return SQLITE_IOERR_LOCK;
    return REAL(f)->pMethods->xLock(REAL(f), level);
}

static int pf_unlock(sqlite3_file *f, int level) { return REAL(f)->pMethods->xUnlock(REAL(f), level); }
static int pf_check_reserved(sqlite3_file *f, int *out) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out); }
static int pf_file_control(sqlite3_file *f, int op, void *arg) { return REAL(f)->pMethods->xFileControl(REAL(f), op, arg); }
static int pf_sector_size(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int pf_device(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }

static int pf_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out) {
    pthread_mutex_lock(&lock);
    int off_now = file_off((PowerFile *)f);
    pthread_mutex_unlock(&lock);
    if (off_now) return SQLITE_IOERR_SHMMAP;
    return REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, out);
}

static int pf_shm_lock(sqlite3_file *f, int offset, int n, int flags) {
    pthread_mutex_lock(&lock);
    int off_now = file_off((PowerFile *)f);
    pthread_mutex_unlock(&lock);
    if ((flags & SQLITE_SHM_LOCK) && off_now) return SQLITE_IOERR_SHMLOCK;
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}

static void pf_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int pf_shm_unmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }

// Version 2: no xFetch, so SQLite reads through xRead (no memory-mapped reads to bypass it).
static const sqlite3_io_methods power_methods = {
    2, pf_close, pf_read, pf_write, pf_truncate, pf_sync, pf_file_size, pf_lock, pf_unlock,
    pf_check_reserved, pf_file_control, pf_sector_size, pf_device,
    pf_shm_map, pf_shm_lock, pf_shm_barrier, pf_shm_unmap, NULL, NULL,
};

// MARK: VFS methods

static int pv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags) {
    (void)vfs;
    PowerFile *p = (PowerFile *)f;
    memset(p, 0, sizeof(PowerFile));
    p->real = (sqlite3_file *)(p + 1);
    int type = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL | SQLITE_OPEN_SUPER_JOURNAL);
    int track = name != NULL && type != 0 && !(flags & SQLITE_OPEN_DELETEONCLOSE);
    pthread_mutex_lock(&lock);
    if (dead && under_domain(name)) { pthread_mutex_unlock(&lock); return SQLITE_CANTOPEN; }
    int existed = name ? access(name, F_OK) == 0 : 1;
    int rc = real_vfs->xOpen(real_vfs, name, p->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        pthread_mutex_unlock(&lock);
        return rc;
    }
    if (track) {
        Tracked *t = tracked_files;
        while (t && !(t->path && strcmp(t->path, name) == 0)) t = t->next;
        if (!t) {
            t = calloc(1, sizeof(Tracked));
            t->path = strdup(name);
            t->synced_size = size_of_path(name);
            t->is_log = type != SQLITE_OPEN_MAIN_DB;
            t->next = tracked_files;
            tracked_files = t;
        }
        t->open_handles++;
        p->tracked = t;
        if (!existed && (flags & SQLITE_OPEN_CREATE)) push_dirop(0, name, NULL);
        p->dirsync_pending = (flags & SQLITE_OPEN_CREATE) && type != SQLITE_OPEN_MAIN_DB;
    }
    open_files++;
    p->name = name ? strdup(name) : NULL;
    p->next_open = open_list;
    if (open_list) open_list->prev_open = p;
    open_list = p;
    p->base.pMethods = &power_methods;
    if (tracing()) fprintf(stderr, "powercut: open %s%s\n", name ? name : "(temporary)", track && !existed ? " (created)" : "");
    pthread_mutex_unlock(&lock);
    return SQLITE_OK;
}

static int pv_delete(sqlite3_vfs *vfs, const char *name, int dirsync) {
    (void)vfs;
    pthread_mutex_lock(&lock);
    if (event(name)) { pthread_mutex_unlock(&lock); return SQLITE_IOERR_DELETE; }
    Tracked *t = tracked_files;
    while (t && !(t->path && strcmp(t->path, name) == 0)) t = t->next;
    int rc;
    if (t && access(name, F_OK) == 0) {
        char aside[4096];
        snprintf(aside, sizeof aside, "%s.powercut-deleted-%llu", name, (unsigned long long)++aside_counter);
        rc = rename(name, aside) == 0 ? SQLITE_OK : SQLITE_IOERR_DELETE;
        if (rc == SQLITE_OK) {
            free(t->path);
            t->path = strdup(aside);
            push_dirop(1, name, aside);
        }
    } else {
        rc = real_vfs->xDelete(real_vfs, name, 0);
    }
    if (tracing()) fprintf(stderr, "powercut: event %llu delete %s%s\n", (unsigned long long)events, name, dirsync ? " and sync its directory" : "");
    if (rc == SQLITE_OK && dirsync) directory_synced(name);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int pv_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int pv_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    (void)vfs;
    return real_vfs->xFullPathname(real_vfs, name, n, out);
}

// MARK: the interface

int shoal_powercut_register(void) {
    pthread_mutex_lock(&lock);
    if (real_vfs) { pthread_mutex_unlock(&lock); return SQLITE_OK; }
    sqlite3_initialize();
    sqlite3_vfs *unix_vfs = sqlite3_vfs_find("unix");
    if (!unix_vfs) { pthread_mutex_unlock(&lock); return SQLITE_ERROR; }
    real_vfs = unix_vfs;
    power_vfs = *unix_vfs;
    power_vfs.pNext = NULL;
    power_vfs.zName = SHOAL_POWERCUT_VFS_NAME;
    power_vfs.szOsFile = (int)sizeof(PowerFile) + unix_vfs->szOsFile;
    power_vfs.xOpen = pv_open;
    power_vfs.xDelete = pv_delete;
    power_vfs.xAccess = pv_access;
    power_vfs.xFullPathname = pv_full_pathname;
    int rc = sqlite3_vfs_register(&power_vfs, 0);
    pthread_mutex_unlock(&lock);
    return rc;
}

void shoal_powercut_reset(uint64_t seed, uint64_t cut_event) {
    pthread_mutex_lock(&lock);
    Tracked **link = &tracked_files;
    while (*link) {
        Tracked *t = *link;
        if (t->open_handles == 0) {
            *link = t->next;
            sectors_clear(t);
            free(t->path);
            free(t);
        } else {
            sectors_clear(t);
            if (t->path) t->synced_size = size_of_path(t->path);
            link = &t->next;
        }
    }
    for (size_t i = 0; i < dirop_count; i++) {
        if (dirops[i].is_delete) unlink(dirops[i].aside);
        free(dirops[i].path);
        free(dirops[i].aside);
    }
    dirop_count = 0;
    rng_state = seed;
    events = 0;
    cut_at = cut_event;
    full_at = 0;
    dead = 0;
    free(domain);
    domain = NULL;
    domain_len = 0;
    pthread_mutex_unlock(&lock);
}

void shoal_powercut_arm(const char *directory, uint64_t seed, uint64_t cut_event) {
    pthread_mutex_lock(&lock);
    free(domain);
    domain_len = strlen(directory);
    domain = malloc(domain_len + 2);
    memcpy(domain, directory, domain_len);
    if (domain_len == 0 || domain[domain_len - 1] != '/') domain[domain_len++] = '/';
    domain[domain_len] = 0;
    rng_state = seed;
    events = 0;
    cut_at = cut_event;
    dead = 0;
    pthread_mutex_unlock(&lock);
}

void shoal_powercut_restore(void) {
    pthread_mutex_lock(&lock);
    Tracked **link = &tracked_files;
    while (*link) {
        Tracked *t = *link;
        if (!under_domain(t->path)) {
            link = &t->next;
        } else if (t->open_handles == 0) {
            *link = t->next;
            sectors_clear(t);
            free(t->path);
            free(t);
        } else {
            sectors_clear(t);
            if (t->path) t->synced_size = size_of_path(t->path);
            link = &t->next;
        }
    }
    cut_at = 0;
    dead = 0;
    pthread_mutex_unlock(&lock);
}

int shoal_powercut_open_files_under(const char *directory) {
    pthread_mutex_lock(&lock);
    size_t len = strlen(directory);
    int n = 0;
    for (PowerFile *p = open_list; p; p = p->next_open) {
        if (p->name && strncmp(p->name, directory, len) == 0) n++;
    }
    pthread_mutex_unlock(&lock);
    return n;
}

void shoal_powercut_fill_disk_at(uint64_t event_number) {
    pthread_mutex_lock(&lock);
    full_at = event_number;
    pthread_mutex_unlock(&lock);
}

void shoal_powercut_ignore_log_syncs(int on) {
    pthread_mutex_lock(&lock);
    ignore_log_syncs = on;
    pthread_mutex_unlock(&lock);
}

void shoal_powercut_force_mode(int mode) {
    pthread_mutex_lock(&lock);
    forced_mode = mode >= 0 && mode <= 3 ? mode : -1;
    pthread_mutex_unlock(&lock);
}

int shoal_powercut_cut_now(void) {
    pthread_mutex_lock(&lock);
    int was = dead;
    cut();
    pthread_mutex_unlock(&lock);
    return !was;
}

int shoal_powercut_is_cut(void) {
    pthread_mutex_lock(&lock);
    int d = dead;
    pthread_mutex_unlock(&lock);
    return d;
}

uint64_t shoal_powercut_events(void) {
    pthread_mutex_lock(&lock);
    uint64_t e = events;
    pthread_mutex_unlock(&lock);
    return e;
}

int shoal_powercut_open_files(void) {
    pthread_mutex_lock(&lock);
    int n = open_files;
    pthread_mutex_unlock(&lock);
    return n;
}

void shoal_powercut_last_cut(uint64_t *kept_sectors, uint64_t *dropped_sectors, uint64_t *undone_entries) {
    pthread_mutex_lock(&lock);
    if (kept_sectors) *kept_sectors = stat_kept;
    if (dropped_sectors) *dropped_sectors = stat_dropped;
    if (undone_entries) *undone_entries = stat_undone;
    pthread_mutex_unlock(&lock);
}
