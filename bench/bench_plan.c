/* Host time of smla_plan_build: 256 requests, 240 one-token decodes then 16 FP8 prefills
 * of 2..8192 tokens (fixed seed), cap 1024.
 *  - host plan (no refresh launch): median over samples of BUILDS_PER_SAMPLE builds;
 *  - device plan, when a GPU is present: one build per sample on an idle stream (staging,
 *    seq_lens check, copy and refresh launch; the device work is not timed). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "smla.h"
#ifdef SMLA_WITH_CUDA
#include <cuda_runtime.h>
#endif

enum { DECODES = 240, PREFILLS = 16, REQUESTS = DECODES + PREFILLS };
enum { SAMPLES = 4001, BUILDS_PER_SAMPLE = 64, WARMUP = 2000 };

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *samples, int builds_per_sample)
{
    qsort(samples, SAMPLES, sizeof samples[0], compare_doubles);
    printf("bench_plan: %s: median %.3f us  p10 %.3f us  p90 %.3f us  (%d samples of %d "
           "build%s)\n", what, samples[SAMPLES / 2], samples[SAMPLES / 10],
           samples[SAMPLES * 9 / 10], SAMPLES, builds_per_sample,
           builds_per_sample > 1 ? "s" : "");
}

/* query_start_loc and seq_lens of the batch; returns the total token count. */
static int32_t make_batch(int32_t *qsl, int32_t *seq_lens)
{
    uint64_t state = 0x5eed;
    qsl[0] = 0;
    for (int r = 0; r < REQUESTS; r++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        int32_t q = r < DECODES ? 1 : 2 + (int32_t)((state >> 33) % 8191);
        qsl[r + 1] = qsl[r] + q;
        seq_lens[r] = q + (int32_t)((state >> 40) % 100000);
    }
    return qsl[REQUESTS];
}

static int fail(const char *what, smla_context *ctx)
{
    fprintf(stderr, "bench_plan: %s failed: %s\n", what, smla_context_last_error(ctx));
    return 1;
}

static int bench_host(smla_context *ctx, const smla_plan_capacity *capacity,
                      const smla_batch *batch, double *samples)
{
    smla_plan *plan = NULL;
    if (smla_plan_create(ctx, capacity, SMLA_MEMORY_HOST, &plan) != SMLA_OK)
        return fail("host plan create", ctx);
    for (int i = 0; i < WARMUP; i++)
        if (smla_plan_build(plan, batch, NULL) != SMLA_OK)
            return fail("host plan build", ctx);
    for (int s = 0; s < SAMPLES; s++) {
        double t0 = now_us();
        for (int i = 0; i < BUILDS_PER_SAMPLE; i++)
            smla_plan_build(plan, batch, NULL);
        samples[s] = (now_us() - t0) / BUILDS_PER_SAMPLE;
    }
    smla_plan_view view;
    smla_plan_get_view(plan, &view);
    printf("bench_plan: %d requests (%d decodes, %d prefills, %d prefill tokens, %d "
           "segments)\n", REQUESTS, view.num_decodes, REQUESTS - view.num_decodes,
           view.num_prefill_tokens, view.num_segments);
    report("host plan build", samples, BUILDS_PER_SAMPLE);
    smla_plan_destroy(plan);
    return 0;
}

#ifdef SMLA_WITH_CUDA
static int bench_device(smla_context *ctx, const smla_plan_capacity *capacity,
                        smla_batch batch, double *samples)
{
    smla_plan *plan = NULL;
    int32_t *d_seq_lens = NULL;
    cudaStream_t stream = NULL;
    if (cudaMalloc((void **)&d_seq_lens, REQUESTS * sizeof(int32_t)) != cudaSuccess ||
        cudaMemcpy(d_seq_lens, batch.seq_lens, REQUESTS * sizeof(int32_t),
                   cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "bench_plan: CUDA setup failed\n");
        return 1;
    }
    batch.seq_lens = d_seq_lens;
    if (smla_plan_create(ctx, capacity, SMLA_MEMORY_DEVICE, &plan) != SMLA_OK)
        return fail("device plan create", ctx);
    for (int s = -WARMUP / 10; s < SAMPLES; s++) {
        cudaStreamSynchronize(stream);
        double t0 = now_us();
        if (smla_plan_build(plan, &batch, stream) != SMLA_OK)
            return fail("device plan build", ctx);
        if (s >= 0)
            samples[s] = now_us() - t0;
    }
    cudaStreamSynchronize(stream);
    report("device plan build (host side)", samples, 1);
    smla_plan_destroy(plan);
    cudaStreamDestroy(stream);
    cudaFree(d_seq_lens);
    return 0;
}
#endif

int main(void)
{
    static int32_t qsl[REQUESTS + 1], seq_lens[REQUESTS];
    static double samples[SAMPLES];
    int32_t tokens = make_batch(qsl, seq_lens);
    smla_context *ctx = NULL;
    if (smla_context_create(&ctx) != SMLA_OK)
        return 1;
    smla_plan_capacity capacity = {tokens, REQUESTS, 0};
    smla_batch batch = {REQUESTS, qsl, seq_lens, 0, SMLA_DTYPE_FP8_E4M3,
                        SMLA_SEGMENT_CAP_DEFAULT};
    int rc = bench_host(ctx, &capacity, &batch, samples);
#ifdef SMLA_WITH_CUDA
    if (rc == 0 && smla_context_has_cuda(ctx))
        rc = bench_device(ctx, &capacity, batch, samples);
#endif
    smla_context_destroy(ctx);
    return rc;
}
