/* Scalar conversions between float and the KV-cache element types: BF16, FP8 E4M3 (OCP
 * e4m3fn: bias 7, no infinities, 0x7F / 0xFF are NaN, max finite 448) and UE8M0.
 * Rounding is done on exact integers, so it is round-to-nearest-even whatever the
 * floating-point environment's rounding mode. */
#include <math.h>
#include <string.h>

#include "internal.h"

#define E4M3_NAN 0x7F
#define E4M3_MIN_NORMAL_EXP (-6)
#define E4M3_MANTISSA_BITS 3
#define E4M3_BIAS 7

static uint32_t float_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

float smla_bf16_to_float(uint16_t bits)
{
    const uint32_t wide = (uint32_t)bits << 16;
    float value;
    memcpy(&value, &wide, sizeof value);
    return value;
}

uint16_t smla_float_to_bf16(float value)
{
    const uint32_t bits = float_bits(value);
    if (isnan(value))
        return (uint16_t)((bits >> 16) | 0x0040); /* keep sign and payload top, force quiet */
    const uint32_t lsb = (bits >> 16) & 1u;
    return (uint16_t)((bits + 0x7FFFu + lsb) >> 16); /* overflow carries into inf: RNE */
}

/* Normal codes become float bits directly (the exponent rebiased from 7 to 127, the
 * mantissa moved up); subnormals are mantissa x 2^-9, exact. (ldexpf here was a tenth of
 * the CPU reference's time over E4M3 rows.) */
float smla_e4m3_to_float(uint8_t bits)
{
    const uint32_t exponent = (bits >> E4M3_MANTISSA_BITS) & 0xF;
    const uint32_t mantissa = bits & 0x7;
    float magnitude;
    if (exponent == 0xF && mantissa == 0x7)
        return NAN;
    if (exponent == 0) {
        magnitude = (float)mantissa * 0x1p-9f; /* 2^(E4M3_MIN_NORMAL_EXP - E4M3_MANTISSA_BITS) */
    } else {
        const uint32_t wide = ((exponent + 127 - E4M3_BIAS) << 23) | (mantissa << (23 - E4M3_MANTISSA_BITS));
        memcpy(&magnitude, &wide, sizeof magnitude);
    }
    return (bits & 0x80) ? -magnitude : magnitude;
}

/* Float bits with the sign cleared: 448 (E4M3's largest finite), 2^-6 (its smallest
 * normal). */
#define F32_E4M3_MAX_BITS 0x43E00000u
#define F32_E4M3_MIN_NORMAL_BITS 0x3C800000u
#define F32_INF_BITS 0x7F800000u

/* The E4M3 code of a non-negative value grows by one per representable step, so the
 * rounded code is the value's rounded position on that grid; rounding is done on the
 * float's integer bits (ties to even), and a mantissa carry moves into the exponent field
 * by itself. Equal, code for code, to rounding the exact value (checked over every float
 * when this replaced a frexpf/ldexpf form, which took a fifth of `smla check`'s problem
 * generation). */
uint8_t smla_float_to_e4m3(float value)
{
    const uint32_t bits = float_bits(value);
    const uint8_t sign = (uint8_t)((bits >> 24) & 0x80);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > F32_INF_BITS)
        return E4M3_NAN;
    if (magnitude >= F32_E4M3_MAX_BITS) /* saturate, infinities included */
        return (uint8_t)(sign | 0x7E);
    if (magnitude >= F32_E4M3_MIN_NORMAL_BITS) {
        /* Normal: the float's top 3 mantissa bits, rounded on the other 20; the exponent
         * bias goes from 127 to 7. */
        const uint32_t rounded = (magnitude + 0x7FFFFu + ((magnitude >> 20) & 1u)) >> 20;
        return (uint8_t)(sign | (rounded - ((127u - E4M3_BIAS) << E4M3_MANTISSA_BITS)));
    }
    /* Subnormal E4M3 (steps of 2^-9): the code is value * 2^9 rounded, 0 below 2^-11. */
    const int exponent = (int)(magnitude >> 23) - 127;
    if (exponent < E4M3_MIN_NORMAL_EXP - 4)
        return sign;
    const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u; /* value = mantissa * 2^(exponent - 23) */
    const int shift = 14 - exponent; /* 21..24 */
    return (uint8_t)(sign | ((mantissa + (1u << (shift - 1)) - 1u + ((mantissa >> shift) & 1u)) >> shift));
}

float smla_ue8m0_to_float(uint8_t bits)
{
    if (bits == 0xFF)
        return NAN;
    return ldexpf(1.0f, (int)bits - 127);
}
