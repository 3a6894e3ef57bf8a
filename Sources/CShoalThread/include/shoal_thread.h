// CShoalThread: naming the calling thread, a per-thread mark for the asset lane's threads, and
// opening a file for direct (page-cache-bypassing) writes, whose flag Swift's Glibc does not export.
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

#endif
