/* Where a slot's bytes live in a paged KV pool (DESIGN section 3). Shared by the pack /
 * unpack code, the CPU reference and the CUDA kernels, so it is header-only and usable
 * from device code. Callers pass a validated pool and an in-range slot. */
#ifndef SMLA_KV_FORMAT_H
#define SMLA_KV_FORMAT_H

#include "smla.h"

#if defined(__CUDACC__)
#define SMLA_KV_INLINE static inline __host__ __device__
#else
#define SMLA_KV_INLINE static inline
#endif

/* Bytes of one slot's data row: 1024 (bf16), 512 (fp8), 576 (fp8_ds_mla); 0 if invalid.
 * fp8_ds_mla keeps its 8 B scale rows apart, after the block's data rows. */
SMLA_KV_INLINE int64_t smla_kv_data_row_bytes(smla_kv_format format)
{
    switch (format) {
    case SMLA_KV_BF16: return 2 * SMLA_HEAD_DIM;
    case SMLA_KV_FP8: return SMLA_HEAD_DIM;
    case SMLA_KV_FP8_DS_MLA: return SMLA_DS_MLA_DATA_BYTES;
    default: return 0;
    }
}

/* Byte offset, from the pool's data pointer, of slot's data row. */
SMLA_KV_INLINE int64_t smla_kv_slot_data(const smla_kv_pool *pool, int64_t slot)
{
    const int64_t block = slot / pool->block_size;
    const int64_t row = slot % pool->block_size;
    return block * pool->block_stride + row * smla_kv_data_row_bytes(pool->format);
}

/* Byte offset of slot's 8 B scale row (fp8_ds_mla only): after the block's data rows. */
SMLA_KV_INLINE int64_t smla_kv_slot_scales(const smla_kv_pool *pool, int64_t slot)
{
    const int64_t block = slot / pool->block_size;
    const int64_t row = slot % pool->block_size;
    return block * pool->block_stride + (int64_t)pool->block_size * SMLA_DS_MLA_DATA_BYTES +
           row * SMLA_DS_MLA_SCALE_BYTES;
}

/* Slots in the pool: num_blocks * block_size (the pool must have passed the check). */
SMLA_KV_INLINE int64_t smla_kv_pool_rows(const smla_kv_pool *pool)
{
    return pool->num_blocks * pool->block_size;
}

#ifdef __cplusplus
extern "C" {
#endif
/* Checks the pool's geometry (format, block size, block count, block stride, and that
 * every byte offset fits in int64). Does not look at data or memory. Returns SMLA_OK, or
 * SMLA_ERR_KV_FORMAT with *reason (when reason is not NULL) set to a static sentence. */
smla_status smla_kv_pool_check(const smla_kv_pool *pool, const char **reason);
#ifdef __cplusplus
}
#endif

#endif
