/* Scalar conversions: BF16, FP8 E4M3 (OCP e4m3fn) and UE8M0, checked against hand-derived
 * values and against brute-force nearest-value oracles on fresh random inputs. */
#include <math.h>
#include <string.h>

#include "testutil.h"

#define RANDOM_CASES 200000

static float float_from_bits(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static uint32_t bits_of_float(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* A random float over every exponent (no NaN), or one in [2^lo, 2^hi) when lo < hi. */
static float random_float(smla_rng *rng, int lo, int hi)
{
    if (lo >= hi) {
        float value;
        do
            value = float_from_bits((uint32_t)smla_rng_next(rng));
        while (isnan(value));
        return value;
    }
    const float sign = (smla_rng_next(rng) & 1) ? -1.0f : 1.0f;
    return sign * ldexpf((float)(1.0 + smla_rng_uniform(rng)), (int)smla_rng_range(rng, lo, hi - 1));
}

/* ---------------------------------------------------------------- E4M3 */

/* The nearest finite E4M3 code to value, ties to the even code: the oracle. */
static uint8_t e4m3_nearest(float value)
{
    const double magnitude = fabs((double)value);
    int best = 0;
    double best_distance = INFINITY;
    for (int code = 0; code <= 0x7E; code++) {
        const double distance = fabs((double)smla_e4m3_to_float((uint8_t)code) - magnitude);
        if (distance < best_distance || (distance == best_distance && (code & 1) == 0)) {
            best = code;
            best_distance = distance;
        }
    }
    return (uint8_t)((signbit(value) ? 0x80 : 0) | best);
}

static void test_e4m3_hand_values(void)
{
    static const struct {
        uint8_t bits;
        float value;
    } cases[] = {
        {0x00, 0.0f},           {0x01, 0x1p-9f},     {0x07, 7 * 0x1p-9f},
        {0x08, 0x1p-6f},        {0x30, 0.5f},        {0x38, 1.0f},
        {0x39, 1.125f},         {0x3C, 1.5f},        {0x40, 2.0f},
        {0x4B, 5.5f},           {0x77, 240.0f},      {0x7E, 448.0f},
        {0xB8, -1.0f},          {0xC4, -3.0f},       {0xFE, -448.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(smla_e4m3_to_float(cases[i].bits) == cases[i].value);
        CHECK(smla_float_to_e4m3(cases[i].value) == cases[i].bits);
    }
    CHECK(signbit(smla_e4m3_to_float(0x80)) && smla_e4m3_to_float(0x80) == 0.0f);
    CHECK(isnan(smla_e4m3_to_float(0x7F)));
    CHECK(isnan(smla_e4m3_to_float(0xFF)));
}

static void test_e4m3_every_byte(void)
{
    for (int bits = 0; bits < 256; bits++) {
        const float value = smla_e4m3_to_float((uint8_t)bits);
        const int is_nan_code = (bits & 0x7F) == 0x7F;
        CHECK(isnan(value) == is_nan_code);
        /* The format's definition: (8 + m) 2^(e - 10), or m 2^-9 for e = 0. */
        const int e = (bits >> 3) & 0xF, m = bits & 7;
        const double magnitude = e ? ldexp(8 + m, e - 10) : ldexp(m, -9);
        if (!is_nan_code && (double)value != ((bits & 0x80) ? -magnitude : magnitude)) {
            fprintf(stderr, "E4M3 0x%02X decodes to %g, not %g\n", bits, (double)value, magnitude);
            smla_test_failures++;
        }
        if (!is_nan_code && smla_float_to_e4m3(value) != bits) {
            fprintf(stderr, "E4M3 0x%02X decodes to %g, re-encodes to 0x%02X\n", bits,
                    (double)value, smla_float_to_e4m3(value));
            smla_test_failures++;
        }
        if (bits < 0x7E) /* the positive codes are strictly increasing */
            CHECK(smla_e4m3_to_float((uint8_t)(bits + 1)) > value);
    }
}

static void test_e4m3_ties_and_saturation(void)
{
    /* Every midpoint between neighbouring codes goes to the even code. */
    for (int code = 0; code < 0x7E; code++) {
        const float lo = smla_e4m3_to_float((uint8_t)code);
        const float hi = smla_e4m3_to_float((uint8_t)(code + 1));
        const float mid = (lo + hi) / 2; /* exact in float */
        const int even = (code & 1) ? code + 1 : code;
        CHECK(smla_float_to_e4m3(mid) == even);
        CHECK(smla_float_to_e4m3(-mid) == (0x80 | even));
        CHECK(smla_float_to_e4m3(nextafterf(mid, 0.0f)) == code);
        CHECK(smla_float_to_e4m3(nextafterf(mid, INFINITY)) == code + 1);
    }
    CHECK(smla_float_to_e4m3(0x1p-10f) == 0x00);  /* half the smallest subnormal: tie */
    CHECK(smla_float_to_e4m3(-0x1p-10f) == 0x80);
    CHECK(smla_float_to_e4m3(1e-30f) == 0x00);
    const float saturating[] = {448.0f, 449.0f, 464.0f, 480.0f, 1e30f, INFINITY};
    for (size_t i = 0; i < sizeof saturating / sizeof saturating[0]; i++) {
        CHECK(smla_float_to_e4m3(saturating[i]) == 0x7E);
        CHECK(smla_float_to_e4m3(-saturating[i]) == 0xFE);
    }
    CHECK(smla_float_to_e4m3(NAN) == 0x7F);
    CHECK(smla_float_to_e4m3(-NAN) == 0x7F);
}

static void test_e4m3_random(smla_rng *rng)
{
    for (int i = 0; i < RANDOM_CASES; i++) {
        const float value = (i & 1) ? random_float(rng, 0, 0) : random_float(rng, -12, 10);
        const uint8_t got = smla_float_to_e4m3(value);
        const uint8_t want = e4m3_nearest(value);
        if (got != want) {
            fprintf(stderr, "E4M3 of %a: got 0x%02X, nearest-even is 0x%02X\n", (double)value,
                    got, want);
            smla_test_failures++;
        }
        /* In the normal range the relative error is at most half a mantissa step. */
        const float magnitude = fabsf(value);
        if (magnitude >= 0x1p-6f && magnitude <= 448.0f)
            CHECK(fabsf(smla_e4m3_to_float(got) - value) <= 0x1p-4f * magnitude);
    }
}

/* ---------------------------------------------------------------- BF16 */

/* The nearest BF16 to a finite value, ties to even (inf counts as 2^128): the oracle. */
static uint16_t bf16_nearest(float value)
{
    const uint16_t below = (uint16_t)(bits_of_float(value) >> 16); /* towards zero */
    const uint16_t above = (uint16_t)(below + 1);
    const double magnitude = fabs((double)value);
    const double lo = fabs((double)smla_bf16_to_float(below));
    const double hi = (above & 0x7FFF) == 0x7F80 ? 0x1p128 : fabs((double)smla_bf16_to_float(above));
    if (magnitude == lo)
        return below;
    if (magnitude - lo < hi - magnitude)
        return below;
    if (magnitude - lo > hi - magnitude)
        return above;
    return (below & 1) ? above : below;
}

static void test_bf16_hand_values(void)
{
    CHECK(smla_float_to_bf16(1.0f) == 0x3F80);
    CHECK(smla_float_to_bf16(-2.0f) == 0xC000);
    CHECK(smla_float_to_bf16(3.140625f) == 0x4049);
    CHECK(smla_bf16_to_float(0x4049) == 3.140625f);
    CHECK(smla_bf16_to_float(0x3E80) == 0.25f);
    CHECK(smla_float_to_bf16(1.0f + 0x1p-8f) == 0x3F80);        /* tie, down to even */
    CHECK(smla_float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82);    /* tie, up to even */
    CHECK(smla_float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3F81);
    CHECK(smla_float_to_bf16(INFINITY) == 0x7F80);
    CHECK(smla_float_to_bf16(-INFINITY) == 0xFF80);
    CHECK(smla_float_to_bf16(3.4028235e38f) == 0x7F80); /* rounds past the largest BF16 */
    CHECK(smla_float_to_bf16(-0.0f) == 0x8000);
    /* NaNs stay NaN and become quiet, even a signalling NaN whose payload is all low bits. */
    const uint32_t nans[] = {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        const uint16_t bits = smla_float_to_bf16(float_from_bits(nans[i]));
        CHECK(isnan(smla_bf16_to_float(bits)));
        CHECK(bits & 0x0040);
        CHECK((bits & 0x8000) == ((nans[i] >> 16) & 0x8000));
    }
}

static void test_bf16_random(smla_rng *rng)
{
    for (int i = 0; i < RANDOM_CASES; i++) {
        /* Every BF16 that is not NaN converts to float and back exactly. */
        const uint16_t bits = (uint16_t)smla_rng_next(rng);
        if (!isnan(smla_bf16_to_float(bits)))
            CHECK(smla_float_to_bf16(smla_bf16_to_float(bits)) == bits);

        const float value = random_float(rng, 0, 0);
        const uint16_t got = smla_float_to_bf16(value);
        if (!isinf(value) && got != bf16_nearest(value)) {
            fprintf(stderr, "BF16 of %a: got 0x%04X, nearest-even is 0x%04X\n", (double)value,
                    got, bf16_nearest(value));
            smla_test_failures++;
        }
        const float normal = random_float(rng, -100, 100);
        CHECK(fabsf(smla_bf16_to_float(smla_float_to_bf16(normal)) - normal) <=
              0x1p-8f * fabsf(normal));
    }
}

/* ---------------------------------------------------------------- UE8M0 */

static void test_ue8m0(void)
{
    CHECK(smla_ue8m0_to_float(127) == 1.0f);
    CHECK(smla_ue8m0_to_float(128) == 2.0f);
    CHECK(smla_ue8m0_to_float(120) == 0x1p-7f);
    CHECK(smla_ue8m0_to_float(0) == 0x1p-127f);
    CHECK(smla_ue8m0_to_float(254) == 0x1p127f);
    CHECK(isnan(smla_ue8m0_to_float(255)));
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_conversions"));
    test_e4m3_hand_values();
    test_e4m3_every_byte();
    test_e4m3_ties_and_saturation();
    test_e4m3_random(&rng);
    test_bf16_hand_values();
    test_bf16_random(&rng);
    test_ue8m0();
    return smla_test_finish("test_conversions");
}
