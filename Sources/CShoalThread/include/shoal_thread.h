// CShoalThread: lowering the calling thread's CPU and I/O priority, for background lanes.
#ifndef SHOAL_THREAD_H
#define SHOAL_THREAD_H

/// Lowers the calling thread's priority for work that must yield to everything else: on Linux
/// its CPU policy becomes SCHED_IDLE (it runs only when no normal thread wants the core) and its
/// I/O priority class becomes idle (the block layer dispatches its reads and writes after other
/// threads'). Returns a bit set of what took effect: 1 the CPU policy, 2 the I/O class; 0 where
/// neither exists. Never raises a priority, so it needs no privilege.
int shoal_thread_lower_priority(void);

/// 1 if the calling thread has called shoal_thread_lower_priority, else 0: a thread of normal
/// priority must not block waiting for a lowered one (it could wait as long as the machine is busy).
int shoal_thread_is_lowered(void);

/// Names the calling thread for top -H, perf and debuggers (Linux keeps the first 15 bytes); a
/// new thread otherwise carries its creator's name. Does nothing elsewhere.
void shoal_thread_set_name(const char *name);

#endif
