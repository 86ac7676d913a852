#ifndef HEARTH_CMALLOC_SHIM_H
#define HEARTH_CMALLOC_SHIM_H
/* hearthd's allocator: jemalloc (Debian libjemalloc-dev), linked into the daemon so that it serves every
   malloc and free of the process, the Swift runtime's included. Only this module names it. */
#include <stddef.h>
#include <stdint.h>
#include <jemalloc/jemalloc.h>

/* jemalloc's version string, or NULL if jemalloc does not answer (it is not the process's allocator). */
static inline const char *hearth_allocator_version(void) {
    const char *version = NULL;
    size_t length = sizeof version;
    return mallctl("version", &version, &length, NULL, 0) == 0 ? version : NULL;
}

/* Bytes the calling thread has allocated so far, as jemalloc counts them (0 if it does not answer). */
static inline uint64_t hearth_thread_allocated_bytes(void) {
    uint64_t bytes = 0;
    size_t length = sizeof bytes;
    return mallctl("thread.allocated", &bytes, &length, NULL, 0) == 0 ? bytes : 0;
}

/* 1 when the process's malloc is jemalloc's: a block taken with plain malloc shows in jemalloc's count of
   the thread's allocations (a library loaded but not serving malloc, e.g. under another LD_PRELOADed
   allocator, answers mallctl and counts nothing). */
static inline int hearth_allocator_serves_malloc(void) {
    uint64_t before = hearth_thread_allocated_bytes();
    void *volatile block = malloc(4096);   /* volatile: the pair must not be optimised away */
    uint64_t after = hearth_thread_allocated_bytes();
    free(block);
    return after >= before + 4096;
}
#endif
