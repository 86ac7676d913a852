#ifndef HEARTH_CTHREADNAME_SHIM_H
#define HEARTH_CTHREADNAME_SHIM_H
/* Naming threads (libc's pthread_setname_np, which Swift's Glibc module does not declare: it needs
   _GNU_SOURCE). Names show in top -H, ps -L, perf and gdb; Linux takes at most 15 bytes. */
#include <pthread.h>
#ifdef __linux__
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline int hearth_set_thread_name(pthread_t thread, const char *name) { return pthread_setname_np(thread, name); }
#else
static inline int hearth_set_thread_name(pthread_t thread, const char *name) { (void)thread; (void)name; return 0; }
#endif
#endif
