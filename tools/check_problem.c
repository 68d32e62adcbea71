/* Random adversarial attention problems (check_problem.h). */
#include "check_problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *own(smla_check_problem *p, size_t bytes)
{
    if (p->num_buffers == SMLA_CHECK_BUFFERS)
        return NULL;
    void *b = calloc(1, bytes ? bytes : 1);
    if (b)
        p->buffers[p->num_buffers++] = b;
    return b;
}

static int64_t pool_rows(const smla_kv_pool *pool)
{
    return pool->num_blocks * pool->block_size;
}

static int chance(smla_tool_rng *rng, double probability)
{
    return smla_tool_rng_uniform(rng) < probability;
}

/* A row of N(0, 1) values whose fp8_ds_mla tiles (SMLA_DS_MLA_TILE values) differ in
 * magnitude (each times e^(0.5 N(0, 1)), as activations with outlier channels: the tile
 * scales then differ within a row), scaled back to an RMS of 1 so that the logits keep the
 * std the problem draws. */
static void random_row(smla_tool_rng *rng, float *row)
{
    double sum = 0.0;
    for (int tile = 0; tile < SMLA_HEAD_DIM / SMLA_DS_MLA_TILE; tile++) {
        const double f = exp(0.5 * smla_tool_rng_normal(rng));
        for (int i = SMLA_DS_MLA_TILE * tile; i < SMLA_DS_MLA_TILE * (tile + 1); i++) {
            row[i] = (float)(f * smla_tool_rng_normal(rng));
            sum += (double)row[i] * row[i];
        }
    }
    const double rms = sqrt(sum / SMLA_HEAD_DIM);
    for (int i = 0; i < SMLA_HEAD_DIM; i++)
        row[i] = (float)(row[i] / rms);
}

/* A pool of random rows in format, with a random block size and sometimes a padded
 * block stride; with `unquantised`, also those rows as a bf16 pool of the same blocks
 * (a bf16 pool is its own). */
static smla_status make_pool(smla_check_problem *p, smla_tool_rng *rng, smla_kv_format format,
                             smla_kv_pool *pool, smla_kv_pool *unquantised)
{
    static const int32_t block_sizes[] = {1, 16, 64, 256};
    const int32_t block_size = block_sizes[smla_tool_rng_range(rng, 0, 3)];
    const int64_t rows_wanted = smla_tool_rng_range(rng, 1, 3000);
    const int64_t num_blocks = (rows_wanted + block_size - 1) / block_size;
    *pool = smla_kv_pool_make(NULL, format, num_blocks, block_size, SMLA_MEMORY_HOST);
    if (chance(rng, 0.3))
        pool->block_stride += 16 * smla_tool_rng_range(rng, 1, 8);
    const int64_t rows = num_blocks * block_size;
    pool->data = own(p, (size_t)(num_blocks * pool->block_stride));
    float *values = malloc((size_t)rows * SMLA_HEAD_DIM * sizeof(float));
    if (!pool->data || !values) {
        free(values);
        return SMLA_ERR_OUT_OF_MEMORY;
    }
    for (int64_t r = 0; r < rows; r++)
        random_row(rng, values + r * SMLA_HEAD_DIM);
    smla_status st = smla_kv_pack(pool, values);
    if (st == SMLA_OK && unquantised) {
        *unquantised = *pool;
        if (format != SMLA_KV_BF16) {
            *unquantised = smla_kv_pool_make(NULL, SMLA_KV_BF16, num_blocks, block_size, SMLA_MEMORY_HOST);
            unquantised->data = own(p, (size_t)(num_blocks * unquantised->block_stride));
            st = unquantised->data ? smla_kv_pack(unquantised, values) : SMLA_ERR_OUT_OF_MEMORY;
        }
    }
    free(values);
    return st;
}

/* A slot id: mostly valid, sometimes each kind of invalid (never to be read). */
static int32_t random_slot(smla_tool_rng *rng, int64_t rows)
{
    if (!chance(rng, 0.06))
        return (int32_t)smla_tool_rng_range(rng, 0, rows - 1);
    switch (smla_tool_rng_range(rng, 0, 5)) {
    case 0: return -1;
    case 1: return INT32_MIN;
    case 2: return (int32_t)-smla_tool_rng_range(rng, 2, 1000000);
    case 3: return (int32_t)rows;
    case 4: return (int32_t)(rows + smla_tool_rng_range(rng, 1, 1000));
    default: return INT32_MAX;
    }
}

static int32_t random_len(smla_tool_rng *rng, int32_t width)
{
    switch (smla_tool_rng_range(rng, 0, 5)) {
    case 0: return 0;
    case 1: return width;
    case 2: return (int32_t)smla_tool_rng_range(rng, -3, -1);
    case 3: return width + (int32_t)smla_tool_rng_range(rng, 1, 3);
    default: return (int32_t)smla_tool_rng_range(rng, 0, width);
    }
}

static smla_tensor lens_tensor(smla_check_problem *p, smla_tool_rng *rng, int64_t tokens,
                               int32_t width)
{
    smla_tensor t;
    memset(&t, 0, sizeof t);
    if (!chance(rng, 0.5))
        return t;
    int32_t *lens = own(p, (size_t)tokens * sizeof(int32_t));
    if (!lens)
        return t;
    for (int64_t i = 0; i < tokens; i++)
        lens[i] = random_len(rng, width);
    return smla_tensor_1d(lens, SMLA_DTYPE_I32, tokens, SMLA_MEMORY_HOST);
}

/* Splits tokens into requests (decodes first in PLAN mode, only decodes in DECODE mode)
 * and fills the batch and the
 * matching cu_seqlens_q / seq_lens tensors. Leaves some padding rows at the end. */
static smla_status make_positions(smla_check_problem *p, smla_tool_rng *rng,
                                  const smla_check_config *c, int64_t tokens)
{
    const int64_t padding = smla_tool_rng_range(rng, 0, tokens > 3 ? 3 : 0);
    int64_t left = tokens - padding;
    const int decode_only = c->positions == SMLA_CHECK_POSITIONS_DECODE;
    const int32_t max_requests = decode_only ? (int32_t)left + 1 : (int32_t)(left < 12 ? left + 1 : 12);
    p->query_start_loc = own(p, (size_t)(max_requests + 2) * sizeof(int32_t));
    p->seq_lens = own(p, (size_t)(max_requests + 1) * sizeof(int32_t));
    if (!p->query_start_loc || !p->seq_lens)
        return SMLA_ERR_OUT_OF_MEMORY;
    p->decode_threshold = decode_only ? 4 : (int32_t)smla_tool_rng_range(rng, 1, 3);
    static const int32_t caps[] = {SMLA_SEGMENT_CAP_DEFAULT, 0, 1, 7, 64, 1024};
    p->segment_cap = caps[smla_tool_rng_range(rng, 0, 5)];
    int32_t r = 0;
    int decodes = c->positions == SMLA_CHECK_POSITIONS_PLAN || decode_only;
    while (left > 0 && r < max_requests - 1) {
        int64_t q;
        if (decodes && (decode_only || chance(rng, 0.5))) {
            q = smla_tool_rng_range(rng, 1, p->decode_threshold);
        } else {
            decodes = 0;
            const int64_t hi = left < 300 ? left : 300;
            /* In a plan, a prefill is longer than the decode threshold. */
            const int64_t lo = c->positions == SMLA_CHECK_POSITIONS_PLAN ? p->decode_threshold + 1 : 1;
            if (hi < lo)
                break; /* too few tokens left for a prefill: they stay padding */
            q = smla_tool_rng_range(rng, lo, hi);
        }
        if (q > left)
            q = left;
        if (c->positions == SMLA_CHECK_POSITIONS_SEQLENS && chance(rng, 0.1))
            q = 0; /* an empty sequence */
        p->query_start_loc[r + 1] = p->query_start_loc[r] + (int32_t)q;
        int64_t prefix = chance(rng, 0.3) ? 0 : smla_tool_rng_range(rng, 1, decode_only ? 5000 : 400);
        if (c->positions == SMLA_CHECK_POSITIONS_SEQLENS && chance(rng, 0.1))
            prefix = -smla_tool_rng_range(rng, 1, q > 1 ? q : 1); /* seq_len < query length */
        p->seq_lens[r] = (int32_t)(q + prefix);
        left -= q;
        r++;
    }
    p->num_requests = r;
    p->args.cu_seqlens_q = smla_tensor_1d(p->query_start_loc, SMLA_DTYPE_I32, r + 1, SMLA_MEMORY_HOST);
    p->args.seq_lens = smla_tensor_1d(p->seq_lens, SMLA_DTYPE_I32, r, SMLA_MEMORY_HOST);
    return SMLA_OK;
}

/* Index sets: either the engine layout (one [T][Wswa + Wext] buffer passed twice) or two
 * buffers with padded row strides. */
static smla_status make_indices(smla_check_problem *p, smla_tool_rng *rng, int64_t tokens,
                                int32_t wswa, int32_t wext, int has_extra)
{
    smla_attention_args *a = &p->args;
    const int64_t swa_rows = pool_rows(&a->swa);
    const int64_t ext_rows = has_extra ? pool_rows(&a->extra) : 0;
    if (has_extra && chance(rng, 0.5)) {
        const int64_t stride = wswa + wext;
        int32_t *ix = own(p, (size_t)(tokens * stride) * sizeof(int32_t));
        if (!ix)
            return SMLA_ERR_OUT_OF_MEMORY;
        for (int64_t t = 0; t < tokens; t++)
            for (int64_t j = 0; j < stride; j++)
                ix[t * stride + j] = random_slot(rng, j < wswa ? swa_rows : ext_rows);
        a->swa_indices = smla_tensor_2d(ix, SMLA_DTYPE_I32, tokens, wswa, SMLA_MEMORY_HOST);
        a->swa_indices.stride[0] = stride;
        a->extra_indices = smla_tensor_2d(ix + wswa, SMLA_DTYPE_I32, tokens, wext, SMLA_MEMORY_HOST);
        a->extra_indices.stride[0] = stride;
        return SMLA_OK;
    }
    for (int set = 0; set < 1 + has_extra; set++) {
        const int32_t width = set ? wext : wswa;
        const int64_t stride = width + smla_tool_rng_range(rng, 0, 5);
        int32_t *ix = own(p, (size_t)(tokens * stride) * sizeof(int32_t));
        if (!ix)
            return SMLA_ERR_OUT_OF_MEMORY;
        for (int64_t i = 0; i < tokens * stride; i++)
            ix[i] = random_slot(rng, set ? ext_rows : swa_rows);
        smla_tensor t = smla_tensor_2d(ix, SMLA_DTYPE_I32, tokens, width, SMLA_MEMORY_HOST);
        t.stride[0] = stride;
        if (set)
            a->extra_indices = t;
        else
            a->swa_indices = t;
    }
    return SMLA_OK;
}

/* q, out, lse and sinks; for FP8 queries, also unquantised's q, out and lse. */
static smla_status make_query_and_outputs(smla_check_problem *p, smla_tool_rng *rng,
                                          const smla_check_config *c, int64_t tokens)
{
    smla_attention_args *a = &p->args, *unq = &p->unquantised;
    const int fp8 = c->q_dtype == SMLA_DTYPE_FP8_E4M3;
    const int64_t h = c->num_heads, q_elements = tokens * h * SMLA_HEAD_DIM;
    uint8_t *q = own(p, (size_t)q_elements * smla_dtype_size(c->q_dtype));
    uint16_t *q_unquantised = fp8 ? own(p, (size_t)q_elements * 2) : NULL;
    if (!q || (fp8 && !q_unquantised))
        return SMLA_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < q_elements; i++) {
        const float v = (float)smla_tool_rng_normal(rng);
        if (fp8) {
            q[i] = smla_float_to_e4m3(v);
            q_unquantised[i] = smla_float_to_bf16(v);
        } else {
            ((uint16_t *)q)[i] = smla_float_to_bf16(v);
        }
    }
    a->q = smla_tensor_3d(q, c->q_dtype, tokens, h, SMLA_HEAD_DIM, SMLA_MEMORY_HOST);
    if (fp8)
        unq->q = smla_tensor_3d(q_unquantised, SMLA_DTYPE_BF16, tokens, h, SMLA_HEAD_DIM, SMLA_MEMORY_HOST);

    const int64_t out_stride = h * SMLA_HEAD_DIM + (chance(rng, 0.5) ? 8 * smla_tool_rng_range(rng, 1, 4) : 0);
    p->out_elements = tokens * out_stride;
    void *out = own(p, (size_t)p->out_elements * 2);
    unq->out.data = fp8 ? own(p, (size_t)p->out_elements * 2) : NULL;
    if (!out || (fp8 && !unq->out.data))
        return SMLA_ERR_OUT_OF_MEMORY;
    a->out = smla_tensor_3d(out, SMLA_DTYPE_BF16, tokens, h, SMLA_HEAD_DIM, SMLA_MEMORY_HOST);
    a->out.stride[0] = out_stride;
    /* The out buffer is exactly tokens * out_stride: the last row's padding is real. */
    if (chance(rng, 0.8)) {
        const int64_t lse_stride = h + (chance(rng, 0.3) ? smla_tool_rng_range(rng, 1, 4) : 0);
        const size_t lse_bytes = (size_t)(tokens * lse_stride) * sizeof(float);
        float *lse = own(p, lse_bytes);
        unq->lse.data = fp8 ? own(p, lse_bytes) : NULL;
        if (!lse || (fp8 && !unq->lse.data))
            return SMLA_ERR_OUT_OF_MEMORY;
        a->lse = smla_tensor_2d(lse, SMLA_DTYPE_F32, tokens, h, SMLA_MEMORY_HOST);
        a->lse.stride[0] = lse_stride;
    }
    if (chance(rng, 0.5)) {
        float *sinks = own(p, (size_t)h * sizeof(float));
        if (!sinks)
            return SMLA_ERR_OUT_OF_MEMORY;
        for (int64_t i = 0; i < h; i++) {
            const double u = smla_tool_rng_uniform(rng);
            sinks[i] = u < 0.15 ? -INFINITY : u < 0.3 ? INFINITY : (float)(2.0 * smla_tool_rng_normal(rng));
        }
        a->sinks = smla_tensor_1d(sinks, SMLA_DTYPE_F32, h, SMLA_MEMORY_HOST);
    }
    return SMLA_OK;
}

/* unquantised (q, pools, out and lse buffers made beside args'): args with those. */
static void complete_unquantised(smla_check_problem *p)
{
    smla_attention_args u = p->args;
    u.q = p->unquantised.q;
    u.swa = p->unquantised.swa;
    if (p->args.extra.data)
        u.extra = p->unquantised.extra;
    u.out.data = p->unquantised.out.data;
    u.lse.data = p->unquantised.lse.data;
    p->unquantised = u;
}

static const char *split_name(smla_split_mode split)
{
    return split == SMLA_SPLIT_AUTO ? "auto" : split == SMLA_SPLIT_FIXED ? "fixed" : "none";
}

smla_status smla_check_problem_make(const smla_check_config *c, smla_tool_rng *rng,
                                    smla_check_problem *p)
{
    memset(p, 0, sizeof *p);
    p->args = smla_attention_args_default();
    smla_attention_args *a = &p->args;
    const int64_t tokens = smla_tool_rng_range(rng, c->min_tokens, c->max_tokens);
    const int has_extra = c->extra_format != SMLA_KV_INVALID;
    const int32_t wswa = (int32_t)smla_tool_rng_range(rng, 0, 160);
    const int32_t wext = has_extra ? (int32_t)smla_tool_rng_range(rng, 0, 700) : 0;
    static const int32_t windows[] = {128, 128, 1, 5, 64, 200};
    a->window = windows[smla_tool_rng_range(rng, 0, 5)];
    p->logits = c->logits;
    if (p->logits == SMLA_CHECK_LOGITS_ANY)
        p->logits = chance(rng, 0.5) ? SMLA_CHECK_LOGITS_FLAT : SMLA_CHECK_LOGITS_PEAKED;
    const double u = smla_tool_rng_uniform(rng);
    const double std = p->logits == SMLA_CHECK_LOGITS_FLAT ? 0.05 + 0.15 * u : 0.5 + 2.0 * u;
    a->bmm1_scale = (float)(std / sqrt(SMLA_HEAD_DIM));
    p->logit_std = a->bmm1_scale * sqrt(SMLA_HEAD_DIM);
    a->bmm2_scale = (float)(0.5 + 1.5 * smla_tool_rng_uniform(rng));
    static const smla_split_mode splits[] = {SMLA_SPLIT_AUTO, SMLA_SPLIT_FIXED, SMLA_SPLIT_NONE};
    a->split = splits[smla_tool_rng_range(rng, 0, 2)];

    const int fp8 = c->q_dtype == SMLA_DTYPE_FP8_E4M3;
    smla_status st = make_pool(p, rng, c->swa_format, &a->swa, fp8 ? &p->unquantised.swa : NULL);
    if (st == SMLA_OK && has_extra)
        st = make_pool(p, rng, c->extra_format, &a->extra, fp8 ? &p->unquantised.extra : NULL);
    if (st == SMLA_OK)
        st = make_indices(p, rng, tokens, wswa, wext, has_extra);
    if (st == SMLA_OK) {
        a->swa_lens = lens_tensor(p, rng, tokens, wswa);
        if (has_extra)
            a->extra_lens = lens_tensor(p, rng, tokens, wext);
        st = make_query_and_outputs(p, rng, c, tokens);
    }
    if (st == SMLA_OK && c->positions != SMLA_CHECK_POSITIONS_NONE)
        st = make_positions(p, rng, c, tokens);
    if (st != SMLA_OK) {
        smla_check_problem_free(p);
        return st;
    }
    if (fp8)
        complete_unquantised(p);
    snprintf(p->description, sizeof p->description,
             "T=%lld H=%d q=%s swa=%s[%d]%s%s ext=%s[%d]%s window=%d requests=%d sinks=%s logits=%s(std %.2f) "
             "split=%s",
             (long long)tokens, c->num_heads, fp8 ? "fp8" : "bf16", smla_kv_format_name(c->swa_format), wswa,
             a->swa_lens.data ? "+lens" : "",
             a->extra_indices.data && a->extra_indices.data == (int32_t *)a->swa_indices.data + wswa ? " (shared)" : "",
             has_extra ? smla_kv_format_name(c->extra_format) : "none", wext,
             a->extra_lens.data ? "+lens" : "", a->window, p->num_requests, a->sinks.data ? "yes" : "no",
             p->logits == SMLA_CHECK_LOGITS_FLAT ? "flat" : "peaked", p->logit_std, split_name(a->split));
    smla_check_problem_poison(p);
    return SMLA_OK;
}

/* The split is the description's last field (smla_check_problem_make): rewritten in place. */
void smla_check_problem_set_split(smla_check_problem *p, smla_split_mode split)
{
    p->args.split = split;
    p->unquantised.split = split;
    char *at = strstr(p->description, " split=");
    if (at)
        snprintf(at, sizeof p->description - (size_t)(at - p->description), " split=%s", split_name(split));
}

static void poison_outputs(const smla_attention_args *a, int64_t out_elements)
{
    uint16_t *out = a->out.data;
    for (int64_t i = 0; i < out_elements; i++)
        out[i] = SMLA_CHECK_OUT_POISON;
    if (a->lse.data) {
        uint32_t *lse = a->lse.data;
        const int64_t n = a->lse.shape[0] * a->lse.stride[0];
        for (int64_t i = 0; i < n; i++)
            lse[i] = SMLA_CHECK_LSE_POISON;
    }
}

void smla_check_problem_poison(const smla_check_problem *p)
{
    poison_outputs(&p->args, p->out_elements);
    if (p->unquantised.q.data)
        poison_outputs(&p->unquantised, p->out_elements);
}

void smla_check_problem_free(smla_check_problem *p)
{
    for (int i = 0; i < p->num_buffers; i++)
        free(p->buffers[i]);
    memset(p, 0, sizeof *p);
}
