#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <unistd.h>

#include "CTestSupport.h"

int ctestsupport_spawn(int *pid, const char *path, char *const argv[], char *const envp[],
                       const char *directory, int input, int output, int error, int new_session) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  int result = posix_spawn_file_actions_init(&actions);
  if (result != 0) return result;
  result = posix_spawnattr_init(&attributes);
  if (result != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return result;
  }
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (new_session) flags |= POSIX_SPAWN_SETSID;
  if (result == 0) result = posix_spawnattr_setflags(&attributes, flags);
  // Test threads are libdispatch workers that block most signals; the child starts with none
  // blocked and every handler at its default, as a shell would start it.
  if (result == 0) result = posix_spawnattr_setsigmask(&attributes, &none);
  if (result == 0) result = posix_spawnattr_setsigdefault(&attributes, &all);
  if (result == 0) result = posix_spawn_file_actions_adddup2(&actions, input, 0);
  if (result == 0) result = posix_spawn_file_actions_adddup2(&actions, output, 1);
  if (result == 0) result = posix_spawn_file_actions_adddup2(&actions, error, 2);
  // Nothing else of the test process reaches the child, so no descriptor of another test (a
  // socket, a pipe another child's end is detected by) lives on in this child's descendants.
  if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (result == 0 && directory != NULL) result = posix_spawn_file_actions_addchdir_np(&actions, directory);
  if (result == 0) {
    pid_t child = 0;
    result = posix_spawn(&child, path, &actions, &attributes, argv, envp);
    if (result == 0) *pid = child;
  }
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  return result;
}

int ctestsupport_pipe(int ends[2]) { return pipe2(ends, O_CLOEXEC); }

int ctestsupport_address_sanitizer(void) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  return 1;
#endif
#endif
  return 0;
}
