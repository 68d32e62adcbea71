/* Determinism of the CUDA backend (issue 8), run on the H200: device plans over engine
 * batches, for every split mode (AUTO, FIXED, NONE), give bit-identical out and lse
 *  1. across 100 runs of the same call,
 *  2. across segment caps 256, 512, 1024, 2048 and off (and, for FIXED and NONE,
 *     positions given without a plan),
 *  3. across reorderings of the requests within the batch (decodes first still), each
 *     request's rows mapped back,
 *  4. (FIXED and NONE) between the batch and its leading decodes run alone: at 8-32
 *     heads a launch of 8 tokens takes a smaller head tile than the batch's, and a head's
 *     arithmetic must not follow the tile (session 38: bf16ring's S at 8 heads did).
 * What must hold: FIXED and NONE never depend on the batch, so all three. AUTO chooses its
 * splits from the launch's token count and a plan's decode count, which none of these
 * change (same batch, same size; a plan's decodes are the same requests), so all three
 * too; only between batches of different sizes may AUTO's split tokens differ in their
 * last bits, and without a plan it splits every token (hence no plan-less run for AUTO).
 * Usage: gpu_test_determinism [--runs N] (default 100). */
#include <string.h>

#include "device_batch.h"
#include "testutil.h"

#define THRESHOLD 2
#define NUM_MODES 3

typedef struct config {
    const char *name;
    int32_t heads;
    smla_dtype q_dtype;
    smla_kv_format kv_format;
} config;

static const config configs[] = {
    {"fp8 q, fp8 cache, 64 heads", 64, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8},
    {"fp8 q, fp8 cache, 8 heads", 8, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8},
    {"bf16 q, fp8_ds_mla cache, 16 heads", 16, SMLA_DTYPE_BF16, SMLA_KV_FP8_DS_MLA},
    {"bf16 q, bf16 cache, 16 heads", 16, SMLA_DTYPE_BF16, SMLA_KV_BF16},
    {"fp8 q, fp8_ds_mla cache, 16 heads", 16, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8_DS_MLA},
    {"fp8 q, fp8_ds_mla cache, 128 heads", 128, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8_DS_MLA},
};
static const smla_split_mode modes[NUM_MODES] = {SMLA_SPLIT_AUTO, SMLA_SPLIT_FIXED,
                                                 SMLA_SPLIT_NONE};
static const char *const mode_names[NUM_MODES] = {"auto", "fixed", "none"};

/* Decodes of 1-2 tokens, then prefills, one longer than every cap. */
static const int32_t queries[] = {2, 1, 2, 2, 1, 2500, 700, 3, 129};
#define NUM_REQUESTS ((int32_t)(sizeof queries / sizeof queries[0]))

static smla_context *ctx;
static cudaStream_t stream;

typedef struct outputs {
    uint16_t *out;
    float *lse;
} outputs;

typedef struct gpu_case {
    smla_test_batch batch;
    smla_device_batch dev;
    smla_plan *plan;
    outputs first, got;
} gpu_case;

static void case_make(gpu_case *c, const config *cfg, const smla_test_pools *pools,
                      smla_rng *rng)
{
    const int32_t tokens = 2500 + 700 + 129 + 3 + 8;
    const smla_test_batch_config bc = {cfg->heads, cfg->q_dtype, 128, 512, tokens,
                                       NUM_REQUESTS};
    int32_t prefixes[NUM_REQUESTS];
    for (int32_t r = 0; r < NUM_REQUESTS; r++)
        prefixes[r] = (int32_t)smla_rng_range(rng, 0, 20000);
    smla_test_batch_create(&bc, pools, rng, &c->batch);
    smla_test_batch_set_requests(&c->batch, NUM_REQUESTS, queries, prefixes);
    smla_test_batch_fill_queries(&c->batch, rng);
    smla_test_batch_fill_indices(&c->batch, rng);
    smla_device_batch_create(&c->batch, &c->dev);
    smla_device_batch_upload_queries(&c->batch, &c->dev, stream);
    const smla_plan_capacity capacity = {tokens, NUM_REQUESTS, 0};
    CHECK_STATUS(smla_plan_create(ctx, &capacity, SMLA_MEMORY_DEVICE, &c->plan), SMLA_OK);
    if (!c->plan) {
        fprintf(stderr, "plan: %s\nFAIL\n", smla_context_last_error(ctx));
        exit(1);
    }
    c->first.out = smla_test_alloc(c->dev.out_bytes);
    c->first.lse = smla_test_alloc(c->dev.lse_bytes);
    c->got.out = smla_test_alloc(c->dev.out_bytes);
    c->got.lse = smla_test_alloc(c->dev.lse_bytes);
}

static void case_free(gpu_case *c)
{
    smla_plan_destroy(c->plan);
    smla_device_batch_free(&c->dev);
    smla_test_batch_free(&c->batch);
    free(c->first.out);
    free(c->first.lse);
    free(c->got.out);
    free(c->got.lse);
}

/* Uploads the batch's indices, lens and seq_lens (its q is on the device), positions its
 * first `requests` requests (all of them: a device plan built with cap, or cu_seqlens_q /
 * seq_lens when cap < -1; fewer: cu_seqlens_q / seq_lens), runs the call over their
 * tokens in mode on poisoned outputs and downloads them. */
static void run_requests(gpu_case *c, smla_split_mode mode, int32_t cap, int32_t requests, outputs *o)
{
    const smla_test_batch *b = &c->batch;
    smla_device_batch_upload(b, &c->dev, stream);
    CUDA_CHECK(cudaMemsetAsync(c->dev.dev.out, 0xFF, c->dev.out_bytes, stream));
    CUDA_CHECK(cudaMemsetAsync(c->dev.dev.lse, 0xFF, c->dev.lse_bytes, stream));
    smla_attention_args a = smla_test_batch_args(b, &c->dev.dev, b->query_start_loc[requests], SMLA_MEMORY_DEVICE);
    int32_t *d_cu = NULL;
    if (cap >= SMLA_SEGMENT_CAP_DEFAULT && requests == b->num_requests) {
        const smla_batch batch = smla_device_batch_plan_input(b, &c->dev, THRESHOLD, cap);
        CHECK_STATUS(smla_plan_build(c->plan, &batch, stream), SMLA_OK);
        a.plan = c->plan;
    } else {
        d_cu = smla_device_copy(b->query_start_loc, ((size_t)requests + 1) * sizeof(int32_t));
        a.cu_seqlens_q = smla_tensor_1d(d_cu, SMLA_DTYPE_I32, requests + 1, SMLA_MEMORY_DEVICE);
        a.seq_lens = smla_tensor_1d(c->dev.seq_lens, SMLA_DTYPE_I32, requests, SMLA_MEMORY_DEVICE);
    }
    a.backend = SMLA_BACKEND_CUDA;
    a.stream = stream;
    a.split = mode;
    const smla_status st = smla_attention(ctx, &a);
    if (st != SMLA_OK) {
        fprintf(stderr, "attention: %s: %s\nFAIL\n", smla_status_string(st),
                smla_context_last_error(ctx));
        exit(1);
    }
    CUDA_CHECK(cudaMemcpyAsync(o->out, c->dev.dev.out, c->dev.out_bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaMemcpyAsync(o->lse, c->dev.dev.lse, c->dev.lse_bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    if (d_cu)
        CUDA_CHECK(cudaFree(d_cu));
}

static void run(gpu_case *c, smla_split_mode mode, int32_t cap, outputs *o)
{
    run_requests(c, mode, cap, c->batch.num_requests, o);
}

static int same(const gpu_case *c, const outputs *a, const outputs *b)
{
    return !memcmp(a->out, b->out, c->dev.out_bytes) && !memcmp(a->lse, b->lse, c->dev.lse_bytes);
}

static void report(const char *what, const config *cfg, int mode, int differ, int total)
{
    printf("  %-38s %-5s %-8s %s (%d of %d differ)\n", cfg->name, mode_names[mode], what,
           differ ? "FAIL" : "identical", differ, total);
    if (differ)
        smla_test_failures++;
}

static void test_runs(gpu_case *c, const config *cfg, int mode, int runs)
{
    run(c, modes[mode], SMLA_SEGMENT_CAP_DEFAULT, &c->first);
    int differ = 0;
    for (int i = 1; i < runs; i++) {
        run(c, modes[mode], SMLA_SEGMENT_CAP_DEFAULT, &c->got);
        differ += !same(c, &c->first, &c->got);
    }
    report("runs", cfg, mode, differ, runs - 1);
}

static void test_caps(gpu_case *c, const config *cfg, int mode)
{
    static const int32_t caps[] = {256, 512, 1024, 2048, 0, SMLA_SEGMENT_CAP_DEFAULT, -2};
    const int n = modes[mode] == SMLA_SPLIT_AUTO ? 6 : 7; /* -2: positions without a plan */
    run(c, modes[mode], caps[0], &c->first);
    int differ = 0;
    for (int i = 1; i < n; i++) {
        run(c, modes[mode], caps[i], &c->got);
        differ += !same(c, &c->first, &c->got);
    }
    report("caps", cfg, mode, differ, n - 1);
}

static void test_reorder(gpu_case *c, const config *cfg, int mode, smla_rng *rng,
                         smla_test_batch *moved)
{
    const size_t H = (size_t)cfg->heads, row = H * SMLA_HEAD_DIM;
    const int32_t T = c->batch.num_tokens;
    int32_t *map = smla_test_alloc((size_t)T * sizeof *map);
    run(c, modes[mode], SMLA_SEGMENT_CAP_DEFAULT, &c->first);
    smla_test_batch original = c->batch;
    int differ = 0;
    enum { ORDERS = 3 };
    for (int k = 0; k < ORDERS; k++) {
        int32_t order[NUM_REQUESTS];
        smla_test_batch_random_order(&original, rng, THRESHOLD, order);
        smla_test_batch_reorder(&original, order, moved, map);
        c->batch = *moved;
        smla_device_batch_upload_queries(moved, &c->dev, stream);
        run(c, modes[mode], SMLA_SEGMENT_CAP_DEFAULT, &c->got);
        c->batch = original;
        smla_device_batch_upload_queries(&original, &c->dev, stream);
        int bad = 0;
        for (int32_t t = 0; t < T; t++)
            bad += memcmp(c->first.out + (size_t)t * row, c->got.out + (size_t)map[t] * row,
                          row * sizeof(uint16_t)) != 0 ||
                   memcmp(c->first.lse + (size_t)t * H, c->got.lse + (size_t)map[t] * H,
                          H * sizeof(float)) != 0;
        if (bad)
            fprintf(stderr, "    order %d: %d of %d tokens differ\n", k, bad, T);
        differ += bad != 0;
    }
    report("reorder", cfg, mode, differ, ORDERS);
    free(map);
}

/* The batch's leading decodes (8 tokens) alone against the whole batch: at 8-32 heads
 * their launch takes a smaller head tile than the batch's (3340 tokens). */
static void test_slice(gpu_case *c, const config *cfg, int mode)
{
    const size_t H = (size_t)cfg->heads;
    const int32_t decodes = smla_test_batch_leading_decodes(&c->batch, THRESHOLD);
    const int32_t n = c->batch.query_start_loc[decodes];
    run(c, modes[mode], -2, &c->first);
    run_requests(c, modes[mode], -2, decodes, &c->got);
    const int differ = memcmp(c->first.out, c->got.out, (size_t)n * H * SMLA_HEAD_DIM * sizeof(uint16_t)) != 0 ||
                       memcmp(c->first.lse, c->got.lse, (size_t)n * H * sizeof(float)) != 0;
    report("slice", cfg, mode, differ, 1);
}

static int parse_runs(int argc, char **argv)
{
    int runs = 100;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc && atoi(argv[i + 1]) >= 2) {
            runs = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: gpu_test_determinism [--runs N>=2]\n");
            exit(2);
        }
    }
    return runs;
}

int main(int argc, char **argv)
{
    const int runs = parse_runs(argc, argv);
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("gpu_test_determinism"));
    CHECK_STATUS(smla_context_create(&ctx), SMLA_OK);
    if (!smla_context_has_cuda(ctx)) {
        fprintf(stderr, "no usable GPU\nFAIL\n");
        return 1;
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        const config *cfg = &configs[i];
        smla_test_pools pools;
        smla_test_pools_create(cfg->kv_format, 8192, 32768, 64, &rng, &pools);
        gpu_case c;
        case_make(&c, cfg, &pools, &rng);
        smla_test_batch moved;
        smla_test_batch_create(&c.batch.cfg, &pools, &rng, &moved);
        for (int m = 0; m < NUM_MODES; m++) {
            test_runs(&c, cfg, m, runs);
            test_caps(&c, cfg, m);
            test_reorder(&c, cfg, m, &rng, &moved);
            if (modes[m] != SMLA_SPLIT_AUTO) /* AUTO's splits follow the launch's tokens */
                test_slice(&c, cfg, m);
        }
        smla_test_batch_free(&moved);
        case_free(&c);
        smla_test_pools_free(&pools);
    }
    CUDA_CHECK(cudaStreamDestroy(stream));
    smla_context_destroy(ctx);
    const int rc = smla_test_finish("gpu_test_determinism");
    printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}
