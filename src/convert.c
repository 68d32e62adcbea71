/* Scalar conversions between float and the KV-cache element types: BF16, FP8 E4M3 (OCP
 * e4m3fn: bias 7, no infinities, 0x7F / 0xFF are NaN, max finite 448) and UE8M0.
 * Rounding is done on exact integers, so it is round-to-nearest-even whatever the
 * floating-point environment's rounding mode. */
#include <math.h>
#include <string.h>

#include "internal.h"

#define E4M3_MAX 448.0f
#define E4M3_NAN 0x7F
#define E4M3_MIN_NORMAL_EXP (-6)
#define E4M3_MANTISSA_BITS 3

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

float smla_e4m3_to_float(uint8_t bits)
{
    const int exponent = (bits >> E4M3_MANTISSA_BITS) & 0xF;
    const int mantissa = bits & 0x7;
    float magnitude;
    if (exponent == 0xF && mantissa == 0x7)
        return NAN;
    if (exponent == 0)
        magnitude = ldexpf((float)mantissa, E4M3_MIN_NORMAL_EXP - E4M3_MANTISSA_BITS);
    else
        magnitude = ldexpf((float)(8 + mantissa), exponent - 7 - E4M3_MANTISSA_BITS);
    return (bits & 0x80) ? -magnitude : magnitude;
}

/* Rounds a non-negative float that is exactly (integer + fraction) to the nearest
 * integer, ties to even. */
static int round_half_even(float x)
{
    const float whole = floorf(x);
    const float fraction = x - whole; /* exact: x < 2^24 here */
    int n = (int)whole;
    if (fraction > 0.5f || (fraction == 0.5f && (n & 1)))
        n++;
    return n;
}

uint8_t smla_float_to_e4m3(float value)
{
    if (isnan(value))
        return E4M3_NAN;
    const uint8_t sign = signbit(value) ? 0x80 : 0x00;
    const float magnitude = fabsf(value);
    if (magnitude >= E4M3_MAX) /* saturate, infinities included */
        return (uint8_t)(sign | 0x7E);
    /* The code of a non-negative E4M3 value grows by one per representable step, so the
     * rounded code is the rounded position of the value on that grid (a mantissa carry
     * moves into the exponent field by itself). */
    int code;
    int exponent;
    frexpf(magnitude, &exponent);
    exponent -= 1; /* magnitude = 1.f * 2^exponent */
    if (magnitude == 0.0f || exponent < E4M3_MIN_NORMAL_EXP) {
        code = round_half_even(ldexpf(magnitude, E4M3_MANTISSA_BITS - E4M3_MIN_NORMAL_EXP));
    } else {
        const float steps = ldexpf(magnitude, E4M3_MANTISSA_BITS - exponent) - 8.0f;
        code = ((exponent + 7) << E4M3_MANTISSA_BITS) + round_half_even(steps);
    }
    return (uint8_t)(sign | code);
}

float smla_ue8m0_to_float(uint8_t bits)
{
    if (bits == 0xFF)
        return NAN;
    return ldexpf(1.0f, (int)bits - 127);
}
