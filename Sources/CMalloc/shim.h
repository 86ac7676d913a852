#ifndef HEARTH_CMALLOC_SHIM_H
#define HEARTH_CMALLOC_SHIM_H
/* hearthd's allocator: jemalloc (Debian libjemalloc-dev), linked into the daemon so that it serves every
   malloc and free of the process, the Swift runtime's included. Only this module names it. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jemalloc/jemalloc.h>

/* jemalloc's version string, or NULL if it does not answer. It answers whenever it is loaded, even when
   another allocator preloaded ahead of it serves malloc: see hearth_allocator_serves_malloc. */
static inline const char *hearth_allocator_version(void) {
    const char *version = NULL;
    size_t length = sizeof version;
    return mallctl("version", &version, &length, NULL, 0) == 0 ? version : NULL;
}

/* Bytes the calling thread has allocated so far, as jemalloc's statistics count them; false when the build
   keeps no statistics (Debian's does). */
static inline bool hearth_thread_allocated_bytes(uint64_t *bytes) {
    size_t length = sizeof *bytes;
    return mallctl("thread.allocated", bytes, &length, NULL, 0) == 0;
}

/* 1 when the process's malloc is jemalloc's: a block taken with plain malloc shows in jemalloc's count of
   the thread's allocations (a library loaded but not serving malloc, e.g. under another LD_PRELOADed
   allocator, counts nothing); 0 when it is not; -1 when jemalloc keeps no statistics to tell. */
static inline int hearth_allocator_serves_malloc(void) {
    uint64_t before = 0, after = 0;
    if (!hearth_thread_allocated_bytes(&before)) return -1;
    void *volatile block = malloc(4096);   /* volatile: the pair must not be optimised away */
    bool counted = hearth_thread_allocated_bytes(&after);
    free(block);
    return counted && after >= before + 4096 ? 1 : 0;
}

/* Turns on jemalloc's background threads, which hand freed pages back to the kernel as they age (its
   dirty_decay_ms) even while the daemon is idle; without them, pages are purged only as an arena keeps
   allocating. jemalloc's manual recommends this run-time switch over the option in MALLOC_CONF. 0 when on,
   else the error mallctl returned. */
static inline int hearth_allocator_start_background_threads(void) {
    bool on = true;
    return mallctl("background_thread", NULL, NULL, &on, sizeof on);
}
#endif
