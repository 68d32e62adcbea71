/* A workload's buffers and random data (workload_fill.h). */
#define _POSIX_C_SOURCE 200809L
#include "workload_fill.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN 64
/* Values are drawn from a table of this many N(0,1) samples, 16 random bits per value:
 * fresh normals for every one of up to 5e8 q values would dominate the setup time. */
#define TABLE_BITS 16
#define TABLE_SIZE (1u << TABLE_BITS)

void *smla_workload_buffer(smla_workload *w, size_t bytes)
{
    if (w->num_buffers == SMLA_WORKLOAD_BUFFERS || bytes == 0 || bytes > SIZE_MAX - ALIGN)
        return NULL;
    /* calloc leaves large buffers to lazily zeroed pages; align by hand. */
    unsigned char *raw = calloc(1, bytes + ALIGN);
    if (!raw)
        return NULL;
    w->buffers[w->num_buffers++] = raw;
    w->total_bytes += bytes;
    return raw + (ALIGN - (uintptr_t)raw % ALIGN);
}

smla_kv_pool smla_workload_pool(smla_workload *w, smla_kv_format format, int64_t num_blocks,
                                int32_t block_size)
{
    smla_kv_pool pool = smla_kv_pool_make(NULL, format, num_blocks, block_size,
                                          SMLA_MEMORY_HOST);
    if (num_blocks > 0 && pool.block_stride > 0 &&
        (uint64_t)num_blocks <= SIZE_MAX / (uint64_t)pool.block_stride)
        pool.data = smla_workload_buffer(w, (size_t)num_blocks * (size_t)pool.block_stride);
    return pool;
}

/* dst[i] = table[16 random bits] for i < n, elements of size bytes. Called with constant
 * sizes so that the copies inline. */
static inline void draw(smla_tool_rng *rng, const void *table, size_t size, void *dst,
                        size_t n)
{
    const unsigned char *t = table;
    unsigned char *d = dst;
    uint64_t r = 0;
    for (size_t i = 0; i < n; i++, r >>= 16) {
        if (i % 4 == 0)
            r = smla_tool_rng_next(rng);
        memcpy(d + i * size, t + (size_t)(r & 0xFFFF) * size, size);
    }
}

/* 1 for every pool row that a valid id of the index set names. */
static void mark_rows(const smla_tensor *indices, int64_t pool_rows, unsigned char *used)
{
    const int32_t *ids = indices->data;
    for (int64_t t = 0; t < indices->shape[0]; t++)
        for (int64_t j = 0; j < indices->shape[1]; j++) {
            const int32_t id = ids[t * indices->stride[0] + j];
            if (id >= 0 && id < pool_rows)
                used[id] = 1;
        }
}

/* Pool rows are filled by threads in fixed chunks of slots, each chunk from its own
 * random stream, so the data do not depend on the thread count. */
#define FILL_CHUNK 4096
#define MAX_FILL_THREADS 64

typedef struct fill_job {
    const smla_kv_pool *pool;
    const unsigned char *used;
    const float *normals;
    uint64_t seed;
    int64_t rows;
    int thread, num_threads;
    int started; /* on its own pthread */
    smla_status status;
    pthread_t id;
} fill_job;

static void *fill_chunks(void *arg)
{
    fill_job *job = arg;
    float row[SMLA_HEAD_DIM];
    const int64_t chunks = (job->rows + FILL_CHUNK - 1) / FILL_CHUNK;
    for (int64_t c = job->thread; c < chunks && job->status == SMLA_OK; c += job->num_threads) {
        smla_tool_rng rng;
        smla_tool_rng_seed(&rng, job->seed + (uint64_t)c * 0x9e3779b97f4a7c15ull);
        const int64_t end = (c + 1) * FILL_CHUNK < job->rows ? (c + 1) * FILL_CHUNK : job->rows;
        for (int64_t slot = c * FILL_CHUNK; slot < end && job->status == SMLA_OK; slot++) {
            if (!job->used[slot])
                continue;
            draw(&rng, job->normals, sizeof(float), row, SMLA_HEAD_DIM);
            job->status = smla_kv_pack_slot(job->pool, slot, row);
        }
    }
    return NULL;
}

static int fill_thread_count(int64_t rows)
{
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const int64_t chunks = (rows + FILL_CHUNK - 1) / FILL_CHUNK;
    int64_t n = online > 0 ? online : 1;
    n = n < chunks ? n : chunks;
    n = n < MAX_FILL_THREADS ? n : MAX_FILL_THREADS;
    return n > 0 ? (int)n : 1;
}

/* Random rows for every slot of pool that indices names. */
static smla_status fill_pool(const smla_kv_pool *pool, const smla_tensor *indices,
                             const float *normals, smla_tool_rng *rng, smla_tool_error *error)
{
    if (!pool->data)
        return SMLA_OK;
    const int64_t rows = pool->num_blocks * pool->block_size;
    unsigned char *used = calloc((size_t)rows, 1);
    if (!used)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "workload: no memory for %lld "
                              "row marks", (long long)rows);
    mark_rows(indices, rows, used);
    fill_job jobs[MAX_FILL_THREADS];
    const int n = fill_thread_count(rows);
    const uint64_t seed = smla_tool_rng_next(rng);
    for (int i = 0; i < n; i++) {
        jobs[i] = (fill_job){pool, used, normals, seed, rows, i, n, 0, SMLA_OK, 0};
        /* Job 0 runs here, and so does any whose thread cannot start. */
        jobs[i].started = i > 0 && pthread_create(&jobs[i].id, NULL, fill_chunks, &jobs[i]) == 0;
    }
    smla_status st = SMLA_OK;
    for (int i = 0; i < n; i++) {
        if (jobs[i].started)
            pthread_join(jobs[i].id, NULL);
        else
            fill_chunks(&jobs[i]);
        if (st == SMLA_OK)
            st = jobs[i].status;
    }
    free(used);
    if (st != SMLA_OK)
        return smla_tool_fail(error, st, "workload: packing a KV row: %s",
                              smla_status_string(st));
    return SMLA_OK;
}

/* q [T][heads][512]: the normals converted to q_dtype, then drawn. */
static smla_status fill_q(smla_workload *w, int32_t heads, smla_dtype q_dtype,
                          const float *normals, smla_tool_rng *rng, smla_tool_error *error)
{
    const size_t count = (size_t)w->num_tokens * (size_t)heads * SMLA_HEAD_DIM;
    const size_t size = smla_dtype_size(q_dtype);
    void *q = smla_workload_buffer(w, count * size);
    void *codes = malloc(TABLE_SIZE * size);
    if (!q || !codes) {
        free(codes);
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "workload: no memory for q "
                              "(%zu values)", count);
    }
    if (q_dtype == SMLA_DTYPE_BF16) {
        uint16_t *c = codes;
        for (size_t i = 0; i < TABLE_SIZE; i++)
            c[i] = smla_float_to_bf16(normals[i]);
        draw(rng, codes, sizeof(uint16_t), q, count);
    } else {
        uint8_t *c = codes;
        for (size_t i = 0; i < TABLE_SIZE; i++)
            c[i] = smla_float_to_e4m3(normals[i]);
        draw(rng, codes, sizeof(uint8_t), q, count);
    }
    free(codes);
    w->args.q = smla_tensor_3d(q, q_dtype, w->num_tokens, heads, SMLA_HEAD_DIM,
                               SMLA_MEMORY_HOST);
    return SMLA_OK;
}

/* sinks ~ N(0,1), out zeros, lse NaN (rows the call does not compute stay visible). */
static smla_status make_sinks_and_outputs(smla_workload *w, int32_t heads, smla_tool_rng *rng,
                                          smla_tool_error *error)
{
    const size_t rows = (size_t)w->num_tokens * (size_t)heads;
    float *sinks = smla_workload_buffer(w, (size_t)heads * sizeof(float));
    void *out = smla_workload_buffer(w, (rows ? rows : 1) * SMLA_HEAD_DIM * sizeof(uint16_t));
    float *lse = smla_workload_buffer(w, (rows ? rows : 1) * sizeof(float));
    if (!sinks || !out || !lse)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "workload: no memory for the "
                              "outputs (%zu rows)", rows);
    for (int32_t h = 0; h < heads; h++)
        sinks[h] = (float)smla_tool_rng_normal(rng);
    for (size_t i = 0; i < rows; i++)
        lse[i] = NAN;
    smla_attention_args *a = &w->args;
    a->sinks = smla_tensor_1d(sinks, SMLA_DTYPE_F32, heads, SMLA_MEMORY_HOST);
    a->out = smla_tensor_3d(out, SMLA_DTYPE_BF16, w->num_tokens, heads, SMLA_HEAD_DIM,
                            SMLA_MEMORY_HOST);
    a->lse = smla_tensor_2d(lse, SMLA_DTYPE_F32, w->num_tokens, heads, SMLA_MEMORY_HOST);
    return SMLA_OK;
}

smla_status smla_workload_finish(smla_workload *w, int32_t heads, smla_dtype q_dtype,
                                 int64_t active_entries, smla_tool_rng *rng,
                                 smla_tool_error *error)
{
    float *normals = malloc(TABLE_SIZE * sizeof *normals);
    if (!normals)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "workload: no memory");
    for (size_t i = 0; i < TABLE_SIZE; i++)
        normals[i] = (float)smla_tool_rng_normal(rng);
    smla_attention_args *a = &w->args;
    smla_status st = fill_q(w, heads, q_dtype, normals, rng, error);
    if (st == SMLA_OK)
        st = make_sinks_and_outputs(w, heads, rng, error);
    if (st == SMLA_OK)
        st = fill_pool(&a->swa, &a->swa_indices, normals, rng, error);
    if (st == SMLA_OK)
        st = fill_pool(&a->extra, &a->extra_indices, normals, rng, error);
    free(normals);
    a->bmm1_scale = (float)(1.0 / sqrt(576.0)); /* DeepSeek's softmax scale */
    a->bmm2_scale = 1.0f;
    a->backend = SMLA_BACKEND_AUTO;
    w->active_entries = active_entries;
    w->flops = 2.0 * heads * (2.0 * SMLA_HEAD_DIM) * (double)active_entries;
    w->kv_bytes = (double)smla_kv_token_bytes(a->swa.format) * (double)active_entries;
    return st;
}

void smla_workload_free(smla_workload *w)
{
    for (int i = 0; i < w->num_buffers; i++)
        free(w->buffers[i]);
    memset(w, 0, sizeof *w);
}
