/* Engine batches (workload.h): page tables, positions and the engine's index layout. */
#include "workload.h"

#include <stdlib.h>
#include <string.h>

#include "workload_fill.h"

/* Pages of one pool: request r's logical blocks first[r] .. first[r] + count[r] - 1 live
 * at block ids ids[start[r] ..]. */
typedef struct page_table {
    int64_t *first, *count, *start;
    int32_t *ids;
    int64_t num_blocks;
    int32_t block_size;
} page_table;

static void page_table_free(page_table *p)
{
    free(p->first);
    free(p->count);
    free(p->start);
    free(p->ids);
}

/* Request r's pages cover rows [lo[r], hi[r]) of its own address space. Block ids are a
 * random permutation, so neighbouring pages of a request are scattered over the pool. */
static int page_table_make(page_table *p, int32_t block_size, const int64_t *lo,
                           const int64_t *hi, int32_t num_requests, smla_tool_rng *rng)
{
    memset(p, 0, sizeof *p);
    p->block_size = block_size;
    const size_t n = (size_t)num_requests + 1;
    p->first = malloc(n * sizeof *p->first);
    p->count = malloc(n * sizeof *p->count);
    p->start = malloc(n * sizeof *p->start);
    if (!p->first || !p->count || !p->start)
        return 0;
    for (int32_t r = 0; r < num_requests; r++) {
        p->first[r] = lo[r] / block_size;
        p->count[r] = hi[r] > lo[r] ? (hi[r] - 1) / block_size - p->first[r] + 1 : 0;
        p->start[r] = p->num_blocks;
        p->num_blocks += p->count[r];
    }
    if (p->num_blocks == 0)
        p->num_blocks = 1; /* a pool has at least one block */
    if (p->num_blocks * block_size > INT32_MAX)
        return 0;
    p->ids = malloc((size_t)p->num_blocks * sizeof *p->ids);
    if (!p->ids)
        return 0;
    for (int64_t i = 0; i < p->num_blocks; i++)
        p->ids[i] = (int32_t)i;
    for (int64_t i = p->num_blocks - 1; i > 0; i--) {
        const uint32_t j = smla_tool_rng_below(rng, (uint64_t)i + 1);
        const int32_t id = p->ids[i];
        p->ids[i] = p->ids[j];
        p->ids[j] = id;
    }
    return 1;
}

/* Slot of row `row` (inside the request's pages) of request r. */
static int32_t page_slot(const page_table *p, int32_t r, int64_t row)
{
    const int64_t page = p->ids[p->start[r] + row / p->block_size - p->first[r]];
    return (int32_t)(page * p->block_size + row % p->block_size);
}

static smla_status check_spec(const smla_engine_spec *s, smla_tool_error *error)
{
    const char *bad = NULL;
    if (s->heads <= 0)
        bad = "heads must be positive";
    else if (s->window <= 0 || s->topk < 0 || s->window > INT32_MAX - s->topk)
        bad = "window must be positive and topk non-negative";
    else if (s->compress_ratio <= 0)
        bad = "compress_ratio must be positive";
    else if (s->q_dtype != SMLA_DTYPE_BF16 && s->q_dtype != SMLA_DTYPE_FP8_E4M3)
        bad = "q_dtype must be BF16 or FP8_E4M3";
    else if (smla_kv_token_bytes(s->kv_format) == 0)
        bad = "kv_format is not a KV format";
    else if (s->swa_block_size <= 0 || s->extra_block_size <= 0)
        bad = "block sizes must be positive";
    else if (s->num_requests <= 0 || !s->requests)
        bad = "there must be at least one request";
    if (bad)
        return smla_tool_fail(error, SMLA_ERR_VALUE, "workload: %s", bad);
    int64_t tokens = 0;
    for (int32_t r = 0; r < s->num_requests; r++) {
        const smla_workload_request *q = &s->requests[r];
        if (q->query_len <= 0 || q->prefix_len < 0 ||
            (int64_t)q->query_len + q->prefix_len > INT32_MAX)
            return smla_tool_fail(error, SMLA_ERR_VALUE, "workload: request %d: query length "
                                  "%d must be positive, prefix %d non-negative, their sum an "
                                  "int32", r, q->query_len, q->prefix_len);
        tokens += q->query_len;
    }
    if (tokens > INT32_MAX || tokens * s->heads > INT64_MAX / (4 * SMLA_HEAD_DIM) ||
        tokens * (s->window + s->topk) > INT64_MAX / 8)
        return smla_tool_fail(error, SMLA_ERR_VALUE, "workload: %lld tokens are too many",
                              (long long)tokens);
    return SMLA_OK;
}

/* The builder's scratch: page tables of both pools, the per-request entry permutation. */
typedef struct engine_build {
    const smla_engine_spec *spec;
    page_table swa, extra;
    int32_t *entries;   /* a permutation of the request's compressed entries seen so far */
    int64_t *lo, *hi;   /* per-request row ranges, reused for both pools */
    smla_tool_rng rng;
} engine_build;

/* Pages: SWA rows from the first position a window reaches to the last position; extra
 * rows for every compressed entry. */
static int make_pages(engine_build *b, int64_t *max_entries)
{
    const smla_engine_spec *s = b->spec;
    const size_t n = (size_t)s->num_requests;
    b->lo = malloc(n * sizeof *b->lo);
    b->hi = malloc(n * sizeof *b->hi);
    if (!b->lo || !b->hi)
        return 0;
    for (int32_t r = 0; r < s->num_requests; r++) {
        const int64_t prefix = s->requests[r].prefix_len;
        b->lo[r] = prefix - s->window + 1 > 0 ? prefix - s->window + 1 : 0;
        b->hi[r] = prefix + s->requests[r].query_len;
    }
    if (!page_table_make(&b->swa, s->swa_block_size, b->lo, b->hi, s->num_requests, &b->rng))
        return 0;
    *max_entries = 0;
    for (int32_t r = 0; r < s->num_requests; r++) {
        b->lo[r] = 0;
        b->hi[r] /= s->compress_ratio;
        if (b->hi[r] > *max_entries)
            *max_entries = b->hi[r];
    }
    if (s->topk == 0)
        return 1;
    if (!page_table_make(&b->extra, s->extra_block_size, b->lo, b->hi, s->num_requests,
                         &b->rng))
        return 0;
    b->entries = malloc((size_t)(*max_entries > 0 ? *max_entries : 1) * sizeof *b->entries);
    return b->entries != NULL;
}

/* Request r's rows: SWA columns first, then the extra columns (distinct random entries by
 * a partial Fisher-Yates shuffle of the entries permutation, which grows with pos). Returns
 * the active entries written. */
static int64_t fill_request(engine_build *b, int32_t r, int32_t *row, int32_t row_stride,
                            int32_t *swa_lens, int32_t *extra_lens)
{
    const smla_engine_spec *s = b->spec;
    const int64_t prefix = s->requests[r].prefix_len;
    int64_t seen = 0, active = 0;
    for (int32_t i = 0; i < s->requests[r].query_len; i++, row += row_stride) {
        const int64_t pos = prefix + i;
        const int64_t n = pos + 1 < s->window ? pos + 1 : s->window;
        for (int64_t j = 0; j < n; j++)
            row[j] = page_slot(&b->swa, r, pos - n + 1 + j);
        swa_lens[i] = (int32_t)n;
        const int64_t available = s->topk > 0 ? (pos + 1) / s->compress_ratio : 0;
        const int64_t k = available < s->topk ? available : s->topk;
        for (; seen < available; seen++)
            b->entries[seen] = (int32_t)seen;
        for (int64_t j = 0; j < k; j++) {
            const int64_t pick = j + smla_tool_rng_below(&b->rng, (uint64_t)(available - j));
            const int32_t entry = b->entries[pick];
            b->entries[pick] = b->entries[j];
            b->entries[j] = entry;
            row[s->window + j] = page_slot(&b->extra, r, entry);
        }
        extra_lens[i] = (int32_t)k;
        active += n + k;
    }
    return active;
}

/* Positions, index rows and lens of every request. */
static smla_status build_indices(engine_build *b, smla_workload *w, int64_t *active,
                                 smla_tool_error *error)
{
    const smla_engine_spec *s = b->spec;
    const int32_t width = s->window + s->topk;
    const int32_t tokens = w->num_tokens;
    int32_t *idx = smla_workload_buffer(w, (size_t)tokens * (size_t)width * sizeof(int32_t));
    int32_t *swa_lens = smla_workload_buffer(w, (size_t)tokens * sizeof(int32_t));
    int32_t *extra_lens = smla_workload_buffer(w, (size_t)tokens * sizeof(int32_t));
    int32_t *cu = smla_workload_buffer(w, ((size_t)s->num_requests + 1) * sizeof(int32_t));
    int32_t *seq_lens = smla_workload_buffer(w, (size_t)s->num_requests * sizeof(int32_t));
    if (!idx || !swa_lens || !extra_lens || !cu || !seq_lens)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "workload: no memory for the "
                              "indices of %d tokens", tokens);
    memset(idx, 0xFF, (size_t)tokens * (size_t)width * sizeof(int32_t)); /* all -1 */
    *active = 0;
    cu[0] = 0;
    for (int32_t r = 0; r < s->num_requests; r++) {
        const int32_t q = s->requests[r].query_len;
        cu[r + 1] = cu[r] + q;
        seq_lens[r] = s->requests[r].prefix_len + q;
        *active += fill_request(b, r, idx + (size_t)cu[r] * width, width, swa_lens + cu[r],
                                extra_lens + cu[r]);
    }
    smla_attention_args *a = &w->args;
    a->swa_indices = smla_tensor_2d(idx, SMLA_DTYPE_I32, tokens, s->window, SMLA_MEMORY_HOST);
    a->swa_indices.stride[0] = width;
    a->swa_lens = smla_tensor_1d(swa_lens, SMLA_DTYPE_I32, tokens, SMLA_MEMORY_HOST);
    if (s->topk > 0) {
        a->extra_indices = smla_tensor_2d(idx + s->window, SMLA_DTYPE_I32, tokens, s->topk,
                                          SMLA_MEMORY_HOST);
        a->extra_indices.stride[0] = width;
        a->extra_lens = smla_tensor_1d(extra_lens, SMLA_DTYPE_I32, tokens, SMLA_MEMORY_HOST);
    }
    a->cu_seqlens_q = smla_tensor_1d(cu, SMLA_DTYPE_I32, s->num_requests + 1,
                                     SMLA_MEMORY_HOST);
    a->seq_lens = smla_tensor_1d(seq_lens, SMLA_DTYPE_I32, s->num_requests, SMLA_MEMORY_HOST);
    return SMLA_OK;
}

static smla_status build(engine_build *b, smla_workload *w, smla_tool_error *error)
{
    const smla_engine_spec *s = b->spec;
    int64_t max_entries = 0, active = 0;
    if (!make_pages(b, &max_entries))
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "workload: no memory for the "
                              "page tables, or a pool of more than 2^31 rows");
    for (int32_t r = 0; r < s->num_requests; r++)
        w->num_tokens += s->requests[r].query_len;
    w->num_requests = s->num_requests;
    w->args = smla_attention_args_default();
    w->args.window = s->window;
    w->args.swa = smla_workload_pool(w, s->kv_format, b->swa.num_blocks, s->swa_block_size);
    if (s->topk > 0)
        w->args.extra = smla_workload_pool(w, s->kv_format, b->extra.num_blocks,
                                           s->extra_block_size);
    if (!w->args.swa.data || (s->topk > 0 && !w->args.extra.data))
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "workload: no memory for the "
                              "KV pools");
    smla_status st = build_indices(b, w, &active, error);
    if (st == SMLA_OK)
        st = smla_workload_finish(w, s->heads, s->q_dtype, active, &b->rng, error);
    return st;
}

smla_status smla_workload_engine(const smla_engine_spec *spec, smla_workload *w,
                                 smla_tool_error *error)
{
    memset(w, 0, sizeof *w);
    smla_status st = check_spec(spec, error);
    if (st != SMLA_OK)
        return st;
    engine_build b;
    memset(&b, 0, sizeof b);
    b.spec = spec;
    smla_tool_rng_seed(&b.rng, spec->seed);
    st = build(&b, w, error);
    page_table_free(&b.swa);
    page_table_free(&b.extra);
    free(b.entries);
    free(b.lo);
    free(b.hi);
    if (st != SMLA_OK)
        smla_workload_free(w);
    return st;
}
