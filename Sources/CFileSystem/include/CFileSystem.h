// File-system calls that Swift's Glibc module does not export.
#ifndef HAUL_CFILESYSTEM_H
#define HAUL_CFILESYSTEM_H
#ifdef __linux__
// Extended attributes: Haul records a finished file's validators in one, to recognise it on a rerun.
#include <sys/xattr.h>
#endif

/// Opens `path` (which must exist) for reading and writing with direct I/O, bypassing the page cache:
/// O_DIRECT needs _GNU_SOURCE, which Swift's Glibc import does not define. Returns -1 with
/// errno set where the file system or platform has no direct I/O.
int haul_open_direct(const char *path);

/// The alignment direct I/O needs for memory, file offsets and lengths: 4096 covers the
/// logical block size of common disks and file systems (a stricter one fails with EINVAL,
/// and Haul then writes through the page cache).
#define HAUL_DIRECT_ALIGNMENT 4096
#endif
