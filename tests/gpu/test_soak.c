/* The soak (issue 8), run on the H200: random engine steps, each a plan build and an
 * attention call replayed from one CUDA graph per batch shape (same request and token
 * counts, captured once; query lengths, prefixes, seq_lens, q, indices and lens change in
 * place every step, with invalid indices of every kind, lens out of range and a few
 * seq_lens shorter than their query), checked against the CPU reference on 8 random
 * tokens of the step. Passes with zero mismatches and the device's free memory the same
 * after the steps as before them.
 * Usage: gpu_test_soak [--steps N] (default 500; the full soak is --steps 10000). */
#include <string.h>

#include "check_compare.h"
#include "device_batch.h"
#include "testutil.h"

#define THRESHOLD 2
#define SAMPLES 8
#define MAX_PREFIX 60000

typedef struct shape {
    int32_t requests, tokens, heads;
    smla_dtype q_dtype;
    smla_kv_format kv_format;
    smla_split_mode split;
} shape;

static const shape shapes[] = {
    {32, 64, 64, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8, SMLA_SPLIT_AUTO},      /* decode-heavy */
    {8, 1200, 16, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8, SMLA_SPLIT_FIXED},
    {4, 3000, 64, SMLA_DTYPE_BF16, SMLA_KV_FP8_DS_MLA, SMLA_SPLIT_NONE},
    {33, 700, 32, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8_DS_MLA, SMLA_SPLIT_AUTO},
    {2, 2100, 128, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8, SMLA_SPLIT_AUTO},
    {64, 128, 8, SMLA_DTYPE_BF16, SMLA_KV_BF16, SMLA_SPLIT_FIXED},
};
#define NUM_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))
#define NUM_FORMATS 4 /* pools per kv format (index = smla_kv_format) */

typedef struct shape_state {
    smla_test_batch batch;
    smla_device_batch dev;
    smla_plan *plan;
    cudaGraphExec_t graph;
    int64_t steps, mismatches;
} shape_state;

static smla_context *ctx;
static cudaStream_t stream;

/* A new step's inputs for s: random requests of the shape, fresh tokens, uploaded; the
 * plan rebuilt on the stream. */
static void new_step(shape_state *st, smla_rng *rng)
{
    smla_test_batch *b = &st->batch;
    smla_test_batch_random_requests(b, rng, b->cfg.max_requests, b->cfg.max_tokens, THRESHOLD,
                                    MAX_PREFIX, 0.02);
    smla_test_batch_fill_indices(b, rng);
    smla_device_batch_upload(b, &st->dev, stream);
    const smla_batch batch = smla_device_batch_plan_input(b, &st->dev, THRESHOLD,
                                                          SMLA_SEGMENT_CAP_DEFAULT);
    CHECK_STATUS(smla_plan_build(st->plan, &batch, stream), SMLA_OK);
}

static smla_attention_args call_args(shape_state *st, smla_split_mode split)
{
    smla_attention_args a = smla_test_batch_args(&st->batch, &st->dev.dev,
                                                 st->batch.cfg.max_tokens, SMLA_MEMORY_DEVICE);
    a.plan = st->plan;
    a.backend = SMLA_BACKEND_CUDA;
    a.stream = stream;
    a.split = split;
    return a;
}

static void must(smla_status st, const char *what)
{
    if (st != SMLA_OK) {
        fprintf(stderr, "%s: %s: %s\nFAIL\n", what, smla_status_string(st),
                smla_context_last_error(ctx));
        exit(1);
    }
}

/* Buffers, plan, a first step run directly (the split workspace reaches its size), then
 * the call captured alone in a graph and replayed once. */
static void shape_setup(shape_state *st, const shape *sh, const smla_test_pools *pools,
                        smla_rng *rng)
{
    memset(st, 0, sizeof *st);
    const smla_test_batch_config cfg = {sh->heads, sh->q_dtype, 128, 512, sh->tokens,
                                        sh->requests};
    smla_test_batch_create(&cfg, pools, rng, &st->batch);
    smla_device_batch_create(&st->batch, &st->dev);
    smla_test_batch_fill_queries(&st->batch, rng); /* q stays; indices and lens change */
    smla_device_batch_upload_queries(&st->batch, &st->dev, stream);
    const smla_plan_capacity capacity = {sh->tokens, sh->requests, 0};
    must(smla_plan_create(ctx, &capacity, SMLA_MEMORY_DEVICE, &st->plan), "plan");
    new_step(st, rng);
    const smla_attention_args a = call_args(st, sh->split);
    must(smla_attention(ctx, &a), "warm-up call");
    CUDA_CHECK(cudaStreamSynchronize(stream));
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const smla_status captured = smla_attention(ctx, &a);
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    must(captured, "captured call");
    CUDA_CHECK(cudaGraphInstantiate(&st->graph, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(cudaGraphLaunch(st->graph, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
}

static void shape_teardown(shape_state *st)
{
    CUDA_CHECK(cudaGraphExecDestroy(st->graph));
    smla_plan_destroy(st->plan);
    smla_device_batch_free(&st->dev);
    smla_test_batch_free(&st->batch);
}

/* One step: new inputs, replay, 8 sampled tokens against the reference. Returns 1 when
 * they match. */
static int step(shape_state *st, const shape *sh, smla_rng *rng, int64_t index)
{
    new_step(st, rng);
    const smla_test_batch *b = &st->batch;
    CUDA_CHECK(cudaMemsetAsync(st->dev.dev.out, 0xFF, st->dev.out_bytes, stream));
    CUDA_CHECK(cudaGraphLaunch(st->graph, stream));
    const size_t H = (size_t)sh->heads, row = H * SMLA_HEAD_DIM;
    int32_t tokens[SAMPLES];
    static uint16_t got[SAMPLES * 128 * SMLA_HEAD_DIM], want[SAMPLES * 128 * SMLA_HEAD_DIM];
    static float got_lse[SAMPLES * 128], want_lse[SAMPLES * 128];
    for (int i = 0; i < SAMPLES; i++) {
        tokens[i] = (int32_t)smla_rng_range(rng, 0, b->num_tokens - 1);
        CUDA_CHECK(cudaMemcpyAsync(got + i * row, st->dev.dev.out + (size_t)tokens[i] * row,
                                   row * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaMemcpyAsync(got_lse + i * H, st->dev.dev.lse + (size_t)tokens[i] * H,
                                   H * sizeof(float), cudaMemcpyDeviceToHost, stream));
    }
    must(smla_test_batch_reference(ctx, b, tokens, SAMPLES, want, want_lse), "reference");
    CUDA_CHECK(cudaStreamSynchronize(stream));
    smla_check_result r;
    smla_check_compare(got, want, (int64_t)row, got_lse, want_lse, (int64_t)H, SAMPLES,
                       sh->heads, &r);
    const int passed = smla_check_passed(&r, smla_check_tolerance(sh->q_dtype)) &&
                       r.rows_computed == SAMPLES * sh->heads;
    st->steps++;
    if (!passed) {
        st->mismatches++;
        fprintf(stderr, "step %lld (shape %d heads, %d requests, %d tokens): rel_fro %.2e "
                "worst_row %.2e (sample %lld head %lld, token %d) lse %.2e nan %lld "
                "inf_mismatch %lld\n",
                (long long)index, sh->heads, sh->requests, sh->tokens, r.rel_fro, r.worst_row,
                (long long)r.worst_token, (long long)r.worst_head,
                r.worst_token >= 0 ? tokens[r.worst_token] : -1, r.lse_err,
                (long long)r.nan_count, (long long)r.lse_inf_mismatch);
    }
    return passed;
}

static int64_t parse_steps(int argc, char **argv)
{
    int64_t steps = 500;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc && atoll(argv[i + 1]) >= 1) {
            steps = atoll(argv[++i]);
        } else {
            fprintf(stderr, "usage: gpu_test_soak [--steps N]\n");
            exit(2);
        }
    }
    return steps;
}

int main(int argc, char **argv)
{
    const int64_t steps = parse_steps(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines reach a log as they are printed */
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("gpu_test_soak"));
    CHECK_STATUS(smla_context_create(&ctx), SMLA_OK);
    if (!smla_context_has_cuda(ctx)) {
        fprintf(stderr, "no usable GPU\nFAIL\n");
        return 1;
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    smla_test_pools pools[NUM_FORMATS];
    memset(pools, 0, sizeof pools);
    for (int f = SMLA_KV_BF16; f <= SMLA_KV_FP8_DS_MLA; f++)
        smla_test_pools_create((smla_kv_format)f, 16384, 65536, 64, &rng, &pools[f]);
    static shape_state states[NUM_SHAPES];
    for (int s = 0; s < NUM_SHAPES; s++)
        shape_setup(&states[s], &shapes[s], &pools[shapes[s].kv_format], &rng);
    size_t free_before, free_after, total;
    CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
    int64_t mismatches = 0;
    for (int64_t i = 0; i < steps; i++) {
        const int s = (int)smla_rng_range(&rng, 0, NUM_SHAPES - 1);
        mismatches += !step(&states[s], &shapes[s], &rng, i);
        if ((i + 1) % 1000 == 0 || i + 1 == steps)
            printf("  %lld steps, %lld mismatches\n", (long long)(i + 1), (long long)mismatches);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
    for (int s = 0; s < NUM_SHAPES; s++) {
        printf("  shape %d (%3d heads, %2d requests, %4d tokens, split %d): %lld steps, %lld "
               "mismatches\n",
               s, shapes[s].heads, shapes[s].requests, shapes[s].tokens, (int)shapes[s].split,
               (long long)states[s].steps, (long long)states[s].mismatches);
        shape_teardown(&states[s]);
    }
    printf("  device free memory: %zu bytes before the steps, %zu after\n", free_before,
           free_after);
    CHECK(mismatches == 0);
    CHECK(free_before == free_after);
    for (int f = SMLA_KV_BF16; f <= SMLA_KV_FP8_DS_MLA; f++)
        smla_test_pools_free(&pools[f]);
    CUDA_CHECK(cudaStreamDestroy(stream));
    smla_context_destroy(ctx);
    const int rc = smla_test_finish("gpu_test_soak");
    printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}
