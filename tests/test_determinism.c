/* Determinism of the CPU backend (issue 8), on engine batches positioned by host plans:
 * the same inputs give bit-identical out and lse
 *  1. across 100 runs (thread counts 1 to 4),
 *  2. across segment caps 256, 512, 1024, 2048 and off, and positions given without a
 *     plan (cu_seqlens_q / seq_lens),
 *  3. across reorderings of the requests within the batch (decodes first still), each
 *     request's rows mapped back.
 * The GPU version, with the split modes, is tests/gpu/test_determinism.c. */
#include <string.h>

#include "engine_batch.h"
#include "testutil.h"

#define THRESHOLD 2 /* decodes: up to 2 tokens (one speculative) */
#define RUNS 100

static smla_context *ctx;

typedef struct outputs {
    uint16_t *out;
    float *lse;
    size_t out_bytes, lse_bytes;
} outputs;

static void outputs_make(const smla_test_batch *b, outputs *o)
{
    const size_t rows = (size_t)b->cfg.max_tokens * (size_t)b->cfg.heads;
    o->out_bytes = rows * SMLA_HEAD_DIM * sizeof(uint16_t);
    o->lse_bytes = rows * sizeof(float);
    o->out = smla_test_alloc(o->out_bytes);
    o->lse = smla_test_alloc(o->lse_bytes);
}

static void outputs_free(outputs *o)
{
    free(o->out);
    free(o->lse);
}

static int same_outputs(const outputs *a, const outputs *b)
{
    return !memcmp(a->out, b->out, a->out_bytes) && !memcmp(a->lse, b->lse, a->lse_bytes);
}

/* The batch's call, positioned by a host plan built with segment_cap, or (cap < -1) by
 * cu_seqlens_q / seq_lens; outputs poisoned first. */
static void run(const smla_test_batch *b, int32_t cap, outputs *o)
{
    memset(o->out, 0xFF, o->out_bytes);
    memset(o->lse, 0xFF, o->lse_bytes);
    const smla_test_buffers buf = smla_test_batch_host_buffers(b, o->out, o->lse);
    smla_attention_args a = smla_test_batch_args(b, &buf, b->num_tokens, SMLA_MEMORY_HOST);
    smla_plan *plan = NULL;
    if (cap >= SMLA_SEGMENT_CAP_DEFAULT) {
        const smla_plan_capacity capacity = {b->cfg.max_tokens, b->cfg.max_requests, 0};
        const smla_batch batch = {b->num_requests, b->query_start_loc, b->seq_lens, THRESHOLD,
                                  b->cfg.q_dtype, cap};
        CHECK_STATUS(smla_plan_create(ctx, &capacity, SMLA_MEMORY_HOST, &plan), SMLA_OK);
        CHECK_STATUS(smla_plan_build(plan, &batch, NULL), SMLA_OK);
        a.plan = plan;
    } else {
        a.cu_seqlens_q = smla_tensor_1d(b->query_start_loc, SMLA_DTYPE_I32,
                                        b->num_requests + 1, SMLA_MEMORY_HOST);
        a.seq_lens = smla_tensor_1d(b->seq_lens, SMLA_DTYPE_I32, b->num_requests,
                                    SMLA_MEMORY_HOST);
    }
    const smla_status st = smla_attention(ctx, &a);
    CHECK_STATUS(st, SMLA_OK);
    if (st != SMLA_OK)
        fprintf(stderr, "%s\n", smla_context_last_error(ctx));
    smla_plan_destroy(plan);
}

static void make_batch(smla_rng *rng, const smla_test_batch_config *cfg,
                       const smla_test_pools *pools, int32_t num_requests,
                       const int32_t *queries, smla_test_batch *b)
{
    int32_t prefixes[64];
    for (int32_t r = 0; r < num_requests; r++)
        prefixes[r] = (int32_t)smla_rng_range(rng, 0, 5000);
    smla_test_batch_create(cfg, pools, rng, b);
    smla_test_batch_set_requests(b, num_requests, queries, prefixes);
    smla_test_batch_fill_queries(b, rng);
    smla_test_batch_fill_indices(b, rng);
}

/* 1. One batch, 100 runs, thread counts 1 to 4. */
static void test_runs(smla_rng *rng, const smla_test_pools *pools)
{
    static const int32_t queries[] = {1, 2, 1, 5, 9};
    const smla_test_batch_config cfg = {16, SMLA_DTYPE_FP8_E4M3, 32, 64, 18, 5};
    smla_test_batch b;
    make_batch(rng, &cfg, pools, 5, queries, &b);
    outputs first, again;
    outputs_make(&b, &first);
    outputs_make(&b, &again);
    run(&b, SMLA_SEGMENT_CAP_DEFAULT, &first);
    int differ = 0;
    for (int i = 1; i < RUNS; i++) {
        smla_context_set_num_threads(ctx, 1 + i % 4);
        run(&b, SMLA_SEGMENT_CAP_DEFAULT, &again);
        differ += !same_outputs(&first, &again);
    }
    if (differ)
        fprintf(stderr, "runs: %d of %d runs differ from the first\n", differ, RUNS - 1);
    CHECK(differ == 0);
    outputs_free(&first);
    outputs_free(&again);
    smla_test_batch_free(&b);
}

/* 2. A batch with a prefill longer than every cap: each cap segments it differently. */
static void test_caps(smla_rng *rng, const smla_test_pools *pools, smla_dtype q_dtype)
{
    static const int32_t queries[] = {1, 2, 2100, 300, 3};
    static const int32_t caps[] = {256, 512, 1024, 2048, 0, SMLA_SEGMENT_CAP_DEFAULT, -2};
    const smla_test_batch_config cfg = {8, q_dtype, 16, 16, 2406, 5};
    smla_test_batch b;
    make_batch(rng, &cfg, pools, 5, queries, &b);
    outputs first, again;
    outputs_make(&b, &first);
    outputs_make(&b, &again);
    run(&b, caps[0], &first);
    for (size_t i = 1; i < sizeof caps / sizeof caps[0]; i++) {
        run(&b, caps[i], &again);
        if (!same_outputs(&first, &again)) {
            fprintf(stderr, "caps (%s): cap %d differs from cap 256 (-2: no plan)\n",
                    q_dtype == SMLA_DTYPE_BF16 ? "bf16" : "fp8", caps[i]);
            smla_test_failures++;
        }
    }
    outputs_free(&first);
    outputs_free(&again);
    smla_test_batch_free(&b);
}

/* 3. The same requests in other orders: each token's rows, found where its request
 * went, are the same bits. */
static void test_reorder(smla_rng *rng, const smla_test_pools *pools)
{
    enum { R = 10, T = 300, ORDERS = 3 };
    const smla_test_batch_config cfg = {16, SMLA_DTYPE_BF16, 32, 64, T, R};
    smla_test_batch b, moved;
    smla_test_batch_create(&cfg, pools, rng, &b);
    smla_test_batch_create(&cfg, pools, rng, &moved);
    smla_test_batch_random_requests(&b, rng, R, T, THRESHOLD, 5000, 0.0);
    smla_test_batch_fill_queries(&b, rng);
    smla_test_batch_fill_indices(&b, rng);
    outputs base, got;
    outputs_make(&b, &base);
    outputs_make(&b, &got);
    run(&b, SMLA_SEGMENT_CAP_DEFAULT, &base);
    const size_t H = (size_t)cfg.heads, row = H * SMLA_HEAD_DIM;
    for (int k = 0; k < ORDERS; k++) {
        int32_t order[R], map[T];
        smla_test_batch_random_order(&b, rng, THRESHOLD, order);
        smla_test_batch_reorder(&b, order, &moved, map);
        run(&moved, SMLA_SEGMENT_CAP_DEFAULT, &got);
        int differ = 0;
        for (int32_t t = 0; t < T; t++)
            differ += memcmp(base.out + (size_t)t * row, got.out + (size_t)map[t] * row,
                             row * sizeof(uint16_t)) != 0 ||
                      memcmp(base.lse + (size_t)t * H, got.lse + (size_t)map[t] * H,
                             H * sizeof(float)) != 0;
        if (differ)
            fprintf(stderr, "reorder %d: %d of %d tokens differ\n", k, differ, T);
        CHECK(differ == 0);
    }
    outputs_free(&base);
    outputs_free(&got);
    smla_test_batch_free(&b);
    smla_test_batch_free(&moved);
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_determinism"));
    CHECK_STATUS(smla_context_create(&ctx), SMLA_OK);
    smla_test_pools fp8, bf16;
    smla_test_pools_create(SMLA_KV_FP8_DS_MLA, 3000, 5000, 64, &rng, &fp8);
    smla_test_pools_create(SMLA_KV_BF16, 3000, 5000, 16, &rng, &bf16);
    test_runs(&rng, &fp8);
    test_caps(&rng, &fp8, SMLA_DTYPE_FP8_E4M3);
    test_caps(&rng, &bf16, SMLA_DTYPE_BF16);
    test_reorder(&rng, &bf16);
    smla_test_pools_free(&fp8);
    smla_test_pools_free(&bf16);
    smla_context_destroy(ctx);
    return smla_test_finish("test_determinism");
}
