/* KV-cache formats (DESIGN section 3): names, sizes, pool geometry, and the reference
 * pack (float rows -> format) and unpack (format -> float rows) of host pools.
 *
 * fp8_ds_mla quantiser, per 64-value NoPE tile: scale = 2^k with k the smallest integer
 * such that 448 * 2^k >= amax (that is ceil(log2(amax / 448)), found exactly from the
 * binary exponent), clamped into the UE8M0 range [-127, 127]; values are stored as
 * e4m3(x / scale). Non-finite inputs: amax is taken over the finite values only (a tile
 * with none, or with amax 0, gets scale 1 = byte 127); NaN is stored as E4M3 NaN and
 * decodes to NaN; +-inf saturates to +-448 * scale. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "internal.h"
#include "kv_format.h"

#define UE8M0_BIAS 127
#define DS_MLA_TILES (SMLA_DS_MLA_NOPE / SMLA_DS_MLA_TILE)

const char *smla_kv_format_name(smla_kv_format format)
{
    switch (format) {
    case SMLA_KV_BF16: return "bf16";
    case SMLA_KV_FP8: return "fp8";
    case SMLA_KV_FP8_DS_MLA: return "fp8_ds_mla";
    case SMLA_KV_INVALID: break;
    }
    return "invalid";
}

smla_kv_format smla_kv_format_parse(const char *name)
{
    static const smla_kv_format formats[] = {SMLA_KV_BF16, SMLA_KV_FP8, SMLA_KV_FP8_DS_MLA};
    if (name == NULL)
        return SMLA_KV_INVALID;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(name, smla_kv_format_name(formats[i])) == 0)
            return formats[i];
    return SMLA_KV_INVALID;
}

size_t smla_kv_token_bytes(smla_kv_format format)
{
    if (format == SMLA_KV_FP8_DS_MLA)
        return SMLA_DS_MLA_DATA_BYTES + SMLA_DS_MLA_SCALE_BYTES;
    return (size_t)smla_kv_data_row_bytes(format);
}

int64_t smla_kv_block_bytes(smla_kv_format format, int32_t block_size)
{
    const int64_t token_bytes = (int64_t)smla_kv_token_bytes(format);
    if (token_bytes == 0 || block_size < 1)
        return 0;
    int64_t bytes = token_bytes * block_size;
    if (format == SMLA_KV_FP8_DS_MLA) /* padded like FlashMLA's MODEL1 layout */
        bytes = (bytes + SMLA_DS_MLA_DATA_BYTES - 1) / SMLA_DS_MLA_DATA_BYTES *
                SMLA_DS_MLA_DATA_BYTES;
    return bytes;
}

smla_kv_pool smla_kv_pool_make(void *data, smla_kv_format format, int64_t num_blocks,
                               int32_t block_size, smla_memory memory)
{
    smla_kv_pool pool;
    memset(&pool, 0, sizeof pool);
    pool.data = data;
    pool.format = format;
    pool.num_blocks = num_blocks;
    pool.block_size = block_size;
    pool.block_stride = smla_kv_block_bytes(format, block_size);
    pool.memory = memory;
    return pool;
}

smla_status smla_kv_pool_check(const smla_kv_pool *pool, const char **reason)
{
    const char *why = NULL;
    const int64_t block_bytes = smla_kv_block_bytes(pool->format, pool->block_size);
    if (smla_kv_token_bytes(pool->format) == 0)
        why = "unknown KV format";
    else if (pool->block_size < 1)
        why = "block_size must be at least 1";
    else if (pool->num_blocks < 0)
        why = "num_blocks must not be negative";
    else if (pool->block_stride < block_bytes)
        why = "block_stride is smaller than the format's block bytes";
    else if (pool->num_blocks > INT64_MAX / pool->block_stride)
        why = "num_blocks * block_stride overflows a 64-bit byte offset";
    if (reason != NULL)
        *reason = why;
    return why == NULL ? SMLA_OK : SMLA_ERR_KV_FORMAT;
}

/* NULL pointers, memory space and geometry of a host pool for pack / unpack. */
static smla_status check_host_pool(const smla_kv_pool *pool, const float *rows)
{
    if (pool == NULL || pool->data == NULL || rows == NULL)
        return SMLA_ERR_NULL_POINTER;
    if (pool->memory != SMLA_MEMORY_HOST)
        return SMLA_ERR_MEMORY_SPACE;
    return smla_kv_pool_check(pool, NULL);
}

static smla_status check_slot(const smla_kv_pool *pool, int64_t slot, const float *row)
{
    const smla_status status = check_host_pool(pool, row);
    if (status != SMLA_OK)
        return status;
    if (slot < 0 || slot >= smla_kv_pool_rows(pool))
        return SMLA_ERR_VALUE;
    return SMLA_OK;
}

/* BF16 values are stored little-endian whatever the host's byte order. */
static void store_bf16(uint8_t *dst, float value)
{
    const uint16_t bits = smla_float_to_bf16(value);
    dst[0] = (uint8_t)(bits & 0xFF);
    dst[1] = (uint8_t)(bits >> 8);
}

static float load_bf16(const uint8_t *src)
{
    return smla_bf16_to_float((uint16_t)(src[0] | (src[1] << 8)));
}

/* The exponent k of a tile's scale 2^k (see the file comment). */
static int ds_mla_tile_exponent(const float *values)
{
    float amax = 0.0f;
    for (int i = 0; i < SMLA_DS_MLA_TILE; i++)
        if (isfinite(values[i]) && fabsf(values[i]) > amax)
            amax = fabsf(values[i]);
    if (amax == 0.0f)
        return 0;
    /* amax = f * 2^e with f in [0.5, 1) and 448 = 0.875 * 2^9, so 448 * 2^k >= amax
     * holds first at k = e - 9 when f <= 0.875, else at k = e - 8. */
    int e;
    const float f = frexpf(amax, &e);
    int k = f <= 0.875f ? e - 9 : e - 8;
    if (k < -UE8M0_BIAS)
        k = -UE8M0_BIAS;
    if (k > UE8M0_BIAS)
        k = UE8M0_BIAS;
    return k;
}

static void pack_ds_mla(uint8_t *data, uint8_t *scales, const float *row)
{
    for (int t = 0; t < DS_MLA_TILES; t++) {
        const float *tile = row + t * SMLA_DS_MLA_TILE;
        const int k = ds_mla_tile_exponent(tile);
        scales[t] = (uint8_t)(k + UE8M0_BIAS);
        for (int i = 0; i < SMLA_DS_MLA_TILE; i++)
            data[t * SMLA_DS_MLA_TILE + i] = smla_float_to_e4m3(ldexpf(tile[i], -k));
    }
    scales[DS_MLA_TILES] = 0; /* pad byte */
    for (int i = 0; i < SMLA_DS_MLA_ROPE; i++)
        store_bf16(data + SMLA_DS_MLA_NOPE + 2 * i, row[SMLA_DS_MLA_NOPE + i]);
}

static void unpack_ds_mla(const uint8_t *data, const uint8_t *scales, float *row)
{
    for (int t = 0; t < DS_MLA_TILES; t++) {
        const float scale = smla_ue8m0_to_float(scales[t]);
        for (int i = 0; i < SMLA_DS_MLA_TILE; i++) {
            const int d = t * SMLA_DS_MLA_TILE + i;
            row[d] = smla_e4m3_to_float(data[d]) * scale;
        }
    }
    for (int i = 0; i < SMLA_DS_MLA_ROPE; i++)
        row[SMLA_DS_MLA_NOPE + i] = load_bf16(data + SMLA_DS_MLA_NOPE + 2 * i);
}

/* pack / unpack of one slot of a checked pool. */
static void pack_row(const smla_kv_pool *pool, int64_t slot, const float *row)
{
    uint8_t *base = (uint8_t *)pool->data;
    uint8_t *data = base + smla_kv_slot_data(pool, slot);
    switch (pool->format) {
    case SMLA_KV_BF16:
        for (int d = 0; d < SMLA_HEAD_DIM; d++)
            store_bf16(data + 2 * d, row[d]);
        break;
    case SMLA_KV_FP8:
        for (int d = 0; d < SMLA_HEAD_DIM; d++)
            data[d] = smla_float_to_e4m3(row[d]);
        break;
    case SMLA_KV_FP8_DS_MLA:
        pack_ds_mla(data, base + smla_kv_slot_scales(pool, slot), row);
        break;
    case SMLA_KV_INVALID: break;
    }
}

static void unpack_row(const smla_kv_pool *pool, int64_t slot, float *row)
{
    const uint8_t *base = (const uint8_t *)pool->data;
    const uint8_t *data = base + smla_kv_slot_data(pool, slot);
    switch (pool->format) {
    case SMLA_KV_BF16:
        for (int d = 0; d < SMLA_HEAD_DIM; d++)
            row[d] = load_bf16(data + 2 * d);
        break;
    case SMLA_KV_FP8:
        for (int d = 0; d < SMLA_HEAD_DIM; d++)
            row[d] = smla_e4m3_to_float(data[d]);
        break;
    case SMLA_KV_FP8_DS_MLA:
        unpack_ds_mla(data, base + smla_kv_slot_scales(pool, slot), row);
        break;
    case SMLA_KV_INVALID: break;
    }
}

smla_status smla_kv_pack_slot(const smla_kv_pool *pool, int64_t slot, const float *row)
{
    const smla_status status = check_slot(pool, slot, row);
    if (status == SMLA_OK)
        pack_row(pool, slot, row);
    return status;
}

smla_status smla_kv_unpack_slot(const smla_kv_pool *pool, int64_t slot, float *row)
{
    const smla_status status = check_slot(pool, slot, row);
    if (status == SMLA_OK)
        unpack_row(pool, slot, row);
    return status;
}

smla_status smla_kv_pack(const smla_kv_pool *pool, const float *rows)
{
    const smla_status status = check_host_pool(pool, rows);
    if (status != SMLA_OK)
        return status;
    for (int64_t slot = 0; slot < smla_kv_pool_rows(pool); slot++)
        pack_row(pool, slot, rows + slot * SMLA_HEAD_DIM);
    return SMLA_OK;
}

smla_status smla_kv_unpack(const smla_kv_pool *pool, float *rows)
{
    const smla_status status = check_host_pool(pool, rows);
    if (status != SMLA_OK)
        return status;
    for (int64_t slot = 0; slot < smla_kv_pool_rows(pool); slot++)
        unpack_row(pool, slot, rows + slot * SMLA_HEAD_DIM);
    return SMLA_OK;
}
