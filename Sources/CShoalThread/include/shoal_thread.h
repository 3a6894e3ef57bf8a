// CShoalThread: naming the calling thread, and a per-thread mark for the asset lane's threads.
#ifndef SHOAL_THREAD_H
#define SHOAL_THREAD_H

/// Names the calling thread for top -H, perf and debuggers (Linux keeps the first 15 bytes); a
/// new thread otherwise carries its creator's name. Does nothing elsewhere.
void shoal_thread_set_name(const char *name);

/// Marks the calling thread as one of the asset lane's threads (a thread-local flag).
void shoal_thread_mark_lane(void);

/// 1 if the calling thread called shoal_thread_mark_lane, else 0.
int shoal_thread_is_lane(void);

#endif
