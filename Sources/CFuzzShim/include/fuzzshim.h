#ifndef HEARTH_FUZZSHIM_H
#define HEARTH_FUZZSHIM_H
#include <stddef.h>
#include <stdint.h>

/// 1 when the binary was linked with libFuzzer (built with -sanitize=fuzzer), 0 otherwise.
int hearth_fuzz_linked(void);

/// Runs libFuzzer's driver with `callback` (only when `hearth_fuzz_linked()`).
int hearth_fuzz_run(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
