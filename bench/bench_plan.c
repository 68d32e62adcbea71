/* Host time of smla_plan_build on a host plan (no refresh launch): 256 requests, 240
 * one-token decodes then 16 FP8 prefills of 2..8192 tokens (fixed seed), cap 1024.
 * Prints the median, 10th and 90th percentile over samples of BUILDS_PER_SAMPLE builds. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "smla.h"

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

int main(void)
{
    static int32_t qsl[REQUESTS + 1], seq_lens[REQUESTS];
    static double samples[SAMPLES];
    int32_t tokens = make_batch(qsl, seq_lens);
    smla_context *ctx = NULL;
    smla_plan *plan = NULL;
    smla_plan_capacity capacity = {tokens, REQUESTS, 0};
    smla_batch batch = {REQUESTS, qsl, seq_lens, 0, SMLA_DTYPE_FP8_E4M3,
                        SMLA_SEGMENT_CAP_DEFAULT};
    if (smla_context_create(&ctx) != SMLA_OK ||
        smla_plan_create(ctx, &capacity, SMLA_MEMORY_HOST, &plan) != SMLA_OK) {
        fprintf(stderr, "bench_plan: setup failed: %s\n", smla_context_last_error(ctx));
        return 1;
    }
    for (int i = 0; i < WARMUP; i++)
        if (smla_plan_build(plan, &batch, NULL) != SMLA_OK) {
            fprintf(stderr, "bench_plan: build failed: %s\n", smla_context_last_error(ctx));
            return 1;
        }
    for (int s = 0; s < SAMPLES; s++) {
        double t0 = now_us();
        for (int i = 0; i < BUILDS_PER_SAMPLE; i++)
            smla_plan_build(plan, &batch, NULL);
        samples[s] = (now_us() - t0) / BUILDS_PER_SAMPLE;
    }
    qsort(samples, SAMPLES, sizeof samples[0], compare_doubles);
    smla_plan_view view;
    smla_plan_get_view(plan, &view);
    printf("bench_plan: host plan build, %d requests (%d decodes, %d prefills, %d prefill "
           "tokens, %d segments)\n",
           REQUESTS, view.num_decodes, REQUESTS - view.num_decodes, view.num_prefill_tokens,
           view.num_segments);
    printf("bench_plan: median %.3f us  p10 %.3f us  p90 %.3f us  (%d samples of %d builds)\n",
           samples[SAMPLES / 2], samples[SAMPLES / 10], samples[SAMPLES * 9 / 10], SAMPLES,
           BUILDS_PER_SAMPLE);
    smla_plan_destroy(plan);
    smla_context_destroy(ctx);
    return 0;
}
