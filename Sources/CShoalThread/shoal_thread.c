// CShoalThread: naming the calling thread (Linux; nothing elsewhere), the asset-lane mark,
// opening a file with O_DIRECT (Linux; ENOTSUP elsewhere), and the record-commit gate.
#if defined(__linux__)
#define _GNU_SOURCE
#include <sys/prctl.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
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

// Record commits under way in the process; waiters sleep on `commits_done`, broadcast when the
// count falls to zero. Paths that find the count zero never take the lock.
static atomic_long record_commits = 0;
static pthread_mutex_t commits_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t commits_done;
static pthread_once_t commits_once = PTHREAD_ONCE_INIT;
// The clock `commits_done` times out by: the monotonic one where it can (a wall-clock step then
// cannot stretch a wait), else the wall clock.
static clockid_t commits_clock = CLOCK_REALTIME;

static void commits_init(void) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
#if defined(__linux__)
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0) commits_clock = CLOCK_MONOTONIC;
#endif
    pthread_cond_init(&commits_done, &attr);
    pthread_condattr_destroy(&attr);
}

long shoal_record_commits(void) { return atomic_load_explicit(&record_commits, memory_order_acquire); }

void shoal_record_commit_begin(void) { atomic_fetch_add_explicit(&record_commits, 1, memory_order_acq_rel); }

void shoal_record_commit_end(void) {
    if (atomic_fetch_sub_explicit(&record_commits, 1, memory_order_acq_rel) != 1) return;
    pthread_once(&commits_once, commits_init);
    pthread_mutex_lock(&commits_lock);
    pthread_cond_broadcast(&commits_done);
    pthread_mutex_unlock(&commits_lock);
}

int shoal_wait_for_record_commits(long max_microseconds) {
    if (atomic_load_explicit(&record_commits, memory_order_acquire) <= 0 || max_microseconds <= 0) return 0;
    pthread_once(&commits_once, commits_init);
    struct timespec until;
    clock_gettime(commits_clock, &until);
    long long ns = (long long)until.tv_nsec + (long long)(max_microseconds % 1000000) * 1000;
    until.tv_sec += (time_t)(max_microseconds / 1000000) + (time_t)(ns / 1000000000);
    until.tv_nsec = (long)(ns % 1000000000);
    pthread_mutex_lock(&commits_lock);
    while (atomic_load_explicit(&record_commits, memory_order_acquire) > 0) {
        if (pthread_cond_timedwait(&commits_done, &commits_lock, &until) != 0) break;
    }
    pthread_mutex_unlock(&commits_lock);
    return 1;
}
