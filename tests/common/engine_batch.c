/* Random engine-style batches (engine_batch.h). */
#include "engine_batch.h"

#include <math.h>
#include <string.h>

static void *alloc_or_die(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "engine_batch: out of host memory (%zu bytes)\nFAIL\n", bytes);
        exit(1);
    }
    return p;
}

static smla_kv_pool random_pool(smla_kv_format format, int64_t rows, int32_t block_size,
                                smla_rng *rng)
{
    const int64_t blocks = (rows + block_size - 1) / block_size;
    smla_kv_pool pool = smla_kv_pool_make(NULL, format, blocks, block_size, SMLA_MEMORY_HOST);
    const size_t bytes = (size_t)(blocks * pool.block_stride);
    pool.data = alloc_or_die(bytes);
    memset(pool.data, 0, bytes);
    const size_t values = (size_t)(blocks * block_size) * SMLA_HEAD_DIM;
    float *f = alloc_or_die(values * sizeof *f);
    for (size_t i = 0; i < values; i++)
        f[i] = (float)smla_rng_normal(rng);
    if (smla_kv_pack(&pool, f) != SMLA_OK) {
        fprintf(stderr, "engine_batch: smla_kv_pack failed\nFAIL\n");
        exit(1);
    }
    free(f);
    return pool;
}

void smla_test_pools_create(smla_kv_format format, int64_t swa_rows, int64_t extra_rows,
                            int32_t block_size, smla_rng *rng, smla_test_pools *pools)
{
    pools->swa = random_pool(format, swa_rows, block_size, rng);
    pools->extra = random_pool(format, extra_rows, block_size, rng);
}

void smla_test_pools_free(smla_test_pools *pools)
{
    free(pools->swa.data);
    free(pools->extra.data);
    memset(pools, 0, sizeof *pools);
}

static int32_t width(const smla_test_batch *b)
{
    return b->cfg.window + b->cfg.topk;
}

void smla_test_batch_create(const smla_test_batch_config *cfg, const smla_test_pools *pools,
                            smla_rng *rng, smla_test_batch *b)
{
    memset(b, 0, sizeof *b);
    b->cfg = *cfg;
    b->pools = pools;
    const size_t T = (size_t)cfg->max_tokens, H = (size_t)cfg->heads;
    b->q = alloc_or_die(T * H * SMLA_HEAD_DIM * smla_dtype_size(cfg->q_dtype));
    b->indices = alloc_or_die(T * (size_t)width(b) * sizeof(int32_t));
    b->swa_lens = alloc_or_die(T * sizeof(int32_t));
    b->extra_lens = alloc_or_die(T * sizeof(int32_t));
    b->sinks = alloc_or_die(H * sizeof(float));
    b->query_start_loc = alloc_or_die(((size_t)cfg->max_requests + 1) * sizeof(int32_t));
    b->seq_lens = alloc_or_die((size_t)cfg->max_requests * sizeof(int32_t));
    for (size_t h = 0; h < H; h++) {
        const double u = smla_rng_uniform(rng);
        b->sinks[h] = u < 0.1 ? -INFINITY : (float)smla_rng_normal(rng);
    }
    b->bmm1_scale = (float)(0.03 + 0.03 * smla_rng_uniform(rng));
    b->query_start_loc[0] = 0;
}

void smla_test_batch_free(smla_test_batch *b)
{
    void *owned[] = {b->q,     b->indices, b->swa_lens,        b->extra_lens,
                     b->sinks, b->seq_lens, b->query_start_loc};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        free(owned[i]);
    memset(b, 0, sizeof *b);
}

void smla_test_batch_set_requests(smla_test_batch *b, int32_t num_requests,
                                  const int32_t *query_lens, const int32_t *prefixes)
{
    if (num_requests > b->cfg.max_requests) {
        fprintf(stderr, "engine_batch: %d requests, room for %d\nFAIL\n", num_requests,
                b->cfg.max_requests);
        exit(1);
    }
    b->num_requests = num_requests;
    b->query_start_loc[0] = 0;
    for (int32_t r = 0; r < num_requests; r++) {
        b->query_start_loc[r + 1] = b->query_start_loc[r] + query_lens[r];
        b->seq_lens[r] = prefixes[r] + query_lens[r];
    }
    b->num_tokens = b->query_start_loc[num_requests];
    if (b->num_tokens > b->cfg.max_tokens) {
        fprintf(stderr, "engine_batch: %d tokens, room for %d\nFAIL\n", b->num_tokens,
                b->cfg.max_tokens);
        exit(1);
    }
}

/* A length in [lo, hi]: mostly from the lower quarter, sometimes anywhere. */
static int32_t random_length(smla_rng *rng, int64_t lo, int64_t hi)
{
    const int64_t span = hi - lo;
    return (int32_t)(lo + smla_rng_range(rng, 0, smla_rng_uniform(rng) < 0.3 ? span : span / 4));
}

void smla_test_batch_random_requests(smla_test_batch *b, smla_rng *rng, int32_t num_requests,
                                     int32_t num_tokens, int32_t threshold, int32_t max_prefix,
                                     double short_fraction)
{
    const int64_t R = num_requests, thr = threshold;
    if (num_tokens < R) {
        fprintf(stderr, "engine_batch: %d tokens cannot make %d requests\nFAIL\n", num_tokens,
                num_requests);
        exit(1);
    }
    /* d decodes need d + (R - d)(thr + 1) <= T; all decodes need T <= R thr. */
    int64_t d = smla_rng_range(rng, 0, R);
    while (d < R && d + (R - d) * (thr + 1) > num_tokens)
        d++;
    if (d == R && R * thr < num_tokens)
        d = R - 1;
    int32_t *q = alloc_or_die(2 * ((size_t)R + 1) * sizeof *q);
    int32_t *prefix = q + R + 1;
    int64_t left = num_tokens;
    for (int64_t r = 0; r < R; r++) {
        const int64_t later_decodes = r < d ? d - r - 1 : 0, later_prefills = R - r - 1 - later_decodes;
        const int64_t least_after = later_decodes + later_prefills * (thr + 1);
        int64_t lo = r < d ? 1 : thr + 1, hi = left - least_after;
        if (r < d && hi > thr)
            hi = thr;
        if (later_prefills == 0 && r < d && left - later_decodes * thr > lo)
            lo = left - later_decodes * thr; /* only decodes follow: they take at most thr */
        q[r] = r == R - 1 ? (int32_t)left : random_length(rng, lo, hi);
        left -= q[r];
        prefix[r] = (int32_t)smla_rng_range(rng, 0, max_prefix);
        if (smla_rng_uniform(rng) < short_fraction)
            prefix[r] = -(int32_t)smla_rng_range(rng, 1, q[r]);
    }
    smla_test_batch_set_requests(b, num_requests, q, prefix);
    free(q);
}

int32_t smla_test_random_slot(smla_rng *rng, int64_t rows)
{
    const int32_t invalid[] = {-1, INT32_MIN, -1000, (int32_t)rows, (int32_t)rows + 77,
                               INT32_MAX};
    /* One draw a slot (the soak fills millions a step): the low 32 bits decide valid or
     * not (95 / 5%), the high 32 bits pick the row or the kind of invalid id. */
    const uint64_t x = smla_rng_next(rng);
    const uint64_t pick = x >> 32;
    if ((uint32_t)x >= 214748365u) /* 0.05 x 2^32 */
        return (int32_t)((pick * (uint64_t)rows) >> 32);
    return invalid[(pick * 6) >> 32];
}

int32_t smla_test_random_len(smla_rng *rng, int32_t columns)
{
    const double u = smla_rng_uniform(rng);
    return u < 0.05   ? (int32_t)smla_rng_range(rng, -3, -1)
           : u < 0.15 ? columns + (int32_t)smla_rng_range(rng, 0, 3)
                      : (int32_t)smla_rng_range(rng, 0, columns);
}

void smla_test_batch_fill_queries(smla_test_batch *b, smla_rng *rng)
{
    const size_t values = (size_t)b->cfg.max_tokens * (size_t)b->cfg.heads * SMLA_HEAD_DIM;
    for (size_t i = 0; i < values; i++) {
        const float v = (float)smla_rng_normal(rng);
        if (b->cfg.q_dtype == SMLA_DTYPE_BF16)
            ((uint16_t *)b->q)[i] = smla_float_to_bf16(v);
        else
            ((uint8_t *)b->q)[i] = smla_float_to_e4m3(v);
    }
}

void smla_test_batch_fill_indices(smla_test_batch *b, smla_rng *rng)
{
    const size_t T = (size_t)b->num_tokens;
    const int64_t swa_rows = b->pools->swa.num_blocks * b->pools->swa.block_size;
    const int64_t extra_rows = b->pools->extra.num_blocks * b->pools->extra.block_size;
    for (size_t t = 0; t < T; t++) {
        int32_t *row = b->indices + t * (size_t)width(b);
        for (int32_t j = 0; j < width(b); j++)
            row[j] = smla_test_random_slot(rng, j < b->cfg.window ? swa_rows : extra_rows);
        b->swa_lens[t] = smla_test_random_len(rng, b->cfg.window);
        b->extra_lens[t] = smla_test_random_len(rng, b->cfg.topk);
    }
}

smla_test_buffers smla_test_batch_host_buffers(const smla_test_batch *b, uint16_t *out,
                                               float *lse)
{
    const smla_test_buffers buf = {b->q,       b->pools->swa.data, b->pools->extra.data,
                                   b->indices, b->swa_lens,        b->extra_lens,
                                   b->sinks,   out,                lse};
    return buf;
}

smla_attention_args smla_test_batch_args(const smla_test_batch *b, const smla_test_buffers *buf,
                                         int32_t tokens, smla_memory memory)
{
    const int32_t H = b->cfg.heads;
    smla_attention_args a = smla_attention_args_default();
    a.q = smla_tensor_3d(buf->q, b->cfg.q_dtype, tokens, H, SMLA_HEAD_DIM, memory);
    a.swa = b->pools->swa;
    a.swa.data = buf->swa;
    a.swa.memory = memory;
    a.extra = b->pools->extra;
    a.extra.data = buf->extra;
    a.extra.memory = memory;
    a.swa_indices = smla_tensor_2d(buf->indices, SMLA_DTYPE_I32, tokens, b->cfg.window, memory);
    a.swa_indices.stride[0] = width(b);
    a.swa_indices.stride[1] = 1;
    a.extra_indices = smla_tensor_2d(buf->indices + b->cfg.window, SMLA_DTYPE_I32, tokens,
                                     b->cfg.topk, memory);
    a.extra_indices.stride[0] = width(b);
    a.extra_indices.stride[1] = 1;
    a.swa_lens = smla_tensor_1d(buf->swa_lens, SMLA_DTYPE_I32, tokens, memory);
    a.extra_lens = smla_tensor_1d(buf->extra_lens, SMLA_DTYPE_I32, tokens, memory);
    a.sinks = smla_tensor_1d(buf->sinks, SMLA_DTYPE_F32, H, memory);
    a.bmm1_scale = b->bmm1_scale;
    a.window = b->cfg.window;
    a.out = smla_tensor_3d(buf->out, SMLA_DTYPE_BF16, tokens, H, SMLA_HEAD_DIM, memory);
    a.lse = smla_tensor_2d(buf->lse, SMLA_DTYPE_F32, tokens, H, memory);
    return a;
}

void smla_test_batch_token(const smla_test_batch *b, int32_t t, int32_t *request,
                           int64_t *position)
{
    int32_t r = 0;
    while (r + 1 < b->num_requests && b->query_start_loc[r + 1] <= t)
        r++;
    const int32_t start = b->query_start_loc[r], q = b->query_start_loc[r + 1] - start;
    *request = r;
    *position = (int64_t)b->seq_lens[r] - q + (t - start);
}

/* Copies token t's q row, index row and lens from src into row u of dst. */
static void copy_token(const smla_test_batch *src, int32_t t, smla_test_batch *dst, int32_t u)
{
    const size_t q_row = (size_t)src->cfg.heads * SMLA_HEAD_DIM * smla_dtype_size(src->cfg.q_dtype);
    memcpy((uint8_t *)dst->q + (size_t)u * q_row, (const uint8_t *)src->q + (size_t)t * q_row, q_row);
    memcpy(dst->indices + (size_t)u * width(dst), src->indices + (size_t)t * width(src),
           (size_t)width(src) * sizeof(int32_t));
    dst->swa_lens[u] = src->swa_lens[t];
    dst->extra_lens[u] = src->extra_lens[t];
}

smla_status smla_test_batch_reference(smla_context *ctx, const smla_test_batch *b,
                                      const int32_t *tokens, int32_t n, uint16_t *out,
                                      float *lse)
{
    smla_test_batch_config cfg = b->cfg;
    cfg.max_tokens = n;
    cfg.max_requests = n;
    smla_test_batch rows;
    smla_rng unused;
    smla_rng_seed(&unused, 0);
    smla_test_batch_create(&cfg, b->pools, &unused, &rows);
    memcpy(rows.sinks, b->sinks, (size_t)cfg.heads * sizeof(float));
    rows.bmm1_scale = b->bmm1_scale;
    /* One single-token sequence per row, whose seq_len puts it at its position. */
    for (int32_t i = 0; i < n; i++) {
        int32_t request;
        int64_t position;
        smla_test_batch_token(b, tokens[i], &request, &position);
        copy_token(b, tokens[i], &rows, i);
        rows.query_start_loc[i + 1] = i + 1;
        rows.seq_lens[i] = (int32_t)(position + 1);
    }
    rows.num_requests = rows.num_tokens = n;
    const smla_test_buffers buf = smla_test_batch_host_buffers(&rows, out, lse);
    smla_attention_args a = smla_test_batch_args(&rows, &buf, n, SMLA_MEMORY_HOST);
    a.cu_seqlens_q = smla_tensor_1d(rows.query_start_loc, SMLA_DTYPE_I32, n + 1, SMLA_MEMORY_HOST);
    a.seq_lens = smla_tensor_1d(rows.seq_lens, SMLA_DTYPE_I32, n, SMLA_MEMORY_HOST);
    a.backend = SMLA_BACKEND_CPU;
    const smla_status st = smla_attention(ctx, &a);
    smla_test_batch_free(&rows);
    return st;
}

int32_t smla_test_batch_leading_decodes(const smla_test_batch *b, int32_t threshold)
{
    const int32_t *qsl = b->query_start_loc;
    int32_t decodes = 0;
    while (decodes < b->num_requests && qsl[decodes + 1] - qsl[decodes] <= threshold)
        decodes++;
    return decodes;
}

void smla_test_batch_random_order(const smla_test_batch *b, smla_rng *rng, int32_t threshold,
                                  int32_t *order)
{
    const int32_t R = b->num_requests, decodes = smla_test_batch_leading_decodes(b, threshold);
    for (int32_t r = 0; r < R; r++)
        order[r] = r;
    for (int32_t r = R - 1; r > 0; r--) { /* Fisher-Yates within each class */
        const int32_t k = (int32_t)smla_rng_range(rng, r < decodes ? 0 : decodes, r);
        const int32_t tmp = order[r];
        order[r] = order[k];
        order[k] = tmp;
    }
}

void smla_test_batch_reorder(const smla_test_batch *src, const int32_t *order,
                             smla_test_batch *dst, int32_t *token_map)
{
    const int32_t R = src->num_requests;
    int32_t *q = alloc_or_die(2 * ((size_t)R + 1) * sizeof *q), *prefix = q + R + 1;
    for (int32_t i = 0; i < R; i++) {
        const int32_t r = order[i];
        q[i] = src->query_start_loc[r + 1] - src->query_start_loc[r];
        prefix[i] = src->seq_lens[r] - q[i];
    }
    smla_test_batch_set_requests(dst, R, q, prefix);
    memcpy(dst->sinks, src->sinks, (size_t)src->cfg.heads * sizeof(float));
    dst->bmm1_scale = src->bmm1_scale;
    for (int32_t i = 0; i < R; i++) {
        const int32_t r = order[i];
        for (int32_t k = 0; k < q[i]; k++) {
            const int32_t t = src->query_start_loc[r] + k, u = dst->query_start_loc[i] + k;
            copy_token(src, t, dst, u);
            token_map[t] = u;
        }
    }
    free(q);
}
