/* KV-cache formats: names and sizes, the fp8_ds_mla byte layout against a hand-built
 * block, slot addressing with padded block strides, pack/unpack round-trip bounds, the
 * quantiser's scale choice and its edge cases, and every error status. */
#include <math.h>
#include <string.h>

#include "kv_format.h"
#include "testutil.h"

#define D SMLA_HEAD_DIM
#define TILES (SMLA_DS_MLA_NOPE / SMLA_DS_MLA_TILE)
#define SENTINEL 0xA5

static const smla_kv_format all_formats[] = {SMLA_KV_BF16, SMLA_KV_FP8, SMLA_KV_FP8_DS_MLA};
#define NUM_FORMATS (sizeof all_formats / sizeof all_formats[0])

static int same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

/* ---------------------------------------------------------------- names and sizes */

static void test_names_and_sizes(void)
{
    static const char *names[] = {"bf16", "fp8", "fp8_ds_mla"};
    static const size_t token_bytes[] = {1024, 512, 584};
    for (size_t i = 0; i < NUM_FORMATS; i++) {
        CHECK(strcmp(smla_kv_format_name(all_formats[i]), names[i]) == 0);
        CHECK(smla_kv_format_parse(names[i]) == all_formats[i]);
        CHECK(smla_kv_token_bytes(all_formats[i]) == token_bytes[i]);
    }
    CHECK(smla_kv_format_parse("FP8") == SMLA_KV_INVALID);
    CHECK(smla_kv_format_parse("fp8_ds") == SMLA_KV_INVALID);
    CHECK(smla_kv_format_parse("") == SMLA_KV_INVALID);
    CHECK(smla_kv_format_parse(NULL) == SMLA_KV_INVALID);
    CHECK(smla_kv_format_name(SMLA_KV_INVALID) != NULL);
    CHECK(smla_kv_token_bytes(SMLA_KV_INVALID) == 0);
    CHECK(smla_kv_token_bytes((smla_kv_format)99) == 0);

    CHECK(smla_kv_block_bytes(SMLA_KV_BF16, 64) == 65536);
    CHECK(smla_kv_block_bytes(SMLA_KV_FP8, 64) == 32768);
    CHECK(smla_kv_block_bytes(SMLA_KV_FP8, 1) == 512);
    /* fp8_ds_mla: 584 per token, rounded up to a multiple of 576. */
    CHECK(smla_kv_block_bytes(SMLA_KV_FP8_DS_MLA, 1) == 1152);     /* 584 -> 2 * 576 */
    CHECK(smla_kv_block_bytes(SMLA_KV_FP8_DS_MLA, 2) == 1728);     /* 1168 -> 3 * 576 */
    CHECK(smla_kv_block_bytes(SMLA_KV_FP8_DS_MLA, 64) == 37440);   /* 37376 -> 65 * 576 */
    CHECK(smla_kv_block_bytes(SMLA_KV_FP8_DS_MLA, 72) == 42048);   /* 42048 = 73 * 576 */
    CHECK(smla_kv_block_bytes(SMLA_KV_FP8_DS_MLA, 256) == 149760); /* 149504 -> 260 * 576 */
    for (size_t i = 0; i < NUM_FORMATS; i++) {
        CHECK(smla_kv_block_bytes(all_formats[i], 0) == 0);
        CHECK(smla_kv_block_bytes(all_formats[i], -3) == 0);
    }
    CHECK(smla_kv_block_bytes(SMLA_KV_INVALID, 64) == 0);

    smla_kv_pool pool = smla_kv_pool_make((void *)names, SMLA_KV_FP8_DS_MLA, 5, 64,
                                          SMLA_MEMORY_DEVICE);
    CHECK(pool.data == (void *)names && pool.format == SMLA_KV_FP8_DS_MLA);
    CHECK(pool.num_blocks == 5 && pool.block_size == 64 && pool.block_stride == 37440);
    CHECK(pool.memory == SMLA_MEMORY_DEVICE);
}

/* ---------------------------------------------------------------- hand-built block */

/* E4M3 bytes and their values, derived by hand: sign, 4-bit exponent (bias 7; 0 is
 * subnormal with step 2^-9), 3-bit mantissa. Each 64-value tile holds +-448, so the
 * quantiser picks exactly the scale that was written. */
static const struct {
    uint8_t bits;
    float value;
} hand_e4m3[16] = {
    {0x00, 0.0f},  {0x01, 0x1p-9f}, {0x07, 7 * 0x1p-9f}, {0x08, 0x1p-6f},
    {0x30, 0.5f},  {0x38, 1.0f},    {0x39, 1.125f},      {0x3C, 1.5f},
    {0x40, 2.0f},  {0x4B, 5.5f},    {0x77, 240.0f},      {0x7E, 448.0f},
    {0xB8, -1.0f}, {0xC4, -3.0f},   {0xFE, -448.0f},     {0x80, -0.0f},
};

/* BF16 bit patterns and values, by hand: 0x4049 = 2 * (1 + 73/128). */
static const struct {
    uint16_t bits;
    float value;
} hand_bf16[8] = {
    {0x3F80, 1.0f},     {0xC000, -2.0f}, {0x3FC0, 1.5f},  {0x4049, 3.140625f},
    {0x0000, 0.0f},     {0x3E80, 0.25f}, {0x8000, -0.0f}, {0x7F7F, 0x1.FEp127f},
};

/* Scale exponent of tile t of slot s in the hand-built block. */
static int hand_scale_exponent(int slot, int t)
{
    return slot == 0 ? t - 7 : 3 - 2 * t;
}

static void test_ds_mla_hand_built_block(void)
{
    enum { BLOCK_SIZE = 2, BLOCK_BYTES = 1728 }; /* 2 * 584 = 1168 -> 3 * 576 */
    uint8_t block[BLOCK_BYTES];
    float want[BLOCK_SIZE][D];
    memset(block, SENTINEL, sizeof block);
    for (int slot = 0; slot < BLOCK_SIZE; slot++) {
        uint8_t *data = block + slot * 576;
        uint8_t *scales = block + BLOCK_SIZE * 576 + slot * 8;
        for (int t = 0; t < TILES; t++)
            scales[t] = (uint8_t)(127 + hand_scale_exponent(slot, t));
        scales[7] = 0;
        for (int d = 0; d < SMLA_DS_MLA_NOPE; d++) {
            const int k = (d + 5 * slot) % 16;
            data[d] = hand_e4m3[k].bits;
            want[slot][d] = ldexpf(hand_e4m3[k].value, hand_scale_exponent(slot, d / 64));
        }
        for (int i = 0; i < SMLA_DS_MLA_ROPE; i++) {
            const int k = (i + 3 * slot) % 8;
            data[448 + 2 * i] = (uint8_t)(hand_bf16[k].bits & 0xFF); /* little-endian */
            data[448 + 2 * i + 1] = (uint8_t)(hand_bf16[k].bits >> 8);
            want[slot][448 + i] = hand_bf16[k].value;
        }
    }
    smla_kv_pool pool = smla_kv_pool_make(block, SMLA_KV_FP8_DS_MLA, 1, BLOCK_SIZE,
                                          SMLA_MEMORY_HOST);
    CHECK(pool.block_stride == BLOCK_BYTES);
    CHECK(smla_kv_slot_data(&pool, 1) == 576);
    CHECK(smla_kv_slot_scales(&pool, 0) == 1152);
    CHECK(smla_kv_slot_scales(&pool, 1) == 1160);

    float got[BLOCK_SIZE][D];
    for (int slot = 0; slot < BLOCK_SIZE; slot++) {
        CHECK_STATUS(smla_kv_unpack_slot(&pool, slot, got[slot]), SMLA_OK);
        CHECK(same_bits(got[slot], want[slot], D));
    }
    float all[BLOCK_SIZE * D];
    CHECK_STATUS(smla_kv_unpack(&pool, all), SMLA_OK);
    CHECK(same_bits(all, &want[0][0], BLOCK_SIZE * D));

    /* Packing the derived values gives back exactly the hand-built bytes, pad byte and
     * the block's tail padding (left untouched) included. */
    uint8_t packed[BLOCK_BYTES];
    memset(packed, SENTINEL, sizeof packed);
    pool.data = packed;
    CHECK_STATUS(smla_kv_pack(&pool, &want[0][0]), SMLA_OK);
    CHECK(memcmp(packed, block, sizeof block) == 0);
    memset(packed, SENTINEL, sizeof packed);
    CHECK_STATUS(smla_kv_pack_slot(&pool, 1, want[1]), SMLA_OK);
    CHECK(memcmp(packed + 576, block + 576, 576) == 0);
    CHECK(memcmp(packed + 1160, block + 1160, 8) == 0);
    CHECK(packed[0] == SENTINEL && packed[575] == SENTINEL && packed[1152] == SENTINEL);
}

/* ---------------------------------------------------------------- addressing */

/* Random rows, values of varied magnitude per 64-value tile. */
static void random_rows(smla_rng *rng, float *rows, int64_t count)
{
    for (int64_t r = 0; r < count; r++)
        for (int t = 0; t < D / 64; t++) {
            const double magnitude = ldexp(1.0, (int)smla_rng_range(rng, -20, 20));
            for (int i = 0; i < 64; i++)
                rows[r * D + t * 64 + i] = (float)(magnitude * smla_rng_normal(rng));
        }
}

/* Packs every slot of a pool whose block stride is larger than natural, then checks each
 * slot's bytes sit at the offsets DESIGN section 3 gives (computed here independently),
 * equal to the same row packed alone, and that no other byte was written. */
static void test_slot_addressing(smla_rng *rng)
{
    static const int32_t block_sizes[] = {1, 3, 64};
    for (size_t f = 0; f < NUM_FORMATS; f++)
        for (size_t b = 0; b < sizeof block_sizes / sizeof block_sizes[0]; b++) {
            const smla_kv_format format = all_formats[f];
            const int32_t bs = block_sizes[b];
            const int64_t num_blocks = smla_rng_range(rng, 1, 4);
            const int64_t row_bytes = format == SMLA_KV_BF16 ? 1024 : format == SMLA_KV_FP8 ? 512 : 576;
            smla_kv_pool pool = smla_kv_pool_make(NULL, format, num_blocks, bs, SMLA_MEMORY_HOST);
            pool.block_stride += 16 * smla_rng_range(rng, 1, 40);
            const int64_t slots = num_blocks * bs;
            const size_t bytes = (size_t)(num_blocks * pool.block_stride);
            uint8_t *buffer = smla_test_alloc(bytes);
            uint8_t *covered = smla_test_zalloc(bytes);
            float *rows = smla_test_alloc((size_t)slots * D * sizeof *rows);
            float *back = smla_test_alloc((size_t)slots * D * sizeof *back);
            uint8_t alone[1152];
            memset(buffer, SENTINEL, bytes);
            random_rows(rng, rows, slots);
            pool.data = buffer;
            CHECK_STATUS(smla_kv_pack(&pool, rows), SMLA_OK);
            smla_kv_pool single = smla_kv_pool_make(alone, format, 1, 1, SMLA_MEMORY_HOST);
            for (int64_t s = 0; s < slots; s++) {
                const int64_t data_at = (s / bs) * pool.block_stride + (s % bs) * row_bytes;
                CHECK(smla_kv_slot_data(&pool, s) == data_at);
                CHECK_STATUS(smla_kv_pack_slot(&single, 0, rows + s * D), SMLA_OK);
                CHECK(memcmp(buffer + data_at, alone, (size_t)row_bytes) == 0);
                memset(covered + data_at, 1, (size_t)row_bytes);
                if (format == SMLA_KV_FP8_DS_MLA) {
                    const int64_t scale_at = (s / bs) * pool.block_stride + (int64_t)bs * 576 + (s % bs) * 8;
                    CHECK(smla_kv_slot_scales(&pool, s) == scale_at);
                    CHECK(memcmp(buffer + scale_at, alone + 576, 8) == 0);
                    memset(covered + scale_at, 1, 8);
                }
            }
            size_t stray = 0;
            for (size_t i = 0; i < bytes; i++)
                stray += !covered[i] && buffer[i] != SENTINEL;
            CHECK(stray == 0);
            CHECK_STATUS(smla_kv_unpack(&pool, back), SMLA_OK);
            for (int64_t s = 0; s < slots; s++) {
                float one[D];
                CHECK_STATUS(smla_kv_unpack_slot(&pool, s, one), SMLA_OK);
                CHECK(same_bits(one, back + s * D, D));
            }
            free(buffer);
            free(covered);
            free(rows);
            free(back);
        }
}

/* ---------------------------------------------------------------- round trips */

/* The scale exponent the quantiser must pick: the smallest k with 448 * 2^k >= amax,
 * found by stepping (no logarithm), clamped to [-127, 127]; 0 for amax 0. */
static int expected_scale_exponent(const float *tile)
{
    double amax = 0;
    for (int i = 0; i < 64; i++)
        if (isfinite(tile[i]) && fabs(tile[i]) > amax)
            amax = fabs(tile[i]);
    if (amax == 0)
        return 0;
    int k = -127;
    while (k < 127 && ldexp(448.0, k) < amax)
        k++;
    return k;
}

/* Packs rows into a one-slot pool of format, unpacks into back; returns the bytes. */
static void round_trip(smla_kv_format format, const float *row, float *back, uint8_t *bytes)
{
    smla_kv_pool pool = smla_kv_pool_make(bytes, format, 1, 1, SMLA_MEMORY_HOST);
    CHECK_STATUS(smla_kv_pack_slot(&pool, 0, row), SMLA_OK);
    CHECK_STATUS(smla_kv_unpack_slot(&pool, 0, back), SMLA_OK);
}

static void check_bf16_bound(float value, float got)
{
    if (!(fabsf(got - value) <= 0x1p-8f * fabsf(value))) {
        fprintf(stderr, "bf16 round trip of %a gave %a\n", (double)value, (double)got);
        smla_test_failures++;
    }
}

static void test_random_round_trips(smla_rng *rng)
{
    uint8_t bytes[1152];
    float row[D], back[D];
    for (int iter = 0; iter < 2000; iter++) {
        random_rows(rng, row, 1);

        round_trip(SMLA_KV_BF16, row, back, bytes);
        for (int d = 0; d < D; d++)
            check_bf16_bound(row[d], back[d]);

        /* fp8: a plain saturating conversion (the per-tensor scale is the caller's). */
        round_trip(SMLA_KV_FP8, row, back, bytes);
        for (int d = 0; d < D; d++) {
            const float magnitude = fabsf(row[d]);
            CHECK(bytes[d] == smla_float_to_e4m3(row[d]));
            if (magnitude >= 0x1p-6f && magnitude <= 448.0f)
                CHECK(fabsf(back[d] - row[d]) <= 0x1p-4f * magnitude);
            if (magnitude > 448.0f)
                CHECK(back[d] == copysignf(448.0f, row[d]));
        }

        round_trip(SMLA_KV_FP8_DS_MLA, row, back, bytes);
        for (int t = 0; t < TILES; t++) {
            const int k = expected_scale_exponent(row + 64 * t);
            CHECK(bytes[576 + t] == 127 + k);
            for (int i = 0; i < 64; i++) {
                const int d = 64 * t + i;
                const double error = fabs((double)back[d] - row[d]);
                const double magnitude = fabs((double)row[d]);
                if (magnitude >= ldexp(1.0, k - 6)) /* the tile's normal E4M3 range */
                    CHECK(error <= ldexp(magnitude, -4));
                else /* subnormal: half a 2^-9 step of the scaled value */
                    CHECK(error <= ldexp(1.0, k - 10));
            }
        }
        CHECK(bytes[583] == 0);
        for (int i = 0; i < SMLA_DS_MLA_ROPE; i++)
            check_bf16_bound(row[448 + i], back[448 + i]);
    }
}

/* Values the formats hold exactly come back bit for bit, and ds_mla re-packs to the
 * same bytes. Scales span the whole UE8M0 range that keeps 448 * 2^k a finite float. */
static void test_exact_round_trips(smla_rng *rng)
{
    uint8_t bytes[1152], repacked[1152];
    float row[D], back[D];
    for (int iter = 0; iter < 2000; iter++) {
        for (int d = 0; d < D; d++) {
            uint16_t bits;
            do
                bits = (uint16_t)smla_rng_next(rng);
            while (isnan(smla_bf16_to_float(bits)));
            row[d] = smla_bf16_to_float(bits);
        }
        round_trip(SMLA_KV_BF16, row, back, bytes);
        CHECK(same_bits(row, back, D));

        for (int d = 0; d < D; d++) {
            uint8_t bits;
            do
                bits = (uint8_t)smla_rng_next(rng);
            while ((bits & 0x7F) == 0x7F);
            row[d] = smla_e4m3_to_float(bits);
        }
        round_trip(SMLA_KV_FP8, row, back, bytes);
        CHECK(same_bits(row, back, D));

        /* ds_mla: tile t = E4M3 values times 2^k, with one value of the top binade
         * [256, 448] so that k is the scale the quantiser must choose. */
        uint8_t scales[TILES];
        for (int t = 0; t < TILES; t++) {
            const int k = (int)smla_rng_range(rng, -127, 119);
            scales[t] = (uint8_t)(127 + k);
            const int top = (int)smla_rng_range(rng, 0, 63);
            for (int i = 0; i < 64; i++)
                row[64 * t + i] = ldexpf(row[64 * t + i], k);
            const uint8_t sign = (smla_rng_next(rng) & 1) ? 0x80 : 0x00;
            const uint8_t top_bits = (uint8_t)(sign | 0x78 | smla_rng_range(rng, 0, 6));
            row[64 * t + top] = ldexpf(smla_e4m3_to_float(top_bits), k);
        }
        round_trip(SMLA_KV_FP8_DS_MLA, row, back, bytes);
        CHECK(same_bits(row, back, D));
        CHECK(memcmp(bytes + 576, scales, TILES) == 0);
        round_trip(SMLA_KV_FP8_DS_MLA, back, back, repacked);
        CHECK(memcmp(bytes, repacked, 584) == 0);
    }
}

/* ---------------------------------------------------------------- quantiser edges */

static void fill_tile(float *row, int t, float value)
{
    for (int i = 0; i < 64; i++)
        row[64 * t + i] = value;
}

static void test_ds_mla_scale_edges(void)
{
    uint8_t bytes[1152];
    float row[D], back[D];
    memset(row, 0, sizeof row);
    fill_tile(row, 0, 448.0f * 0x1p5f);                      /* exactly 448 * 2^5: 2^5 */
    fill_tile(row, 1, nextafterf(448.0f * 0x1p5f, INFINITY)); /* just above: 2^6 */
    fill_tile(row, 2, nextafterf(224.0f, 0.0f));             /* just under 448 / 2: 2^-1 */
    fill_tile(row, 3, 0x1p-140f);                            /* tiny: clamped to 2^-127 */
    row[64 * 4] = -1e30f;                                    /* one large value decides */
    row[64 * 4 + 1] = 1.0f;
    /* tile 5 stays zero: scale byte 127, every value 0 */
    fill_tile(row, 6, INFINITY);                             /* no finite value: scale 1 */
    row[64 * 6 + 1] = -INFINITY;
    row[64 * 6 + 2] = NAN;
    round_trip(SMLA_KV_FP8_DS_MLA, row, back, bytes);
    CHECK(bytes[576 + 0] == 127 + 5);
    CHECK(bytes[576 + 1] == 127 + 6);
    CHECK(bytes[576 + 2] == 127 - 1);
    CHECK(bytes[576 + 3] == 0);
    CHECK(bytes[576 + 4] == 127 + expected_scale_exponent(row + 64 * 4));
    CHECK(bytes[576 + 5] == 127);
    CHECK(bytes[576 + 6] == 127);
    CHECK(bytes[583] == 0);
    CHECK(back[0] == 448.0f * 0x1p5f && bytes[0] == 0x7E);
    CHECK(back[64] == 448.0f * 0x1p5f); /* 0.5 * 448 * (1 + 2^-23) rounds to 224 at 2^6 */
    CHECK(back[128] == 224.0f);         /* 448 * (1 - 2^-24) rounds to 448 at 2^-1 */
    CHECK(back[192] == 0.0f);           /* 2^-13 at scale 2^-127: under half a step */
    CHECK(fabsf(back[256] + 1e30f) <= 1e30f * 0x1p-4f);
    CHECK(back[257] == 0.0f);           /* 1.0 at scale 2^91 */
    CHECK(back[320] == 0.0f && back[383] == 0.0f);
    /* Non-finite values: +-inf saturates to +-448 * scale, NaN stays NaN. */
    CHECK(back[384] == 448.0f && back[385] == -448.0f && isnan(back[386]));
    /* A scale byte of 255 (UE8M0 NaN) decodes its tile to NaN, not a crash. */
    bytes[576 + 2] = 255;
    smla_kv_pool pool = smla_kv_pool_make(bytes, SMLA_KV_FP8_DS_MLA, 1, 1, SMLA_MEMORY_HOST);
    CHECK_STATUS(smla_kv_unpack_slot(&pool, 0, back), SMLA_OK);
    CHECK(isnan(back[128]) && !isnan(back[127]) && !isnan(back[192]));
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void)
{
    uint8_t bytes[2048];
    float row[2 * D];
    memset(row, 0, sizeof row);
    for (size_t f = 0; f < NUM_FORMATS; f++) {
        const smla_kv_pool good = smla_kv_pool_make(bytes, all_formats[f], 1, 1, SMLA_MEMORY_HOST);
        const char *reason = NULL;
        CHECK_STATUS(smla_kv_pool_check(&good, &reason), SMLA_OK);
        CHECK(reason == NULL);

        CHECK_STATUS(smla_kv_pack_slot(NULL, 0, row), SMLA_ERR_NULL_POINTER);
        CHECK_STATUS(smla_kv_unpack_slot(NULL, 0, row), SMLA_ERR_NULL_POINTER);
        CHECK_STATUS(smla_kv_pack(NULL, row), SMLA_ERR_NULL_POINTER);
        CHECK_STATUS(smla_kv_unpack(NULL, row), SMLA_ERR_NULL_POINTER);
        CHECK_STATUS(smla_kv_pack_slot(&good, 0, NULL), SMLA_ERR_NULL_POINTER);
        CHECK_STATUS(smla_kv_unpack_slot(&good, 0, NULL), SMLA_ERR_NULL_POINTER);
        CHECK_STATUS(smla_kv_pack(&good, NULL), SMLA_ERR_NULL_POINTER);
        CHECK_STATUS(smla_kv_unpack(&good, NULL), SMLA_ERR_NULL_POINTER);

        smla_kv_pool bad = good;
        bad.data = NULL;
        CHECK_STATUS(smla_kv_pack_slot(&bad, 0, row), SMLA_ERR_NULL_POINTER);
        CHECK_STATUS(smla_kv_unpack(&bad, row), SMLA_ERR_NULL_POINTER);

        bad = good;
        bad.memory = SMLA_MEMORY_DEVICE;
        CHECK_STATUS(smla_kv_pack_slot(&bad, 0, row), SMLA_ERR_MEMORY_SPACE);
        CHECK_STATUS(smla_kv_unpack_slot(&bad, 0, row), SMLA_ERR_MEMORY_SPACE);
        CHECK_STATUS(smla_kv_pack(&bad, row), SMLA_ERR_MEMORY_SPACE);
        CHECK_STATUS(smla_kv_unpack(&bad, row), SMLA_ERR_MEMORY_SPACE);

        /* Geometry: each bad field alone is a KV-format error, with a reason. */
        smla_kv_pool geometry[6];
        for (int i = 0; i < 6; i++)
            geometry[i] = good;
        geometry[0].block_size = 0;
        geometry[1].block_size = -4;
        geometry[2].num_blocks = -1;
        geometry[3].block_stride = good.block_stride - 1;
        geometry[4].num_blocks = INT64_MAX / 2; /* byte offsets would overflow */
        geometry[5].block_stride = 0;
        for (int i = 0; i < 6; i++) {
            reason = NULL;
            CHECK_STATUS(smla_kv_pool_check(&geometry[i], &reason), SMLA_ERR_KV_FORMAT);
            CHECK(reason != NULL && reason[0] != '\0');
            CHECK_STATUS(smla_kv_pack_slot(&geometry[i], 0, row), SMLA_ERR_KV_FORMAT);
            CHECK_STATUS(smla_kv_unpack_slot(&geometry[i], 0, row), SMLA_ERR_KV_FORMAT);
            CHECK_STATUS(smla_kv_pack(&geometry[i], row), SMLA_ERR_KV_FORMAT);
            CHECK_STATUS(smla_kv_unpack(&geometry[i], row), SMLA_ERR_KV_FORMAT);
        }

        /* Slots outside [0, num_blocks * block_size). */
        CHECK_STATUS(smla_kv_pack_slot(&good, -1, row), SMLA_ERR_VALUE);
        CHECK_STATUS(smla_kv_unpack_slot(&good, 1, row), SMLA_ERR_VALUE);
        CHECK_STATUS(smla_kv_unpack_slot(&good, INT64_MIN, row), SMLA_ERR_VALUE);
        CHECK_STATUS(smla_kv_pack_slot(&good, INT64_MAX, row), SMLA_ERR_VALUE);

        /* An empty pool is valid: pack and unpack touch nothing. */
        smla_kv_pool empty = good;
        empty.num_blocks = 0;
        CHECK_STATUS(smla_kv_pack(&empty, row), SMLA_OK);
        CHECK_STATUS(smla_kv_unpack(&empty, row), SMLA_OK);
        CHECK_STATUS(smla_kv_unpack_slot(&empty, 0, row), SMLA_ERR_VALUE);
    }
    const smla_kv_format invalid[] = {SMLA_KV_INVALID, (smla_kv_format)7, (smla_kv_format)-1};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        smla_kv_pool pool = smla_kv_pool_make(bytes, SMLA_KV_FP8, 1, 1, SMLA_MEMORY_HOST);
        pool.format = invalid[i];
        CHECK_STATUS(smla_kv_pool_check(&pool, NULL), SMLA_ERR_KV_FORMAT);
        CHECK_STATUS(smla_kv_pack_slot(&pool, 0, row), SMLA_ERR_KV_FORMAT);
        CHECK_STATUS(smla_kv_unpack_slot(&pool, 0, row), SMLA_ERR_KV_FORMAT);
        CHECK_STATUS(smla_kv_pack(&pool, row), SMLA_ERR_KV_FORMAT);
        CHECK_STATUS(smla_kv_unpack(&pool, row), SMLA_ERR_KV_FORMAT);
    }
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_formats"));
    test_names_and_sizes();
    test_ds_mla_hand_built_block();
    test_slot_addressing(&rng);
    test_random_round_trips(&rng);
    test_exact_round_trips(&rng);
    test_ds_mla_scale_edges();
    test_errors();
    return smla_test_finish("test_formats");
}
