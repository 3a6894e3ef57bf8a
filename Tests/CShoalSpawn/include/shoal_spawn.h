// CShoalSpawn: starting a child process for the tests with posix_spawn, every descriptor but its
// three standard streams closed in the child (glibc's closefrom action, which Swift's Glibc
// module does not export).
#ifndef SHOAL_SPAWN_H
#define SHOAL_SPAWN_H

#include <sys/types.h>

/// The child's standard stream `n` is the caller's descriptor `streams[n]`, or /dev/null when it
/// is SHOAL_SPAWN_NULL, or the caller's own stream `n` when it is SHOAL_SPAWN_INHERIT.
#define SHOAL_SPAWN_INHERIT (-1)
#define SHOAL_SPAWN_NULL (-2)

/// Starts `path` with `argv` (NULL-terminated) and this process's environment, in a process group
/// of its own, with no signal blocked and every signal's action the default. Every descriptor
/// from 3 up is closed in the child. Returns 0 and sets `*pid`, or an errno value.
int shoal_spawn(pid_t *pid, const char *path, char *const argv[], const int streams[3]);

#endif
