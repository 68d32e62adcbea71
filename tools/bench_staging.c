/* smla bench --staging (bench_staging.h). */
#include "bench_staging.h"

#ifdef SMLA_WITH_CUDA

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "bench_timer.h"
#include "check_compare.h"
#include "check_problem.h"
#include "query_dtype.h"
#include "staging_gather.h"
#include "workload_device.h"

#define STAGED_BLOCK 64 /* block size of the workspace seen as a bf16 pool */

/* One case set up both ways. The staged call is the direct one with its pools replaced
 * by the workspace (both index sets point into it) and its indices by the workspace
 * rows: token t's column c is row t * entries + c, or -1 where the original column is
 * inactive or invalid (the gather leaves those rows unwritten). Lens and positions stay. */
typedef struct staging {
    smla_context *ctx;
    smla_device_workload device; /* one copy of the workload, and its plan */
    smla_attention_args direct, staged;
    smla_staging_source swa, extra;
    int64_t tokens;
    int32_t entries;
    size_t workspace_bytes, out_bytes, lse_bytes;
    void *workspace;
    int32_t *staged_indices;
    uint16_t *staged_out;
    float *staged_lse;
} staging;

typedef enum staging_step { STEP_GATHER, STEP_STAGED, STEP_STAGING, STEP_DIRECT } staging_step;

typedef struct staging_times {
    double gather_us, staged_us, staging_us, direct_us;
} staging_times;

typedef struct staging_outcome {
    int32_t cap; /* the plan's segment cap; -1 without a plan */
    double workspace_bytes;
    staging_times t;
    smla_check_result check; /* staged output against the direct one */
    int bit_identical, agrees;
} staging_outcome;

static smla_status cuda_fail(cudaError_t err, const char *what, smla_tool_error *error)
{
    return smla_tool_fail(error, SMLA_ERR_CUDA, "staging: %s: %s", what,
                          cudaGetErrorString(err));
}

static int64_t row_stride(const smla_tensor *t)
{
    return t->stride[0] ? t->stride[0] : t->shape[1];
}

static int32_t index_width(const smla_tensor *t)
{
    return t->data ? (int32_t)t->shape[1] : 0;
}

static smla_staging_source source(const smla_kv_pool *pool, const smla_tensor *indices,
                                  const smla_tensor *lens)
{
    const smla_staging_source s = {*pool, indices->data, row_stride(indices),
                                   index_width(indices), lens->data};
    return s;
}

/* Whether column col of token t of a host index set names a row the gather writes. */
static int staged_column(const smla_kv_pool *pool, const smla_tensor *indices,
                         const smla_tensor *lens, int64_t t, int32_t col)
{
    const int32_t *len = lens->data;
    if (len && col >= len[t * (lens->stride[0] ? lens->stride[0] : 1)])
        return 0;
    const int32_t slot = ((const int32_t *)indices->data)[t * row_stride(indices) + col];
    return slot >= 0 && slot < pool->num_blocks * pool->block_size;
}

/* The staged call's indices, from the host workload's. */
static smla_status upload_staged_indices(staging *s, const smla_attention_args *host,
                                         smla_tool_error *error)
{
    const size_t count = (size_t)s->tokens * (size_t)s->entries;
    int32_t *rows = malloc(count * sizeof *rows);
    if (!rows)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "staging: no memory for indices");
    const int32_t swa_width = index_width(&host->swa_indices);
    for (int64_t t = 0; t < s->tokens; t++)
        for (int32_t c = 0; c < s->entries; c++) {
            const int in_swa = c < swa_width;
            const int staged =
                in_swa ? staged_column(&host->swa, &host->swa_indices, &host->swa_lens, t, c)
                       : staged_column(&host->extra, &host->extra_indices, &host->extra_lens, t,
                                       c - swa_width);
            const int64_t row = t * s->entries + c;
            rows[row] = staged ? (int32_t)row : -1;
        }
    cudaError_t err = cudaMalloc((void **)&s->staged_indices, count * sizeof *rows);
    if (err == cudaSuccess)
        err = cudaMemcpy(s->staged_indices, rows, count * sizeof *rows, cudaMemcpyHostToDevice);
    free(rows);
    return err == cudaSuccess ? SMLA_OK : cuda_fail(err, "staged indices", error);
}

static smla_tensor staged_view(int32_t *first, const smla_tensor *original, int32_t entries)
{
    smla_tensor v = *original;
    v.data = first;
    v.stride[0] = entries;
    v.stride[1] = 1;
    return v;
}

static smla_status staging_make(smla_context *ctx, const smla_workload *w,
                                const smla_bench_case *c, const smla_staging_run *run,
                                staging *s, smla_tool_error *error)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    smla_status st = smla_device_workload_make(ctx, w, 1, smla_bench_decode_threshold(c),
                                               run->segment_cap, &s->device, error);
    if (st != SMLA_OK)
        return st;
    const smla_attention_args *d = &s->device.copies[0].args;
    s->direct = s->device.runs[0];
    s->direct.split = run->split;
    s->swa = source(&d->swa, &d->swa_indices, &d->swa_lens);
    s->extra = source(&d->extra, &d->extra_indices, &d->extra_lens);
    s->tokens = w->num_tokens;
    s->entries = s->swa.width + s->extra.width;
    s->out_bytes = (size_t)w->num_tokens * (size_t)d->q.shape[1] * SMLA_HEAD_DIM * 2;
    s->lse_bytes = d->lse.data ? (size_t)w->num_tokens * (size_t)d->q.shape[1] * 4 : 0;
    const int64_t blocks = (s->tokens * s->entries + STAGED_BLOCK - 1) / STAGED_BLOCK;
    const smla_kv_pool pool = smla_kv_pool_make(NULL, SMLA_KV_BF16, blocks, STAGED_BLOCK,
                                                SMLA_MEMORY_DEVICE);
    s->workspace_bytes = (size_t)(blocks * pool.block_stride);
    cudaError_t err = cudaMalloc(&s->workspace, s->workspace_bytes);
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->staged_out, s->out_bytes);
    if (err == cudaSuccess && s->lse_bytes)
        err = cudaMalloc((void **)&s->staged_lse, s->lse_bytes);
    if (err != cudaSuccess)
        return cuda_fail(err, "workspace and outputs", error);
    st = upload_staged_indices(s, &w->args, error);
    if (st != SMLA_OK)
        return st;
    s->staged = s->direct;
    s->staged.swa = pool;
    s->staged.swa.data = s->workspace;
    s->staged.swa_indices = staged_view(s->staged_indices, &d->swa_indices, s->entries);
    if (s->extra.width > 0) {
        s->staged.extra = s->staged.swa;
        s->staged.extra_indices =
            staged_view(s->staged_indices + s->swa.width, &d->extra_indices, s->entries);
    }
    s->staged.out.data = s->staged_out;
    s->staged.lse.data = s->staged_lse;
    return SMLA_OK;
}

static void staging_free(staging *s)
{
    cudaFree(s->workspace);
    cudaFree(s->staged_indices);
    cudaFree(s->staged_out);
    cudaFree(s->staged_lse);
    smla_device_workload_free(&s->device);
}

static smla_status attend(const staging *s, const smla_attention_args *args,
                          smla_tool_error *error)
{
    const smla_status st = smla_attention(s->ctx, args);
    return st == SMLA_OK ? SMLA_OK
                         : smla_tool_fail(error, st, "%s: %s", smla_status_string(st),
                                          smla_context_last_error(s->ctx));
}

static smla_status gather(const staging *s, smla_tool_error *error)
{
    const cudaError_t err = smla_staging_gather(&s->swa, &s->extra, s->tokens, s->workspace,
                                                (cudaStream_t)s->direct.stream);
    return err == cudaSuccess ? SMLA_OK : cuda_fail(err, "gather", error);
}

typedef struct timed_step {
    const staging *s;
    staging_step step;
} timed_step;

static smla_status run_step(void *user, int iteration, smla_tool_error *error)
{
    const timed_step *t = user;
    switch (t->step) {
    case STEP_GATHER:
        return gather(t->s, error);
    case STEP_STAGED:
        return attend(t->s, &t->s->staged, error);
    case STEP_STAGING: {
        const smla_status st = gather(t->s, error);
        return st == SMLA_OK ? attend(t->s, &t->s->staged, error) : st;
    }
    default:
        return attend(t->s, &t->s->direct, error);
    }
}

static smla_status time_steps(const staging *s, const smla_staging_run *run, staging_times *t,
                              smla_tool_error *error)
{
    double *const results[] = {&t->gather_us, &t->staged_us, &t->staging_us, &t->direct_us};
    smla_status st = SMLA_OK;
    for (int step = STEP_GATHER; step <= STEP_DIRECT && st == SMLA_OK; step++) {
        timed_step ts = {s, (staging_step)step};
        st = smla_cuda_median_time(run_step, &ts, run->warmup, run->iters, s->direct.stream,
                                   results[step], error);
    }
    return st;
}

/* Both paths once from poisoned outputs; the staged output against the direct one. */
static smla_status compare_paths(const staging *s, int heads, smla_check_result *r,
                                 int *bit_identical, smla_tool_error *error)
{
    uint16_t *out[2] = {malloc(s->out_bytes), malloc(s->out_bytes)};
    float *lse[2] = {malloc(s->lse_bytes + 4), malloc(s->lse_bytes + 4)};
    float *poison = malloc(s->lse_bytes + 4);
    smla_status st = out[0] && out[1] && lse[0] && lse[1] && poison
                         ? SMLA_OK
                         : smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "staging: no memory");
    const uint32_t lse_poison = SMLA_CHECK_LSE_POISON;
    for (size_t i = 0; st == SMLA_OK && i < s->lse_bytes / 4; i++)
        memcpy(&poison[i], &lse_poison, 4);
    const smla_attention_args *calls[2] = {&s->direct, &s->staged};
    cudaError_t err = cudaSuccess;
    for (int i = 0; i < 2 && st == SMLA_OK && err == cudaSuccess; i++) {
        err = cudaMemset(calls[i]->out.data, 0xFF, s->out_bytes); /* SMLA_CHECK_OUT_POISON */
        if (err == cudaSuccess && s->lse_bytes)
            err = cudaMemcpy(calls[i]->lse.data, poison, s->lse_bytes, cudaMemcpyHostToDevice);
        if (err == cudaSuccess && i == 1)
            st = gather(s, error);
        if (err == cudaSuccess && st == SMLA_OK)
            st = attend(s, calls[i], error);
        if (err == cudaSuccess && st == SMLA_OK)
            err = cudaMemcpy(out[i], calls[i]->out.data, s->out_bytes, cudaMemcpyDeviceToHost);
        if (err == cudaSuccess && st == SMLA_OK && s->lse_bytes)
            err = cudaMemcpy(lse[i], calls[i]->lse.data, s->lse_bytes, cudaMemcpyDeviceToHost);
    }
    if (st == SMLA_OK && err != cudaSuccess)
        st = cuda_fail(err, "running both paths", error);
    if (st == SMLA_OK) {
        const int with_lse = s->lse_bytes > 0;
        smla_check_compare(out[1], out[0], (int64_t)heads * SMLA_HEAD_DIM,
                           with_lse ? lse[1] : NULL, with_lse ? lse[0] : NULL, heads, s->tokens,
                           heads, r);
        *bit_identical = !memcmp(out[0], out[1], s->out_bytes) &&
                         !memcmp(lse[0], lse[1], s->lse_bytes);
    }
    for (int i = 0; i < 2; i++) {
        free(out[i]);
        free(lse[i]);
    }
    free(poison);
    return st;
}

void smla_bench_staging_header(void)
{
    printf("%-26s %-4s %6s %5s %8s %5s %5s %9s %9s %10s %9s %7s %8s %8s %6s  %s\n", "case", "q",
           "tokens", "heads", "entries", "cap", "split", "gather_us", "bf16_us", "staging_us",
           "direct_us", "speedup", "stagTF/s", "dirTF/s", "ws_GB", "check");
}

static double tflops(const smla_workload *w, double us)
{
    return w->flops / us * 1e-6;
}

static void print_row(const smla_bench_case *c, const smla_workload *w,
                      const smla_staging_run *run, const staging_outcome *o)
{
    const staging_times *t = &o->t;
    char cap[16], check[48];
    smla_bench_cap_text(o->cap, cap, sizeof cap);
    if (o->bit_identical)
        snprintf(check, sizeof check, "identical");
    else
        snprintf(check, sizeof check, "%s rel %.1e", o->agrees ? "agrees" : "DIFFERS",
                 o->check.rel_fro);
    printf("%-26s %-4s %6d %5d %8.1f %5s %5s %9.1f %9.1f %10.1f %9.1f %7.2f %8.1f %8.1f %6.2f  "
           "%s\n",
           c->name, smla_query_dtype_name(c->q_dtype), w->num_tokens, c->heads,
           (double)w->active_entries / w->num_tokens, cap, smla_bench_split_name(run->split),
           t->gather_us, t->staged_us, t->staging_us, t->direct_us,
           t->staging_us / t->direct_us, tflops(w, t->staging_us), tflops(w, t->direct_us),
           o->workspace_bytes * 1e-9, check);
    fflush(stdout);
}

static cJSON *json_row(const smla_bench_case *c, const smla_workload *w,
                       const smla_staging_run *run, const staging_outcome *o)
{
    const staging_times *t = &o->t;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", c->name);
    cJSON_AddStringToObject(j, "mode", "staging");
    cJSON_AddStringToObject(j, "q", smla_query_dtype_name(c->q_dtype));
    cJSON_AddStringToObject(j, "kv", smla_kv_format_name(c->kv_format));
    cJSON_AddNumberToObject(j, "heads", c->heads);
    cJSON_AddNumberToObject(j, "tokens", w->num_tokens);
    cJSON_AddNumberToObject(j, "entries_per_token", (double)w->active_entries / w->num_tokens);
    cJSON_AddNumberToObject(j, "flops", w->flops);
    cJSON_AddStringToObject(j, "split", smla_bench_split_name(run->split));
    cJSON_AddNumberToObject(j, "segment_cap", o->cap);
    cJSON_AddNumberToObject(j, "workspace_bytes", o->workspace_bytes);
    cJSON_AddNumberToObject(j, "gather_us", t->gather_us);
    cJSON_AddNumberToObject(j, "staged_bf16_us", t->staged_us);
    cJSON_AddNumberToObject(j, "staging_us", t->staging_us);
    cJSON_AddNumberToObject(j, "direct_us", t->direct_us);
    cJSON_AddNumberToObject(j, "speedup", t->staging_us / t->direct_us);
    cJSON_AddNumberToObject(j, "staging_tflops", tflops(w, t->staging_us));
    cJSON_AddNumberToObject(j, "direct_tflops", tflops(w, t->direct_us));
    cJSON_AddBoolToObject(j, "bit_identical", o->bit_identical);
    cJSON_AddBoolToObject(j, "agrees", o->agrees);
    cJSON_AddNumberToObject(j, "rel_fro", o->check.rel_fro);
    cJSON_AddNumberToObject(j, "worst_row", o->check.worst_row);
    cJSON_AddNumberToObject(j, "lse_err", o->check.lse_err);
    return j;
}

/* Sets up the case, compares the two paths once, then times them. */
static smla_status measure(smla_context *ctx, const smla_bench_case *c, const smla_workload *w,
                           const smla_staging_run *run, staging *s, staging_outcome *o,
                           smla_tool_error *error)
{
    if (c->kv_format != SMLA_KV_FP8_DS_MLA)
        return smla_tool_fail(error, SMLA_ERR_KV_FORMAT, "staging needs fp8_ds_mla caches, not %s",
                              smla_kv_format_name(c->kv_format));
    smla_status st = staging_make(ctx, w, c, run, s, error);
    if (st == SMLA_OK)
        st = compare_paths(s, c->heads, &o->check, &o->bit_identical, error);
    if (st == SMLA_OK)
        st = time_steps(s, run, &o->t, error);
    smla_plan_view view;
    o->cap = -1;
    if (st == SMLA_OK && s->device.plan && smla_plan_get_view(s->device.plan, &view) == SMLA_OK)
        o->cap = view.segment_cap;
    o->workspace_bytes = (double)s->workspace_bytes;
    /* Both paths within the query type's tolerance of each other: they may compute
       differently (FP8 queries may run on FP8 tensor cores straight from the cache). */
    o->agrees = smla_check_passed(&o->check, smla_check_tolerance(c->q_dtype));
    return st;
}

int smla_bench_staging_case(smla_context *ctx, const smla_bench_case *c,
                            const smla_workload *w, const smla_staging_run *run,
                            cJSON *rows)
{
    staging s;
    staging_outcome o;
    memset(&s, 0, sizeof s);
    memset(&o, 0, sizeof o);
    smla_tool_error error = {{0}};
    const smla_status st = measure(ctx, c, w, run, &s, &o, &error);
    staging_free(&s);
    if (st != SMLA_OK) {
        printf("%-26s %-4s staging failed: %s\n", c->name, smla_query_dtype_name(c->q_dtype),
               error.message);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", c->name);
        cJSON_AddStringToObject(j, "mode", "staging");
        cJSON_AddStringToObject(j, "error", error.message);
        cJSON_AddItemToArray(rows, j);
        return 1;
    }
    print_row(c, w, run, &o);
    cJSON_AddItemToArray(rows, json_row(c, w, run, &o));
    return !o.agrees;
}

#endif
