#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

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

void haul_copy_to_block(void *destination, const void *source, size_t count) {
#if defined(__x86_64__)
  // SSE2 is part of x86-64: no CPU check needed. Stores go 16 bytes at a time from the first
  // 16-byte boundary; the few bytes before it and after the last whole 64 go through memcpy.
  char *to = destination;
  const char *from = source;
  size_t head = (size_t)(-(uintptr_t)to & 15);
  if (head > count) head = count;
  memcpy(to, from, head);
  to += head;
  from += head;
  count -= head;
  while (count >= 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)from);
    __m128i b = _mm_loadu_si128((const __m128i *)(from + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(from + 32));
    __m128i d = _mm_loadu_si128((const __m128i *)(from + 48));
    _mm_stream_si128((__m128i *)to, a);
    _mm_stream_si128((__m128i *)(to + 16), b);
    _mm_stream_si128((__m128i *)(to + 32), c);
    _mm_stream_si128((__m128i *)(to + 48), d);
    to += 64;
    from += 64;
    count -= 64;
  }
  memcpy(to, from, count);
  // Streaming stores are weakly ordered: make them visible before the block is handed on.
  _mm_sfence();
#else
  memcpy(destination, source, count);
#endif
}
