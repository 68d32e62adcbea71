/* smla demo: the main job on an embedded batch shaped like DeepSeek-V4.1-Flash under
 * tensor parallelism 4, on the best backend present, checked against the CPU reference. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_timer.h"
#include "check_compare.h"
#include "commands.h"
#include "workload.h"
#include "workload_device.h"
#include "workload_plan.h"

#define DEMO_SEED 20260415u
#define DEMO_HEADS 16
#define DEMO_WINDOW 128
#define DEMO_TOPK 512
#define DEMO_RATIO 4
#define DEMO_SWA_BLOCK 256
#define DEMO_EXTRA_BLOCK 64
#define DEMO_ITERS 10

/* Engine order: decodes first. */
static const smla_workload_request full_batch[] = {
    {1, 1024}, {1, 3000}, {1, 8191}, {1, 17000}, {1, 33333}, {1, 60000},
    {4096, 16384}, {700, 0}, {300, 2000},
};
/* The CPU runs the batch twice (plan and reference) on a few cores: the long prefill is
 * shortened and the fresh one too; the decodes and the prefix lengths stay. */
static const smla_workload_request cpu_batch[] = {
    {1, 1024}, {1, 3000}, {1, 8191}, {1, 17000}, {1, 33333}, {1, 60000},
    {1280, 16384}, {400, 0}, {300, 2000},
};
#define NUM_REQUESTS ((int32_t)(sizeof full_batch / sizeof full_batch[0]))

static const char usage_text[] =
    "usage: smla demo [--backend cpu|cuda]\n"
    "\n"
    "Runs sparse MLA attention on a built-in batch shaped like DeepSeek-V4.1-Flash at\n"
    "tensor parallelism 4: 16 heads, a 128-entry window plus 512 compressed entries per\n"
    "token (1 per 4 positions), FP8 E4M3 queries, fp8 KV caches in paged pools. Six decode\n"
    "requests (prefixes 1k-60k) come first, then prefills: 4096 tokens after a 16384\n"
    "prefix, 700 fresh, 300 after 2000. Indices are made as an engine makes them (window =\n"
    "the previous up-to-128 positions; compressed entries distinct, random, causal); data\n"
    "are random from a fixed seed. The batch runs through a batch plan (decodes, then\n"
    "prefill segments of at most 1024 tokens) and is checked against the CPU reference.\n"
    "\n"
    "  --backend  cuda: the GPU (time: median of 10 runs after a warm-up, CUDA events);\n"
    "             cpu: the CPU backend, on a smaller batch (the long prefill shortened to\n"
    "             1280 tokens, the fresh one to 400) to stay under ~30 s on 2 cores;\n"
    "             its plan run is compared with a run positioned by cu_seqlens_q/seq_lens,\n"
    "             which must be bit-identical (segmentation invariance).\n"
    "             Default: cuda when built with CUDA and a GPU is present, else cpu.\n"
    "\n"
    "Exit status: 0 when the result is within tolerance (FP8 queries: relative Frobenius\n"
    "error of out <= 3e-2, LSE error <= 1e-2, no NaN), 1 when not, 2 on an error.\n";

static int parse_options(int argc, char **argv, smla_backend *backend)
{
    *backend = SMLA_BACKEND_AUTO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--backend") || i + 1 == argc ||
            (strcmp(argv[i + 1], "cpu") && strcmp(argv[i + 1], "cuda"))) {
            fprintf(stderr, "smla demo: bad option '%s'%s\n\n%s", argv[i],
                    strcmp(argv[i], "--backend") ? "" : ": --backend takes cpu or cuda",
                    usage_text);
            return 2;
        }
        *backend = !strcmp(argv[++i], "cpu") ? SMLA_BACKEND_CPU : SMLA_BACKEND_CUDA;
    }
    return -1;
}

static void print_batch(const smla_workload_request *batch, const smla_workload *w)
{
    int32_t decodes = 0;
    while (decodes < NUM_REQUESTS && batch[decodes].query_len == 1)
        decodes++;
    printf("  requests: %d, decodes first: %d decodes after prefixes of", NUM_REQUESTS,
           decodes);
    for (int32_t r = 0; r < decodes; r++)
        printf(" %d", batch[r].prefix_len);
    printf("; prefills:");
    for (int32_t r = decodes; r < NUM_REQUESTS; r++) {
        printf("%s %d", r > decodes ? "," : "", batch[r].query_len);
        if (batch[r].prefix_len)
            printf(" after %d", batch[r].prefix_len);
        else
            printf(" fresh");
    }
    printf("\n  tokens: %d; active KV entries: %lld (%.1f per token); %.2f GFLOP; %.1f MB "
           "of KV rows gathered\n",
           w->num_tokens, (long long)w->active_entries,
           (double)w->active_entries / w->num_tokens, w->flops * 1e-9, w->kv_bytes * 1e-6);
}

static void print_plan(const smla_plan *plan)
{
    smla_plan_view v;
    if (smla_plan_get_view(plan, &v) != SMLA_OK)
        return;
    printf("  plan: %d decode tokens; %d prefill tokens in %d segments of at most %d "
           "(cap %d)\n",
           v.num_decode_tokens, v.num_prefill_tokens, v.num_segments, v.max_segment_len,
           v.segment_cap);
}

/* The reference's outputs: the workload's args writing into their own buffers. */
typedef struct reference {
    smla_attention_args args;
    uint16_t *out;
    float *lse;
    size_t out_bytes, lse_bytes;
} reference;

/* Runs the CPU reference on w's inputs, positioned by cu_seqlens_q/seq_lens. */
static smla_status run_reference(smla_context *ctx, const smla_workload *w, reference *ref,
                                 double *seconds)
{
    const size_t rows = (size_t)w->num_tokens * (size_t)w->args.q.shape[1];
    ref->out_bytes = rows * SMLA_HEAD_DIM * sizeof *ref->out;
    ref->lse_bytes = rows * sizeof *ref->lse;
    ref->out = malloc(ref->out_bytes);
    ref->lse = malloc(ref->lse_bytes);
    if (!ref->out || !ref->lse) {
        fprintf(stderr, "smla demo: no memory for the reference outputs\n");
        return SMLA_ERR_OUT_OF_MEMORY;
    }
    /* initial values as the workload's: out zeros, lse NaN */
    memset(ref->out, 0, ref->out_bytes);
    for (size_t i = 0; i < rows; i++)
        ref->lse[i] = NAN;
    ref->args = w->args;
    ref->args.out.data = ref->out;
    ref->args.lse.data = ref->lse;
    ref->args.backend = SMLA_BACKEND_CPU;
    const double start = smla_wall_seconds();
    const smla_status st = smla_attention(ctx, &ref->args);
    *seconds = smla_wall_seconds() - start;
    if (st != SMLA_OK)
        fprintf(stderr, "smla demo: reference: %s: %s\n", smla_status_string(st),
                smla_context_last_error(ctx));
    return st;
}

/* CPU: the plan run is the backend run; the positions run is the reference. */
static smla_status run_cpu(smla_context *ctx, smla_workload *w, reference *ref,
                           int *identical)
{
    smla_tool_error error = {{0}};
    smla_plan *plan = NULL;
    smla_status st = smla_workload_plan(ctx, w, SMLA_MEMORY_HOST, w->args.seq_lens.data, 1,
                                        SMLA_SEGMENT_CAP_DEFAULT, NULL, &plan, &error);
    if (st != SMLA_OK) {
        fprintf(stderr, "smla demo: %s\n", error.message);
        return st;
    }
    print_plan(plan);
    smla_attention_args args = smla_args_with_plan(&w->args, plan);
    args.backend = SMLA_BACKEND_CPU;
    const double start = smla_wall_seconds();
    st = smla_attention(ctx, &args);
    const double seconds = smla_wall_seconds() - start;
    smla_plan_destroy(plan);
    if (st != SMLA_OK) {
        fprintf(stderr, "smla demo: %s: %s\n", smla_status_string(st),
                smla_context_last_error(ctx));
        return st;
    }
    printf("  backend: cpu (%ld threads), positioned by the plan: %.2f s wall, %.3f "
           "TFLOP/s\n", sysconf(_SC_NPROCESSORS_ONLN), seconds, w->flops / seconds * 1e-12);
    double ref_seconds = 0.0;
    st = run_reference(ctx, w, ref, &ref_seconds);
    if (st != SMLA_OK)
        return st;
    printf("  reference: cpu, positioned by cu_seqlens_q/seq_lens: %.2f s wall\n",
           ref_seconds);
    *identical = !memcmp(ref->out, w->args.out.data, ref->out_bytes) &&
                 !memcmp(ref->lse, w->args.lse.data, ref->lse_bytes);
    printf("  segmentation invariance: plan run vs positions run: %s\n",
           *identical ? "bit-identical (out and lse)" : "DIFFERENT (they must be identical)");
    return SMLA_OK;
}

#ifdef SMLA_WITH_CUDA
typedef struct timed_demo {
    smla_context *ctx;
    const smla_device_workload *device;
} timed_demo;

static smla_status timed_run(void *user, int iteration, smla_tool_error *error)
{
    const timed_demo *t = user;
    return smla_device_workload_run(t->ctx, t->device, 0, error);
}
#endif

/* CUDA: the plan run on the GPU (timed), downloaded; the reference on the CPU. */
static smla_status run_cuda(smla_context *ctx, smla_workload *w, reference *ref)
{
#ifdef SMLA_WITH_CUDA
    smla_tool_error error = {{0}};
    smla_device_workload device;
    double median_us = 0.0, ref_seconds = 0.0;
    smla_status st = smla_device_workload_make(ctx, w, 1, 1, SMLA_SEGMENT_CAP_DEFAULT,
                                               &device, &error);
    if (st == SMLA_OK) {
        print_plan(device.plan);
        timed_demo t = {ctx, &device};
        st = smla_cuda_median_time(timed_run, &t, 1, DEMO_ITERS, NULL, &median_us, &error);
    }
    if (st == SMLA_OK)
        st = smla_device_args_download(&device.copies[0], &w->args, &error);
    if (st == SMLA_OK) {
        char name[256];
        smla_device_name(name, sizeof name);
        printf("  backend: cuda (%s), positioned by the plan: %.1f us (median of %d runs "
               "after a warm-up), %.1f TFLOP/s, %.0f GB/s of KV rows\n",
               name, median_us, DEMO_ITERS, w->flops / median_us * 1e-6,
               w->kv_bytes / median_us * 1e-3);
    } else {
        fprintf(stderr, "smla demo: cuda: %s\n", error.message);
    }
    smla_device_workload_free(&device);
    if (st == SMLA_OK)
        st = run_reference(ctx, w, ref, &ref_seconds);
    if (st == SMLA_OK)
        printf("  reference: cpu (%ld threads) on the same inputs: %.2f s wall\n",
               sysconf(_SC_NPROCESSORS_ONLN), ref_seconds);
    return st;
#else
    (void)ctx;
    (void)w;
    (void)ref;
    fprintf(stderr, "smla demo: this smla was built without CUDA\n");
    return SMLA_ERR_BACKEND;
#endif
}

static int verdict(const smla_workload *w, const reference *ref, int identical)
{
    smla_check_result r;
    const int heads = (int)w->args.q.shape[1];
    smla_check_compare(w->args.out.data, ref->out, (int64_t)heads * SMLA_HEAD_DIM,
                       w->args.lse.data, ref->lse, heads, w->num_tokens, heads, &r);
    const smla_check_limits limits = smla_check_tolerance(w->args.q.dtype);
    const int passed = smla_check_passed(&r, limits) && identical;
    printf("  error against the CPU reference: out relative Frobenius %.3e (limit %.0e), "
           "worst row %.3e; lse max abs %.3e (limit %.0e); NaN %lld\n",
           r.rel_fro, limits.out, r.worst_row, r.lse_err, limits.lse, (long long)r.nan_count);
    printf("smla demo: %s\n", passed ? "PASS" : "FAIL");
    return passed ? 0 : 1;
}

int smla_cmd_demo(int argc, char **argv)
{
    smla_backend backend;
    const int code = parse_options(argc, argv, &backend);
    if (code >= 0)
        return code;
    smla_context *ctx = NULL;
    if (smla_context_create(&ctx) != SMLA_OK) {
        fprintf(stderr, "smla demo: cannot create a context\n");
        return 2;
    }
    if (backend == SMLA_BACKEND_AUTO)
        backend = smla_context_has_cuda(ctx) ? SMLA_BACKEND_CUDA : SMLA_BACKEND_CPU;
    if (backend == SMLA_BACKEND_CUDA && !smla_context_has_cuda(ctx)) {
        fprintf(stderr, "smla demo: --backend cuda: %s\n",
#ifdef SMLA_WITH_CUDA
                "no usable GPU is present"
#else
                "this smla was built without CUDA"
#endif
        );
        smla_context_destroy(ctx);
        return 2;
    }
    const int on_cpu = backend == SMLA_BACKEND_CPU;
    const smla_workload_request *batch = on_cpu ? cpu_batch : full_batch;
    const smla_engine_spec spec = {DEMO_HEADS, DEMO_WINDOW, DEMO_TOPK, DEMO_RATIO,
                                   SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8, DEMO_SWA_BLOCK,
                                   DEMO_EXTRA_BLOCK, batch, NUM_REQUESTS, DEMO_SEED};
    printf("smla demo: DeepSeek-V4.1-Flash-shaped batch (TP4 shard): %d heads x 512, window "
           "%d + top-%d compressed entries (1 per %d positions), FP8 E4M3 queries, fp8 KV "
           "caches (blocks of %d / %d), seed %u\n",
           DEMO_HEADS, DEMO_WINDOW, DEMO_TOPK, DEMO_RATIO, DEMO_SWA_BLOCK, DEMO_EXTRA_BLOCK,
           DEMO_SEED);
    if (on_cpu)
        printf("  CPU backend: batch scaled down to stay under ~30 s on 2 cores: the 4096-token "
               "prefill shortened to %d, the 700-token one to %d\n",
               cpu_batch[6].query_len, cpu_batch[7].query_len);
    smla_workload w;
    smla_tool_error error = {{0}};
    const double start = smla_wall_seconds();
    smla_status st = smla_workload_engine(&spec, &w, &error);
    if (st != SMLA_OK) {
        fprintf(stderr, "smla demo: %s\n", error.message);
        smla_context_destroy(ctx);
        return 2;
    }
    print_batch(batch, &w);
    printf("  inputs generated in %.2f s\n", smla_wall_seconds() - start);
    reference ref = {0};
    int identical = 1;
    st = on_cpu ? run_cpu(ctx, &w, &ref, &identical) : run_cuda(ctx, &w, &ref);
    const int rc = st == SMLA_OK ? verdict(&w, &ref, identical) : 2;
    free(ref.out);
    free(ref.lse);
    smla_workload_free(&w);
    smla_context_destroy(ctx);
    return rc;
}
