// CShoalThread: SCHED_IDLE and the idle I/O class for the calling thread (Linux); nothing elsewhere.
#include "shoal_thread.h"

// Whether this thread called shoal_thread_lower_priority (whatever it achieved).
static _Thread_local int shoal_thread_lowered = 0;

int shoal_thread_is_lowered(void) { return shoal_thread_lowered; }

#if defined(__linux__)
#define _GNU_SOURCE
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// From linux/ioprio.h (not every libc ships the header): class in the top 3 bits of 16.
#define SHOAL_IOPRIO_CLASS_IDLE 3
#define SHOAL_IOPRIO_CLASS_SHIFT 13
#define SHOAL_IOPRIO_WHO_PROCESS 1

int shoal_thread_lower_priority(void) {
    int done = 0;
    shoal_thread_lowered = 1;
    struct sched_param param = { .sched_priority = 0 };
    // 0 is the calling thread: Linux applies scheduling policies per thread.
    if (sched_setscheduler(0, SCHED_IDLE, &param) == 0) done |= 1;
#if defined(SYS_ioprio_set)
    if (syscall(SYS_ioprio_set, SHOAL_IOPRIO_WHO_PROCESS, 0, SHOAL_IOPRIO_CLASS_IDLE << SHOAL_IOPRIO_CLASS_SHIFT) == 0) done |= 2;
#endif
    return done;
}

void shoal_thread_set_name(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }
#else
void shoal_thread_set_name(const char *name) { (void)name; }
int shoal_thread_lower_priority(void) { shoal_thread_lowered = 1; return 0; }
#endif
