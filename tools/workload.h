/* Attention workloads for smla demo and smla bench: host problems built as an inference
 * engine builds them (engine batches), or as FlashMLA's prefill benchmark does (random
 * rows). Data are random from a seed; the same spec always gives the same workload. */
#ifndef SMLA_TOOLS_WORKLOAD_H
#define SMLA_TOOLS_WORKLOAD_H

#include "smla.h"
#include "tool_error.h"

typedef struct smla_workload_request {
    int32_t query_len;  /* >= 1 new tokens */
    int32_t prefix_len; /* >= 0 tokens already in the cache */
} smla_workload_request;

/* An engine batch (DeepSeek-V4 style). Request r owns pages of both pools, at random
 * distinct block ids; token i of request r is at position pos = prefix_r + i. Its SWA row
 * holds the slots of positions pos-n+1 .. pos (n = min(pos+1, window)) in its first n
 * columns, then -1; its extra row holds min(topk, (pos+1)/compress_ratio) distinct random
 * compressed entries of its own request (those at or before pos), then -1. Indices use
 * the engine layout: one int32 buffer [T][window + topk], extra_indices = the same buffer
 * offset by window columns. swa_lens and extra_lens hold the counts; cu_seqlens_q and
 * seq_lens the positions. The SWA pool holds only the pages some token's window reaches
 * (an engine frees the rest); the extra pool every compressed entry of each request. */
typedef struct smla_engine_spec {
    int32_t heads;
    int32_t window;           /* SWA columns (128) */
    int32_t topk;             /* extra columns; 0: SWA only (no extra pool) */
    int32_t compress_ratio;   /* positions per compressed entry (4) */
    smla_dtype q_dtype;       /* SMLA_DTYPE_FP8_E4M3 or SMLA_DTYPE_BF16 */
    smla_kv_format kv_format; /* both pools */
    int32_t swa_block_size;
    int32_t extra_block_size;
    const smla_workload_request *requests;
    int32_t num_requests;
    uint64_t seed;
} smla_engine_spec;

/* FlashMLA's prefill benchmark inputs: one index set (swa_indices) of `entries` distinct
 * random rows per token over a pool of pool_rows rows, each entry replaced by -1 with
 * probability invalid_fraction; no positions, no lens, no extra pool. */
typedef struct smla_random_rows_spec {
    int32_t heads;
    int32_t tokens;
    int32_t entries;          /* <= pool_rows */
    int32_t pool_rows;
    double invalid_fraction;
    smla_dtype q_dtype;
    smla_kv_format kv_format;
    int32_t block_size;
    uint64_t seed;
} smla_random_rows_spec;

#define SMLA_WORKLOAD_BUFFERS 12

typedef struct smla_workload {
    /* Host tensors, backend AUTO; q ~ N(0,1) in q_dtype, KV rows ~ N(0,1) packed into the
     * format (every referenced row; rows no index names stay zero), sinks ~ N(0,1),
     * bmm1_scale = 1/sqrt(576), bmm2_scale = 1; out allocated as zeros and lse as NaN. */
    smla_attention_args args;
    int32_t num_tokens;
    int32_t num_requests;     /* 0 without positions */
    int64_t active_entries;   /* valid active entries over all tokens */
    double flops;             /* 2 * heads * (512 + 512) * active_entries (DESIGN 6) */
    double kv_bytes;          /* bytes of the KV rows those entries gather */
    size_t total_bytes;       /* of all its buffers, pools included: one device copy */
    void *buffers[SMLA_WORKLOAD_BUFFERS];
    int num_buffers;
} smla_workload;

/* Each returns SMLA_ERR_VALUE (a message naming the field) for a spec it cannot build,
 * SMLA_ERR_OUT_OF_MEMORY when memory runs out; on failure *w holds nothing to free. */
smla_status smla_workload_engine(const smla_engine_spec *spec, smla_workload *w,
                                 smla_tool_error *error);
smla_status smla_workload_random_rows(const smla_random_rows_spec *spec, smla_workload *w,
                                      smla_tool_error *error);
void smla_workload_free(smla_workload *w);

#endif
