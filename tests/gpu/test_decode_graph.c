/* Decode steps replayed from CUDA graphs (issue 6, item 3), run on the H200. Per
 * configuration: a device plan, and one smla_attention call per split mode (AUTO, FIXED,
 * NONE) captured once in a graph. Every round then writes new seq_lens (+ some), indices
 * and lens into the same device buffers, rebuilds the plan on the stream, replays one
 * graph and compares with the CPU reference on the same inputs. Two rounds have fewer
 * decode requests than at capture (some of one token): the kernels read the plan's counts
 * on the device, so the replay computes only those, and the rows past them keep their
 * poison. FIXED and NONE replays must also equal a direct call bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "check_compare.h"
#include "check_problem.h"
#include "cuda_check.h"
#include "engine_batch.h"
#include "testutil.h"

#define QUERY_LEN 2          /* tokens per decode request (one speculative) */
#define WINDOW 128
#define TOPK 512
#define WIDTH (WINDOW + TOPK) /* the engine layout: one index row [window | extra] */
#define SWA_BLOCK 256
#define SWA_BLOCKS 8
#define EXTRA_BLOCK 64
#define EXTRA_BLOCKS 24
#define MAX_REQUESTS 32
#define ROUNDS 6
#define NUM_MODES 3

typedef struct decode_config {
    int32_t requests; /* at capture, each of QUERY_LEN tokens */
    int32_t heads;
    smla_dtype q_dtype;
    smla_kv_format kv_format;
} decode_config;

/* 64 tokens do not split under AUTO (enough work); 8 tokens at 16 heads do. */
static const decode_config configs[] = {
    {32, 64, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8},
    {32, 64, SMLA_DTYPE_BF16, SMLA_KV_FP8_DS_MLA},
    {4, 16, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8},
    {4, 16, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8_DS_MLA},
};

static const smla_split_mode modes[NUM_MODES] = {SMLA_SPLIT_AUTO, SMLA_SPLIT_FIXED,
                                                 SMLA_SPLIT_NONE};
static const char *const mode_names[NUM_MODES] = {"auto", "fixed", "none"};

/* One side's copy (host or device) of every tensor of the call. */
typedef struct io_buffers {
    void *q, *swa, *extra;
    int32_t *indices, *swa_lens, *extra_lens;
    float *sinks;
    uint16_t *out;
    float *lse;
} io_buffers;

typedef struct decode_test {
    decode_config cfg;
    int32_t tokens;
    size_t q_bytes, out_bytes, lse_bytes;
    smla_kv_pool swa, extra;     /* host pools; the device copies have the same layout */
    io_buffers host, dev;        /* host.out/lse: the reference's */
    uint16_t *got_out, *direct_out;   /* host copies of the device outputs */
    float *got_lse, *direct_lse, *lse_poison;
    uint16_t *d_direct_out;
    float *d_direct_lse;
    int32_t num_requests;        /* this round's */
    int32_t qsl[MAX_REQUESTS + 1], seq_lens[MAX_REQUESTS];
    int32_t *d_seq_lens;
    smla_plan *plan;
    cudaStream_t stream;
} decode_test;

static smla_context *ctx;

static void *host_alloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of host memory\nFAIL\n");
        exit(1);
    }
    return p;
}

static void *device_copy(const void *host, size_t bytes)
{
    void *d = NULL;
    CUDA_CHECK(cudaMalloc(&d, bytes));
    if (host)
        CUDA_CHECK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* A host pool of random N(0,1) rows in format. */
static smla_kv_pool random_pool(smla_rng *rng, smla_kv_format format, int64_t blocks,
                                int32_t block_size)
{
    smla_kv_pool pool = smla_kv_pool_make(NULL, format, blocks, block_size, SMLA_MEMORY_HOST);
    pool.data = host_alloc((size_t)(blocks * pool.block_stride));
    memset(pool.data, 0, (size_t)(blocks * pool.block_stride));
    const size_t values = (size_t)(blocks * block_size) * SMLA_HEAD_DIM;
    float *rows = host_alloc(values * sizeof(float));
    for (size_t i = 0; i < values; i++)
        rows[i] = (float)smla_rng_normal(rng);
    CHECK_STATUS(smla_kv_pack(&pool, rows), SMLA_OK);
    free(rows);
    return pool;
}

static size_t pool_bytes(const smla_kv_pool *pool)
{
    return (size_t)(pool->num_blocks * pool->block_stride);
}

static void make_test(decode_test *t, const decode_config *cfg, smla_rng *rng)
{
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->tokens = cfg->requests * QUERY_LEN;
    const size_t T = (size_t)t->tokens, H = (size_t)cfg->heads;
    t->q_bytes = T * H * SMLA_HEAD_DIM * smla_dtype_size(cfg->q_dtype);
    t->out_bytes = T * H * SMLA_HEAD_DIM * sizeof(uint16_t);
    t->lse_bytes = T * H * sizeof(float);

    uint8_t *q = host_alloc(t->q_bytes);
    for (size_t i = 0; i < T * H * SMLA_HEAD_DIM; i++) {
        const float v = (float)smla_rng_normal(rng);
        if (cfg->q_dtype == SMLA_DTYPE_BF16)
            ((uint16_t *)q)[i] = smla_float_to_bf16(v);
        else
            q[i] = smla_float_to_e4m3(v);
    }
    t->host.q = q;
    t->swa = random_pool(rng, cfg->kv_format, SWA_BLOCKS, SWA_BLOCK);
    t->extra = random_pool(rng, cfg->kv_format, EXTRA_BLOCKS, EXTRA_BLOCK);
    t->host.swa = t->swa.data;
    t->host.extra = t->extra.data;
    t->host.indices = host_alloc(T * WIDTH * sizeof(int32_t));
    t->host.swa_lens = host_alloc(T * sizeof(int32_t));
    t->host.extra_lens = host_alloc(T * sizeof(int32_t));
    t->host.sinks = host_alloc(H * sizeof(float));
    for (size_t h = 0; h < H; h++)
        t->host.sinks[h] = (float)smla_rng_normal(rng);
    t->host.out = host_alloc(t->out_bytes);
    t->host.lse = host_alloc(t->lse_bytes);
    t->got_out = host_alloc(t->out_bytes);
    t->direct_out = host_alloc(t->out_bytes);
    t->got_lse = host_alloc(t->lse_bytes);
    t->direct_lse = host_alloc(t->lse_bytes);
    t->lse_poison = host_alloc(t->lse_bytes);
    const uint32_t poison = SMLA_CHECK_LSE_POISON;
    for (size_t i = 0; i < T * H; i++)
        memcpy(&t->lse_poison[i], &poison, sizeof poison);

    t->dev.q = device_copy(t->host.q, t->q_bytes);
    t->dev.swa = device_copy(t->host.swa, pool_bytes(&t->swa));
    t->dev.extra = device_copy(t->host.extra, pool_bytes(&t->extra));
    t->dev.indices = device_copy(NULL, T * WIDTH * sizeof(int32_t));
    t->dev.swa_lens = device_copy(NULL, T * sizeof(int32_t));
    t->dev.extra_lens = device_copy(NULL, T * sizeof(int32_t));
    t->dev.sinks = device_copy(t->host.sinks, H * sizeof(float));
    t->dev.out = device_copy(NULL, t->out_bytes);
    t->dev.lse = device_copy(NULL, t->lse_bytes);
    t->d_direct_out = device_copy(NULL, t->out_bytes);
    t->d_direct_lse = device_copy(NULL, t->lse_bytes);
    t->d_seq_lens = device_copy(NULL, MAX_REQUESTS * sizeof(int32_t));

    CUDA_CHECK(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking));
    const smla_plan_capacity capacity = {t->tokens, cfg->requests, 0};
    CHECK_STATUS(smla_plan_create(ctx, &capacity, SMLA_MEMORY_DEVICE, &t->plan), SMLA_OK);
    if (!t->plan) {
        fprintf(stderr, "plan: %s\nFAIL\n", smla_context_last_error(ctx));
        exit(1);
    }
}

static void free_test(decode_test *t)
{
    smla_plan_destroy(t->plan);
    CUDA_CHECK(cudaStreamDestroy(t->stream));
    void *device[] = {t->dev.q,     t->dev.swa,    t->dev.extra,    t->dev.indices,
                      t->dev.swa_lens, t->dev.extra_lens, t->dev.sinks, t->dev.out,
                      t->dev.lse,   t->d_direct_out, t->d_direct_lse, t->d_seq_lens};
    for (size_t i = 0; i < sizeof device / sizeof device[0]; i++)
        CUDA_CHECK(cudaFree(device[i]));
    void *host[] = {t->host.q,     t->host.swa,  t->host.extra,  t->host.indices,
                    t->host.swa_lens, t->host.extra_lens, t->host.sinks, t->host.out,
                    t->host.lse,   t->got_out,   t->direct_out,  t->got_lse,
                    t->direct_lse, t->lse_poison};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
}

/* The round's batch and inputs, on the host: `requests` decode requests (each of
 * QUERY_LEN tokens when all are there, else of 1 or QUERY_LEN), seq_lens grown from the
 * previous round's (or fresh, some inside the window), new indices and lens for every
 * row, padding rows included. */
static void new_inputs(decode_test *t, smla_rng *rng, int32_t requests, int first)
{
    t->num_requests = requests;
    t->qsl[0] = 0;
    for (int32_t r = 0; r < requests; r++) {
        const int32_t q =
            requests == t->cfg.requests ? QUERY_LEN : (int32_t)smla_rng_range(rng, 1, QUERY_LEN);
        t->qsl[r + 1] = t->qsl[r] + q;
        if (first)
            t->seq_lens[r] = smla_rng_uniform(rng) < 0.3
                                 ? (int32_t)smla_rng_range(rng, QUERY_LEN, WINDOW)
                                 : (int32_t)smla_rng_range(rng, WINDOW, 20000);
        else
            t->seq_lens[r] += (int32_t)smla_rng_range(rng, 1, 40);
    }
    const int64_t swa_rows = (int64_t)SWA_BLOCKS * SWA_BLOCK;
    const int64_t extra_rows = (int64_t)EXTRA_BLOCKS * EXTRA_BLOCK;
    for (int32_t i = 0; i < t->tokens; i++) {
        int32_t *row = t->host.indices + (size_t)i * WIDTH;
        for (int j = 0; j < WIDTH; j++)
            row[j] = smla_test_random_slot(rng, j < WINDOW ? swa_rows : extra_rows);
        t->host.swa_lens[i] = smla_test_random_len(rng, WINDOW);
        t->host.extra_lens[i] = smla_test_random_len(rng, TOPK);
    }
}

/* Writes the round's inputs into the same device buffers and rebuilds the plan. */
static void upload_and_build(decode_test *t)
{
    const size_t T = (size_t)t->tokens;
    cudaStream_t s = t->stream;
    CUDA_CHECK(cudaMemcpyAsync(t->dev.indices, t->host.indices, T * WIDTH * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(t->dev.swa_lens, t->host.swa_lens, T * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(t->dev.extra_lens, t->host.extra_lens, T * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(t->d_seq_lens, t->seq_lens,
                               (size_t)t->num_requests * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
    const smla_batch batch = {t->num_requests, t->qsl, t->d_seq_lens, QUERY_LEN,
                              t->cfg.q_dtype, SMLA_SEGMENT_CAP_DEFAULT};
    CHECK_STATUS(smla_plan_build(t->plan, &batch, s), SMLA_OK);
}

static smla_tensor index_view(int32_t *first, int32_t tokens, int32_t width, smla_memory m)
{
    smla_tensor v = smla_tensor_2d(first, SMLA_DTYPE_I32, tokens, width, m);
    v.stride[0] = WIDTH;
    v.stride[1] = 1;
    return v;
}

/* The call on one side's buffers, without positions. */
static smla_attention_args call_args(const decode_test *t, const io_buffers *b, smla_memory m)
{
    const int32_t T = t->tokens, H = t->cfg.heads;
    smla_attention_args a = smla_attention_args_default();
    a.q = smla_tensor_3d(b->q, t->cfg.q_dtype, T, H, SMLA_HEAD_DIM, m);
    a.swa = t->swa;
    a.swa.data = b->swa;
    a.swa.memory = m;
    a.extra = t->extra;
    a.extra.data = b->extra;
    a.extra.memory = m;
    a.swa_indices = index_view(b->indices, T, WINDOW, m);
    a.extra_indices = index_view(b->indices + WINDOW, T, TOPK, m);
    a.swa_lens = smla_tensor_1d(b->swa_lens, SMLA_DTYPE_I32, T, m);
    a.extra_lens = smla_tensor_1d(b->extra_lens, SMLA_DTYPE_I32, T, m);
    a.sinks = smla_tensor_1d(b->sinks, SMLA_DTYPE_F32, H, m);
    a.bmm1_scale = 1.0f / sqrtf(576.0f);
    a.window = WINDOW;
    a.out = smla_tensor_3d(b->out, SMLA_DTYPE_BF16, T, H, SMLA_HEAD_DIM, m);
    a.lse = smla_tensor_2d(b->lse, SMLA_DTYPE_F32, T, H, m);
    return a;
}

/* The device call positioned by the plan, writing to out/lse. */
static smla_attention_args device_args(const decode_test *t, smla_split_mode mode,
                                       uint16_t *out, float *lse)
{
    smla_attention_args a = call_args(t, &t->dev, SMLA_MEMORY_DEVICE);
    a.out.data = out;
    a.lse.data = lse;
    a.plan = t->plan;
    a.backend = SMLA_BACKEND_CUDA;
    a.stream = t->stream;
    a.split = mode;
    return a;
}

static void run_direct(decode_test *t, smla_split_mode mode, uint16_t *out, float *lse)
{
    const smla_attention_args a = device_args(t, mode, out, lse);
    const smla_status st = smla_attention(ctx, &a);
    if (st != SMLA_OK) {
        fprintf(stderr, "attention (split %d): %s: %s\nFAIL\n", (int)mode,
                smla_status_string(st), smla_context_last_error(ctx));
        exit(1);
    }
}

/* Every mode's call runs once first (the split-KV workspace reaches its largest size
 * before any capture), then each is captured alone in its own graph. */
static void capture_graphs(decode_test *t, cudaGraphExec_t graphs[NUM_MODES])
{
    for (int m = 0; m < NUM_MODES; m++)
        run_direct(t, modes[m], t->dev.out, t->dev.lse);
    CUDA_CHECK(cudaStreamSynchronize(t->stream));
    for (int m = 0; m < NUM_MODES; m++) {
        cudaGraph_t graph;
        CUDA_CHECK(cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeThreadLocal));
        const smla_attention_args a = device_args(t, modes[m], t->dev.out, t->dev.lse);
        const smla_status st = smla_attention(ctx, &a);
        CUDA_CHECK(cudaStreamEndCapture(t->stream, &graph));
        if (st != SMLA_OK) {
            fprintf(stderr, "capture (split %s): %s: %s\nFAIL\n", mode_names[m],
                    smla_status_string(st), smla_context_last_error(ctx));
            exit(1);
        }
        CUDA_CHECK(cudaGraphInstantiate(&graphs[m], graph, 0));
        CUDA_CHECK(cudaGraphDestroy(graph));
    }
}

static void poison_device(decode_test *t, uint16_t *out, float *lse)
{
    CUDA_CHECK(cudaMemsetAsync(out, 0xFF, t->out_bytes, t->stream)); /* SMLA_CHECK_OUT_POISON */
    CUDA_CHECK(cudaMemcpyAsync(lse, t->lse_poison, t->lse_bytes, cudaMemcpyHostToDevice,
                               t->stream));
}

static void download(decode_test *t, const uint16_t *out, const float *lse, uint16_t *host_out,
                     float *host_lse)
{
    CUDA_CHECK(cudaMemcpyAsync(host_out, out, t->out_bytes, cudaMemcpyDeviceToHost, t->stream));
    CUDA_CHECK(cudaMemcpyAsync(host_lse, lse, t->lse_bytes, cudaMemcpyDeviceToHost, t->stream));
    CUDA_CHECK(cudaStreamSynchronize(t->stream));
}

/* The CPU reference on the host copies, positioned by cu_seqlens_q / seq_lens. */
static void run_reference(decode_test *t)
{
    smla_attention_args a = call_args(t, &t->host, SMLA_MEMORY_HOST);
    a.cu_seqlens_q = smla_tensor_1d(t->qsl, SMLA_DTYPE_I32, t->num_requests + 1,
                                    SMLA_MEMORY_HOST);
    a.seq_lens = smla_tensor_1d(t->seq_lens, SMLA_DTYPE_I32, t->num_requests,
                                SMLA_MEMORY_HOST);
    a.backend = SMLA_BACKEND_CPU;
    memset(t->host.out, 0xFF, t->out_bytes);
    memcpy(t->host.lse, t->lse_poison, t->lse_bytes);
    CHECK_STATUS(smla_attention(ctx, &a), SMLA_OK);
}

static void check_round(decode_test *t, int round, int mode)
{
    const int32_t H = t->cfg.heads;
    smla_check_result r;
    smla_check_compare(t->got_out, t->host.out, (int64_t)H * SMLA_HEAD_DIM, t->got_lse,
                       t->host.lse, H, t->tokens, H, &r);
    const int passed = smla_check_passed(&r, smla_check_tolerance(t->cfg.q_dtype));
    const int64_t padding = (int64_t)(t->tokens - t->qsl[t->num_requests]) * H;
    printf("  round %d split %-5s: %2d requests, %3d tokens + %3d padding: rel_fro %.2e "
           "worst_row %.2e (t %lld h %lld) lse %.2e nan %lld inf_mismatch %lld "
           "padding_written %lld%s\n",
           round, mode_names[mode], t->num_requests, t->qsl[t->num_requests],
           t->tokens - t->qsl[t->num_requests], r.rel_fro, r.worst_row,
           (long long)r.worst_token, (long long)r.worst_head, r.lse_err,
           (long long)r.nan_count, (long long)r.lse_inf_mismatch,
           (long long)r.padding_written, passed ? "" : "  FAIL");
    CHECK(passed);
    CHECK(r.rows_padding == padding);
}

/* FIXED and NONE do not depend on the batch: the replay equals a direct call. */
static void check_direct_equal(decode_test *t, int mode)
{
    poison_device(t, t->d_direct_out, t->d_direct_lse);
    run_direct(t, modes[mode], t->d_direct_out, t->d_direct_lse);
    download(t, t->d_direct_out, t->d_direct_lse, t->direct_out, t->direct_lse);
    const int same = !memcmp(t->direct_out, t->got_out, t->out_bytes) &&
                     !memcmp(t->direct_lse, t->got_lse, t->lse_bytes);
    if (!same)
        fprintf(stderr, "  split %s: the graph replay differs from a direct call\n",
                mode_names[mode]);
    CHECK(same);
}

static void test_config(const decode_config *cfg, smla_rng *rng)
{
    printf("%d x %d tokens, %d heads, %s queries, %s caches\n", cfg->requests, QUERY_LEN,
           cfg->heads, cfg->q_dtype == SMLA_DTYPE_BF16 ? "BF16" : "FP8",
           smla_kv_format_name(cfg->kv_format));
    decode_test t;
    make_test(&t, cfg, rng);
    cudaGraphExec_t graphs[NUM_MODES];
    for (int round = 0; round < ROUNDS; round++) {
        const int mode = round % NUM_MODES;
        const int shrink = round == 3 || round == 4;
        const int32_t requests =
            shrink ? (int32_t)smla_rng_range(rng, 1, cfg->requests - 1) : cfg->requests;
        new_inputs(&t, rng, requests, round == 0);
        upload_and_build(&t);
        if (round == 0)
            capture_graphs(&t, graphs);
        poison_device(&t, t.dev.out, t.dev.lse);
        CUDA_CHECK(cudaGraphLaunch(graphs[mode], t.stream));
        download(&t, t.dev.out, t.dev.lse, t.got_out, t.got_lse);
        run_reference(&t);
        check_round(&t, round, mode);
        if (modes[mode] != SMLA_SPLIT_AUTO)
            check_direct_equal(&t, mode);
    }
    for (int m = 0; m < NUM_MODES; m++)
        CUDA_CHECK(cudaGraphExecDestroy(graphs[m]));
    free_test(&t);
}

int main(void)
{
    const uint64_t seed = smla_test_seed("gpu_test_decode_graph");
    smla_rng rng;
    smla_rng_seed(&rng, seed);
    CHECK_STATUS(smla_context_create(&ctx), SMLA_OK);
    if (!smla_context_has_cuda(ctx)) {
        fprintf(stderr, "no usable GPU\nFAIL\n");
        return 1;
    }
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        test_config(&configs[i], &rng);
    smla_context_destroy(ctx);
    const int rc = smla_test_finish("gpu_test_decode_graph");
    printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}
