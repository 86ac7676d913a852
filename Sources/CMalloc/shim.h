#ifndef HEARTH_CMALLOC_SHIM_H
#define HEARTH_CMALLOC_SHIM_H
/* glibc's malloc tuning (mallopt), which Swift's Glibc module does not declare: hearthd keeps freed memory
   in its threads' arenas rather than handing it back to the kernel after every burst (AllocatorTuning).
   Each returns 1 when the value was taken, 0 when glibc refused it, -1 where there is no glibc. */
#ifdef __linux__
#include <malloc.h>
#endif
#ifdef __GLIBC__
static inline int hearth_set_trim_threshold(int bytes) { return mallopt(M_TRIM_THRESHOLD, bytes); }
static inline int hearth_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
#else
static inline int hearth_set_trim_threshold(int bytes) { (void)bytes; return -1; }
static inline int hearth_set_mmap_threshold(int bytes) { (void)bytes; return -1; }
#endif
#endif
