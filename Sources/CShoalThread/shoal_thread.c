// CShoalThread: naming the calling thread (Linux; nothing elsewhere), the asset-lane mark, and
// opening a file with O_DIRECT (Linux; ENOTSUP elsewhere).
#if defined(__linux__)
#define _GNU_SOURCE
#include <sys/prctl.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include "shoal_thread.h"

// Whether this thread is one of the asset lane's threads.
static _Thread_local int shoal_thread_lane = 0;

void shoal_thread_mark_lane(void) { shoal_thread_lane = 1; }

int shoal_thread_is_lane(void) { return shoal_thread_lane; }

#if defined(__linux__)
void shoal_thread_set_name(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }
#else
void shoal_thread_set_name(const char *name) { (void)name; }
#endif

#if defined(__linux__)
int shoal_open_direct_write(const char *path) { return open(path, O_WRONLY | O_DIRECT | O_CLOEXEC); }
#else
int shoal_open_direct_write(const char *path) {
    (void)path;
    errno = ENOTSUP;
    return -1;
}
#endif
