#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "CFileSystem.h"

int haul_open_direct(const char *path) {
#ifdef O_DIRECT
  return open(path, O_RDWR | O_DIRECT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
#else
  errno = ENOTSUP;
  return -1;
#endif
}

int haul_open_unnamed(const char *directory, mode_t mode) {
#ifdef O_TMPFILE
  return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
#else
  (void)directory;
  (void)mode;
  errno = ENOTSUP;
  return -1;
#endif
}

int haul_link_unnamed(int fd, const char *path) {
#ifdef O_TMPFILE
  char source[64];
  snprintf(source, sizeof source, "/proc/self/fd/%d", fd);
  return linkat(AT_FDCWD, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
#else
  (void)fd;
  (void)path;
  errno = ENOTSUP;
  return -1;
#endif
}
