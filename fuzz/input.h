/* The fuzz targets' view of libFuzzer's input: a stream of choices. Reading past the end
 * gives zeros, so every input decodes to some case and a short input to a simple one. */
#ifndef SMLA_FUZZ_INPUT_H
#define SMLA_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_input {
    const uint8_t *data;
    size_t size;
    size_t pos;
} fuzz_input;

uint8_t fuzz_u8(fuzz_input *in);
uint32_t fuzz_u32(fuzz_input *in);
uint64_t fuzz_u64(fuzz_input *in);
/* One of n >= 1 choices, 0 most often (a zero byte). */
int fuzz_choice(fuzz_input *in, int n);
/* One of the n values listed, or any raw value (one more choice than n). */
int32_t fuzz_i32_from(fuzz_input *in, const int32_t *values, int n);
int64_t fuzz_i64_from(fuzz_input *in, const int64_t *values, int n);
float fuzz_float_from(fuzz_input *in, const float *values, int n);

/* a + b wrapping around, as a caller's arithmetic bug would (no undefined behaviour). */
int64_t fuzz_add(int64_t a, int64_t b);

/* Stops the process with a message: a property the target checks does not hold. */
void fuzz_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

/* libFuzzer's entry point, defined by each target. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
