#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>

#include "CFileSystem.h"

int haul_open_direct(const char *path) {
#ifdef O_DIRECT
  return open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
#else
  errno = ENOTSUP;
  return -1;
#endif
}
