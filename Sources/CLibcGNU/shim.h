#ifndef HEARTH_CLIBCGNU_SHIM_H
#define HEARTH_CLIBCGNU_SHIM_H
/* libc's GNU extensions that Swift's Glibc module does not declare (they need _GNU_SOURCE).
   Naming threads (pthread_setname_np): names show in top -H, ps -L, perf and gdb; Linux takes at most 15 bytes. */
#include <pthread.h>
#ifdef __linux__
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline int hearth_set_thread_name(pthread_t thread, const char *name) { return pthread_setname_np(thread, name); }
#else
static inline int hearth_set_thread_name(pthread_t thread, const char *name) { (void)thread; (void)name; return 0; }
#endif

/* Writing a file's dirty pages back and waiting for them, without a flush of the disk's cache (Linux's
   sync_file_range, which Swift's Glibc module does not declare either). Elsewhere: fsync. Returns 0, or -1 with
   errno set. */
#if defined(__linux__)
#include <fcntl.h>
#include <sys/types.h>
#if defined(__GLIBC__)
extern int sync_file_range(int fd, __off64_t offset, __off64_t nbytes, unsigned int flags);
#else
extern int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
#endif
static inline int hearth_write_back(int fd) {
    return sync_file_range(fd, 0, 0, 1 /* WAIT_BEFORE */ | 2 /* WRITE */ | 4 /* WAIT_AFTER */);
}
#else
#include <unistd.h>
static inline int hearth_write_back(int fd) { return fsync(fd); }
#endif
#endif
