// File-system calls that Swift's Glibc module does not export.
#ifndef HAUL_CFILESYSTEM_H
#define HAUL_CFILESYSTEM_H
#include <sys/types.h>
#ifdef __linux__
// Extended attributes: Haul records a finished file's validators in one, to recognise it on a rerun.
#include <sys/xattr.h>
#endif

/// Opens `path` (which must exist, and must not be a symbolic link) for reading and writing with
/// direct I/O, bypassing the page cache: O_DIRECT needs _GNU_SOURCE, which Swift's Glibc import
/// does not define. Returns -1 with errno set where the file system or platform has no direct I/O.
int haul_open_direct(const char *path);

/// Creates an unnamed regular file in `directory` (Linux's O_TMPFILE, which needs _GNU_SOURCE):
/// it gets a name only when `haul_link_unnamed` gives it one, so a crash leaves nothing behind.
/// Returns -1 with errno set; EOPNOTSUPP, EISDIR or EINVAL mean the file system or kernel has no
/// unnamed files, ENOTSUP where the platform has none.
int haul_open_unnamed(const char *directory, mode_t mode);

/// Gives the unnamed file `fd` the name `path` (linkat through /proc/self/fd, which needs no
/// privilege); fails with EEXIST if anything is at `path`, never following a link there.
int haul_link_unnamed(int fd, const char *path);

/// Copies `count` bytes into memory that goes to the disk by direct I/O: on x86-64 the stores
/// bypass the cache (the bytes are not read again here, so fetching each destination line
/// first only costs memory bandwidth; measured on 1 GiB received: a third of memcpy's CPU);
/// elsewhere memcpy. Ordered before any later store, so the block can be handed to another thread.
void haul_copy_to_block(void *destination, const void *source, size_t count);

/// The alignment direct I/O needs for memory, file offsets and lengths: 4096 covers the
/// logical block size of common disks and file systems (a stricter one fails with EINVAL,
/// and Haul then writes through the page cache).
#define HAUL_DIRECT_ALIGNMENT 4096
#endif
