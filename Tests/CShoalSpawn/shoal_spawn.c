#define _GNU_SOURCE
#include "shoal_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

static int add_streams(posix_spawn_file_actions_t *actions, const int streams[3]) {
    for (int n = 0; n < 3; n++) {
        int rc = 0;
        if (streams[n] == SHOAL_SPAWN_NULL) {
            rc = posix_spawn_file_actions_addopen(actions, n, "/dev/null", n == 0 ? O_RDONLY : O_WRONLY, 0);
        } else if (streams[n] >= 0) {
            rc = posix_spawn_file_actions_adddup2(actions, streams[n], n);
        }
        if (rc != 0) return rc;
    }
    return posix_spawn_file_actions_addclosefrom_np(actions, 3);
}

static int set_attributes(posix_spawnattr_t *attributes) {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int rc = posix_spawnattr_setsigmask(attributes, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(attributes, &all);
    if (rc == 0) rc = posix_spawnattr_setpgroup(attributes, 0);
    if (rc == 0) rc = posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    return rc;
}

int shoal_spawn(pid_t *pid, const char *path, char *const argv[], const int streams[3]) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return rc;
    }
    rc = add_streams(&actions, streams);
    if (rc == 0) rc = set_attributes(&attributes);
    if (rc == 0) rc = posix_spawn(pid, path, &actions, &attributes, argv, environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}
