#ifndef CTESTSUPPORT_H
#define CTESTSUPPORT_H

// 1 when this process was built with AddressSanitizer, else 0.
int ctestsupport_address_sanitizer(void);

// posix_spawn of `path` with stdin/stdout/stderr from `input`/`output`/`error`, every other
// descriptor closed (posix_spawn_file_actions_addclosefrom_np), an empty signal mask and default
// handlers, in `directory` when not NULL, in a new session when `new_session` is not 0. Returns 0
// and sets `*pid`, or an errno value. Tests spawn through this instead of Foundation's Process,
// whose end-of-child detection leaked into grandchildren (see Subprocess.swift).
int ctestsupport_spawn(int *pid, const char *path, char *const argv[], char *const envp[],
                       const char *directory, int input, int output, int error, int new_session);

// pipe2(ends, O_CLOEXEC), which Swift's Glibc module does not declare: both ends stay out of
// every child but the one they are given to.
int ctestsupport_pipe(int ends[2]);

#endif
