/* The fuzz targets' input stream (input.h). */
#include "input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint8_t fuzz_u8(fuzz_input *in)
{
    return in->pos < in->size ? in->data[in->pos++] : 0;
}

uint32_t fuzz_u32(fuzz_input *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)fuzz_u8(in) << (8 * i);
    return v;
}

uint64_t fuzz_u64(fuzz_input *in)
{
    const uint64_t low = fuzz_u32(in);
    return low | (uint64_t)fuzz_u32(in) << 32;
}

int fuzz_choice(fuzz_input *in, int n)
{
    return n > 1 ? fuzz_u8(in) % n : 0;
}

int32_t fuzz_i32_from(fuzz_input *in, const int32_t *values, int n)
{
    const int k = fuzz_choice(in, n + 1);
    return k < n ? values[k] : (int32_t)fuzz_u32(in);
}

int64_t fuzz_i64_from(fuzz_input *in, const int64_t *values, int n)
{
    const int k = fuzz_choice(in, n + 1);
    return k < n ? values[k] : (int64_t)fuzz_u64(in);
}

float fuzz_float_from(fuzz_input *in, const float *values, int n)
{
    const int k = fuzz_choice(in, n + 1);
    if (k < n)
        return values[k];
    const uint32_t bits = fuzz_u32(in);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

int64_t fuzz_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FUZZ PROPERTY FAILED: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}
