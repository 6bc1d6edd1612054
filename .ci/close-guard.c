// A preloaded close() that reports descriptors closed twice (close failing with EBADF) in the
// test process and in haul, with a backtrace, one file per process in $HAUL_CLOSE_GUARD_DIR.
// A second close of a number another thread has reused closes that thread's socket or file:
// the cause of flaky "Empty reply from server" failures once, and of data written to the wrong
// file in a long-running process. Other programs the tests start (bash, sshd, nginx …) close
// unknown descriptors on purpose and are not reported. Built and used by .ci/run.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int watched(void) {
  static int answer = -1;
  if (answer < 0) {
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    path[length > 0 ? length : 0] = 0;
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    answer = strcmp(name, "haul") == 0 || strcmp(name, "HaulPackageTests.xctest") == 0;
  }
  return answer;
}

int close(int descriptor) {
  static int (*real_close)(int);
  if (!real_close) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
  int result = real_close(descriptor);
  if (result != 0 && errno == EBADF && watched()) {
    int saved = errno;
    const char *directory = getenv("HAUL_CLOSE_GUARD_DIR");
    if (directory) {
      char name[PATH_MAX];
      snprintf(name, sizeof name, "%s/%d", directory, (int)getpid());
      int report = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (report >= 0) {
        dprintf(report, "close(%d) failed with EBADF: closed twice?\n", descriptor);
        void *frames[48];
        backtrace_symbols_fd(frames, backtrace(frames, 48), report);
        dprintf(report, "\n");
        real_close(report);
      }
    }
    errno = saved;
  }
  return result;
}
