// CShoalThread: naming the calling thread, a per-thread mark for the asset lane's threads,
// opening a file for direct (page-cache-bypassing) writes, whose flag Swift's Glibc does not export,
// and the process's count of record commits under way, which bulk asset writes give way to.
#ifndef SHOAL_THREAD_H
#define SHOAL_THREAD_H

/// Names the calling thread for top -H, perf and debuggers (Linux keeps the first 15 bytes); a
/// new thread otherwise carries its creator's name. Does nothing elsewhere.
void shoal_thread_set_name(const char *name);

/// Marks the calling thread as one of the asset lane's threads (a thread-local flag).
void shoal_thread_mark_lane(void);

/// 1 if the calling thread called shoal_thread_mark_lane, else 0.
int shoal_thread_is_lane(void);

/// Opens an existing file for writing with O_DIRECT (Linux): writes go from the caller's buffer
/// to the device without a page-cache copy, and must be aligned (offset, length and memory).
/// Returns the descriptor, or -1 with errno set (EINVAL where the file system does not support
/// it, such as tmpfs; ENOTSUP elsewhere than Linux).
int shoal_open_direct_write(const char *path);

/// A record commit that syncs (a `synchronous=FULL` store transaction) is starting: until the
/// matching shoal_record_commit_end, bulk asset writes in this process hold back their next
/// piece (shoal_wait_for_record_commits), so the commit's flush does not queue behind them.
void shoal_record_commit_begin(void);

/// The commit begun by shoal_record_commit_begin is over (committed or rolled back).
void shoal_record_commit_end(void);

/// The record commits under way in this process now.
long shoal_record_commits(void);

/// Returns once no record commit is under way in this process, or after `max_microseconds`,
/// whichever comes first. Returns at once when none is. 1 if it waited, else 0.
int shoal_wait_for_record_commits(long max_microseconds);

#endif
