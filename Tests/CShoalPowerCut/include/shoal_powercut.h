// CShoalPowerCut: a SQLite VFS for tests that simulates a power cut below the store.
//
// It wraps the default unix VFS under its own name and records, per file, what was written since
// that file's last xSync. At a "power cut" (the Nth write, sync, truncate or delete through it, or
// on request) it rewinds the files on disk to what a disk that lost power could hold, seeded:
// per file, every unsynced sector kept, every one dropped, a random subset kept, or the writes
// kept in order up to one torn at 512-byte sectors and the rest dropped. Directory entries are
// modelled too: a file created, or deleted, since its directory was last synced may be undone.
// After the cut every file opened through the VFS fails its I/O, so the abandoned connections
// can close without touching the disk; reopen through the default VFS.
//
// Several stores (nodes) may run on it at once, each in a directory of its own: the cut can be
// confined to one directory (shoal_powercut_arm), whose files then alone count events, lose
// their unsynced writes and entries, and fail, while the others' keep running and keep what they
// have not synced for a later cut of their own. A directory sync covers only that directory.
//
// One instance per process (global state behind a mutex): suites using it run serialized.

#ifndef SHOAL_POWERCUT_H
#define SHOAL_POWERCUT_H

#include <stdint.h>

/// The name the VFS registers under.
#define SHOAL_POWERCUT_VFS_NAME "shoal-powercut"

/// Registers the VFS (once; later calls do nothing). Returns a SQLite result code.
int shoal_powercut_register(void);

/// Forgets every recorded write and starts recording again: files are taken as synced as they
/// are now. `seed` drives the cut's choices; `cut_at` is the mutating event (write, sync,
/// truncate, delete; counted from 1) before which the power is cut, 0 for never.
void shoal_powercut_reset(uint64_t seed, uint64_t cut_at);

/// Fills the disk from the mutating event `event_number` on (0: never, and space returns):
/// from then every write or truncation that would grow a tracked file fails with SQLITE_FULL,
/// as the unix VFS reports ENOSPC; writes within a file's size still succeed. A reset frees it.
void shoal_powercut_fill_disk_at(uint64_t event_number);

/// Makes the VFS ignore the xSync of write-ahead logs (and rollback journals) while `on` is
/// nonzero: it reports success and leaves the writes unsynced, as a missing fsync would.
/// Tests use it to show the power-cut checks catch a broken ordering.
void shoal_powercut_ignore_log_syncs(int on);

/// What every file does with its unsynced writes at the cut, instead of a seeded choice:
/// 0 keeps them all, 1 drops them all, 2 keeps a random subset of sectors, 3 tears them;
/// -1 (the default) chooses per file from the seed. 0 also keeps every unsynced creation and
/// deletion of a directory entry, 1 undoes them all; otherwise a seeded prefix survives.
void shoal_powercut_force_mode(int mode);

/// Confines the next cut to the files under `directory` (a node's data directory) and arms it:
/// from now only those files count mutating events, `cut_at` (from 1; 0 for never) is the event
/// before which their power is cut, and `seed` drives the cut's choices. Every other file keeps
/// what it has written and not synced. Arm one directory at a time, after the last one's cut was
/// followed by shoal_powercut_restore. A reset lifts the confinement (every file, as before).
void shoal_powercut_arm(const char *directory, uint64_t seed, uint64_t cut_at);

/// Power comes back for the directory that was cut: what the cut left on disk is its files'
/// synced state from now, and they open again. Call it once every file under the directory is
/// closed (shoal_powercut_open_files_under).
void shoal_powercut_restore(void);

/// Files open through the VFS whose name starts with `directory`.
int shoal_powercut_open_files_under(const char *directory);

/// Cuts the power now (if it has not been cut yet). Returns 1 when this call cut it.
int shoal_powercut_cut_now(void);

/// Whether the power has been cut since the last reset.
int shoal_powercut_is_cut(void);

/// Mutating events seen since the last reset.
uint64_t shoal_powercut_events(void);

/// Files currently open through the VFS (a test checks the old store has closed them all).
int shoal_powercut_open_files(void);

/// What the last cut did: unsynced sectors kept and dropped, files whose creation or deletion
/// was undone.
void shoal_powercut_last_cut(uint64_t *kept_sectors, uint64_t *dropped_sectors, uint64_t *undone_entries);

#endif
