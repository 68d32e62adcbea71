/* A validated attention call, in the plain terms every backend computes from.
 * smla_problem_from_args() (validate.c) is the only producer: once it returns SMLA_OK,
 * every pointer is non-NULL where required, every host-visible size and stride is
 * consistent and in range, and backends need no further checks of the arguments.
 * Values that live in device memory (indices, lens, positions) are NOT checked: every
 * backend must treat out-of-range values there as DESIGN section 2 says. */
#ifndef SMLA_PROBLEM_H
#define SMLA_PROBLEM_H

#include "internal.h"

/* Sequences that position a contiguous range of tokens:
 * tokens [token_offset + cu[b], token_offset + cu[b+1]) belong to sequence b, whose
 * KV length is seq_lens[b]. Rows of the range past cu[num_seqs] are padding. */
typedef struct smla_positions {
    const int32_t *cu;        /* [num_seqs + 1] */
    const int32_t *seq_lens;  /* [num_seqs] */
    int32_t num_seqs;
    int64_t token_offset;     /* first token of the range */
    int64_t num_tokens;       /* tokens of the range (rows past cu[num_seqs] are padding) */
} smla_positions;

/* One index set: [T][width] slot ids with a row stride, optional active lengths. */
typedef struct smla_index_set {
    const int32_t *indices;   /* NULL when the set is absent (width 0) */
    int64_t row_stride;       /* elements between rows */
    int32_t width;
    const int32_t *lens;      /* optional [T], element stride lens_stride */
    int64_t lens_stride;
    smla_kv_pool pool;
    int64_t pool_rows;        /* num_blocks * block_size */
} smla_index_set;

#define SMLA_MAX_POSITION_PARTS 2

typedef struct smla_problem {
    int64_t num_tokens;       /* T */
    int32_t num_heads;        /* H */
    const void *q;            /* [T][H][512] */
    smla_dtype q_dtype;       /* BF16 or FP8_E4M3 */
    int64_t q_token_stride;   /* elements; head stride is 512, dim stride 1 */
    smla_index_set swa;
    smla_index_set extra;     /* width 0 / indices NULL when absent */
    /* Positions: num_parts == 0 means no positions (every row computed, no window). */
    int num_parts;
    smla_positions parts[SMLA_MAX_POSITION_PARTS];
    /* With a plan, also its view: GPU kernels take the counts from view.counts at run
     * time (CUDA-graph replays after later builds), the CPU uses parts[] as built now. */
    int has_plan;
    smla_plan_view plan;
    int32_t window;
    const float *sinks;       /* optional [H] */
    float bmm1_scale;
    float bmm2_scale;
    uint16_t *out;            /* BF16 [T][H][512] */
    int64_t out_token_stride; /* elements; head stride 512 */
    float *lse;               /* optional [T][H] */
    int64_t lse_token_stride; /* elements; head stride 1 */
    smla_memory memory;
    void *stream;
    smla_split_mode split;
} smla_problem;

smla_status smla_problem_from_args(smla_context *ctx, const smla_attention_args *args,
                                   smla_problem *problem);

/* CPU reference (src/ref/): the oracle, double accumulation, threads over tokens. */
smla_status smla_ref_attention(smla_context *ctx, const smla_problem *problem);

#ifdef SMLA_WITH_CUDA
/* CUDA backend (src/cuda/). */
smla_status smla_cuda_attention(smla_context *ctx, const smla_problem *problem);
#endif

#endif
