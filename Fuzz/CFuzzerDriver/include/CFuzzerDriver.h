// libFuzzer's driver, which the fuzz targets' entry point starts when they are built for fuzzing (FuzzSupport's
// FuzzDriver): the same run libFuzzer's own `main` makes. Defined by libFuzzer (linked with `-sanitize=fuzzer`); a
// plain build never calls it.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*testOneInput)(const uint8_t *data, size_t size));

// Each fuzz target's function (its `@_cdecl("LLVMFuzzerTestOneInput")`), which the driver runs on every input.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
