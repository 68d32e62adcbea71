/* Timing (bench_timer.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench_timer.h"

#include <stdlib.h>
#include <time.h>

#ifdef SMLA_WITH_CUDA
#include <cuda_runtime.h>
#endif

double smla_wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double smla_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_doubles);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

#ifdef SMLA_WITH_CUDA

static smla_status cuda_failed(cudaError_t err, const char *what, smla_tool_error *error)
{
    return smla_tool_fail(error, SMLA_ERR_CUDA, "timing: %s: %s", what,
                          cudaGetErrorString(err));
}

/* A host function on the stream that holds it while the host enqueues every timed run:
 * the runs then execute back to back, and the events time the GPU, not the host's
 * per-call cost (validation and launch), which would otherwise show for short calls. */
static void CUDART_CB hold_stream(void *milliseconds)
{
    const long ms = *(const long *)milliseconds;
    const struct timespec hold = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&hold, NULL);
}

/* Records events[2i] and events[2i+1] around timed run i, then reads them after one
 * synchronisation, so the host never stalls the stream between runs. */
static smla_status timed_runs(smla_timed_call call, void *user, int first, int iters,
                              cudaStream_t stream, cudaEvent_t *events, double *ms,
                              smla_tool_error *error)
{
    long hold_ms = 5 + iters / 10; /* well above the host's enqueue time of the runs */
    cudaError_t err = cudaLaunchHostFunc(stream, hold_stream, &hold_ms);
    smla_status st = SMLA_OK;
    for (int i = 0; i < iters && st == SMLA_OK && err == cudaSuccess; i++) {
        err = cudaEventRecord(events[2 * i], stream);
        if (err == cudaSuccess)
            st = call(user, first + i, error);
        if (st == SMLA_OK && err == cudaSuccess)
            err = cudaEventRecord(events[2 * i + 1], stream);
    }
    /* always: hold_stream reads hold_ms */
    const cudaError_t sync = cudaStreamSynchronize(stream);
    if (st != SMLA_OK)
        return st;
    if (err == cudaSuccess)
        err = sync;
    for (int i = 0; i < iters && err == cudaSuccess; i++) {
        float elapsed = 0.0f;
        err = cudaEventElapsedTime(&elapsed, events[2 * i], events[2 * i + 1]);
        ms[i] = elapsed;
    }
    return err == cudaSuccess ? SMLA_OK : cuda_failed(err, "timed runs", error);
}

smla_status smla_cuda_median_time(smla_timed_call call, void *user, int warmup, int iters,
                                  void *stream, double *median_us, smla_tool_error *error)
{
    cudaStream_t s = (cudaStream_t)stream;
    cudaEvent_t *events = calloc(2 * (size_t)iters, sizeof *events);
    double *ms = calloc((size_t)iters, sizeof *ms);
    int created = 0;
    smla_status st = events && ms ? SMLA_OK
                                  : smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "timing: no memory");
    for (; st == SMLA_OK && created < 2 * iters; created++) {
        const cudaError_t err = cudaEventCreate(&events[created]);
        if (err != cudaSuccess)
            st = cuda_failed(err, "creating events", error);
    }
    for (int i = 0; i < warmup && st == SMLA_OK; i++)
        st = call(user, i, error);
    if (st == SMLA_OK)
        st = timed_runs(call, user, warmup, iters, s, events, ms, error);
    if (st == SMLA_OK)
        *median_us = 1e3 * smla_median(ms, iters);
    for (int i = 0; i < created; i++)
        if (events[i])
            cudaEventDestroy(events[i]);
    free(events);
    free(ms);
    return st;
}

#endif
