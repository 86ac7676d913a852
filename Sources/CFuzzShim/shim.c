#include "fuzzshim.h"

// libFuzzer's entry point, weak: a plain build links without it (and then replays inputs instead).
extern int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*cb)(const uint8_t *, size_t)) __attribute__((weak));

int hearth_fuzz_linked(void) { return LLVMFuzzerRunDriver != 0; }

int hearth_fuzz_run(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t)) {
    return LLVMFuzzerRunDriver(argc, argv, callback);
}
