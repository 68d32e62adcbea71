/* Device copies of an engine batch (tests/common/engine_batch.h) for the GPU determinism
 * test and the soak: buffers sized for the batch's maxima, allocated once (so CUDA graphs
 * captured over them stay valid), refilled in place from the host batch. */
#ifndef SMLA_TESTS_GPU_DEVICE_BATCH_H
#define SMLA_TESTS_GPU_DEVICE_BATCH_H

#include <cuda_runtime.h>

#include "cuda_check.h"
#include "engine_batch.h"

typedef struct smla_device_batch {
    smla_test_buffers dev;   /* device q, pools, indices, lens, sinks, out, lse */
    int32_t *seq_lens;       /* device [max_requests] */
    size_t q_row_bytes, index_row_bytes, out_bytes, lse_bytes;
} smla_device_batch;

static inline void *smla_device_alloc(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

static inline void *smla_device_copy(const void *host, size_t bytes)
{
    void *p = smla_device_alloc(bytes);
    CUDA_CHECK(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
    return p;
}

static inline size_t smla_pool_bytes(const smla_kv_pool *pool)
{
    return (size_t)(pool->num_blocks * pool->block_stride);
}

/* Allocates every buffer for b's maxima; copies the pools and sinks. */
static inline void smla_device_batch_create(const smla_test_batch *b, smla_device_batch *d)
{
    const size_t T = (size_t)b->cfg.max_tokens, H = (size_t)b->cfg.heads;
    d->q_row_bytes = H * SMLA_HEAD_DIM * smla_dtype_size(b->cfg.q_dtype);
    d->index_row_bytes = (size_t)(b->cfg.window + b->cfg.topk) * sizeof(int32_t);
    d->out_bytes = T * H * SMLA_HEAD_DIM * sizeof(uint16_t);
    d->lse_bytes = T * H * sizeof(float);
    d->dev.q = smla_device_alloc(T * d->q_row_bytes);
    d->dev.swa = smla_device_copy(b->pools->swa.data, smla_pool_bytes(&b->pools->swa));
    d->dev.extra = smla_device_copy(b->pools->extra.data, smla_pool_bytes(&b->pools->extra));
    d->dev.indices = smla_device_alloc(T * d->index_row_bytes);
    d->dev.swa_lens = smla_device_alloc(T * sizeof(int32_t));
    d->dev.extra_lens = smla_device_alloc(T * sizeof(int32_t));
    d->dev.sinks = smla_device_copy(b->sinks, H * sizeof(float));
    d->dev.out = smla_device_alloc(d->out_bytes);
    d->dev.lse = smla_device_alloc(d->lse_bytes);
    d->seq_lens = smla_device_alloc((size_t)b->cfg.max_requests * sizeof(int32_t));
}

/* Copies b's q rows (all max_tokens) into the same device buffer on stream s. */
static inline void smla_device_batch_upload_queries(const smla_test_batch *b,
                                                    smla_device_batch *d, cudaStream_t s)
{
    CUDA_CHECK(cudaMemcpyAsync(d->dev.q, b->q, (size_t)b->cfg.max_tokens * d->q_row_bytes,
                               cudaMemcpyHostToDevice, s));
}

/* Copies b's current index rows, lens, seq_lens and sinks into the same device buffers on
 * stream s. */
static inline void smla_device_batch_upload(const smla_test_batch *b, smla_device_batch *d,
                                            cudaStream_t s)
{
    const size_t T = (size_t)b->num_tokens;
    CUDA_CHECK(cudaMemcpyAsync(d->dev.indices, b->indices, T * d->index_row_bytes,
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(d->dev.swa_lens, b->swa_lens, T * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(d->dev.extra_lens, b->extra_lens, T * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(d->seq_lens, b->seq_lens, (size_t)b->num_requests * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(d->dev.sinks, b->sinks, (size_t)b->cfg.heads * sizeof(float),
                               cudaMemcpyHostToDevice, s));
}

static inline void smla_device_batch_free(smla_device_batch *d)
{
    void *p[] = {d->dev.q,     d->dev.swa, d->dev.extra, d->dev.indices, d->dev.swa_lens,
                 d->dev.extra_lens, d->dev.sinks, d->dev.out, d->dev.lse, d->seq_lens};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        CUDA_CHECK(cudaFree(p[i]));
}

/* b's batch for a plan: its requests, device seq_lens, the query dtype. */
static inline smla_batch smla_device_batch_plan_input(const smla_test_batch *b,
                                                      const smla_device_batch *d,
                                                      int32_t threshold, int32_t cap)
{
    const smla_batch batch = {b->num_requests, b->query_start_loc, d->seq_lens, threshold,
                              b->cfg.q_dtype, cap};
    return batch;
}

#endif
