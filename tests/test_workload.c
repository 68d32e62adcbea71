/* The workload generator of smla demo and smla bench (tools/workload.h): engine batches
 * checked against the rules an engine follows (paging, positions, window rows, distinct
 * causal compressed entries, the engine index layout, lens, FLOPs counted independently,
 * random data in every referenced row), random-row sets, determinism, bad specs. */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "workload.h"

static smla_context *g_ctx;

/* Random int in [lo, hi] from the test RNG. */
static int32_t pick(smla_rng *rng, int32_t lo, int32_t hi)
{
    return (int32_t)smla_rng_range(rng, lo, hi);
}

/* Which (request, row) each slot of a pool holds, filled as the rows are met: a slot met
 * twice must name the same row. */
typedef struct slot_map {
    int32_t *request;
    int64_t *row;
    int64_t rows;
} slot_map;

static void slot_map_make(slot_map *m, int64_t rows)
{
    m->rows = rows;
    m->request = smla_test_alloc((size_t)rows * sizeof *m->request);
    m->row = smla_test_alloc((size_t)rows * sizeof *m->row);
    for (int64_t i = 0; i < rows; i++)
        m->request[i] = -1;
}

static void slot_map_free(slot_map *m)
{
    free(m->request);
    free(m->row);
}

/* Records that slot holds row `row` of request r; returns 0 when it contradicts what was
 * recorded (another request, another row, or a slot outside the pool). */
static int slot_map_note(slot_map *m, int32_t slot, int32_t r, int64_t row)
{
    if (slot < 0 || slot >= m->rows)
        return 0;
    if (m->request[slot] < 0) {
        m->request[slot] = r;
        m->row[slot] = row;
        return 1;
    }
    return m->request[slot] == r && m->row[slot] == row;
}

/* Paging: row `row` of a request sits at row row % bs of its page, and rows of one logical
 * page share one block. Checked over every recorded slot pair of a request. */
static void check_paging(const slot_map *m, int32_t block_size, const char *pool)
{
    int bad = 0;
    int64_t *page_of = smla_test_alloc(sizeof(int64_t) * (size_t)(m->rows / block_size + 1));
    int32_t *owner = smla_test_alloc(sizeof(int32_t) * (size_t)(m->rows / block_size + 1));
    for (int64_t b = 0; b <= m->rows / block_size; b++)
        owner[b] = -1;
    for (int64_t s = 0; s < m->rows; s++) {
        if (m->request[s] < 0)
            continue;
        bad += m->row[s] % block_size != s % block_size;
        const int64_t block = s / block_size;
        if (owner[block] < 0) {
            owner[block] = m->request[s];
            page_of[block] = m->row[s] / block_size;
        } else {
            bad += owner[block] != m->request[s] || page_of[block] != m->row[s] / block_size;
        }
    }
    /* and no page of a request lives in two blocks */
    for (int64_t b = 0; b <= m->rows / block_size; b++)
        for (int64_t c = b + 1; c <= m->rows / block_size && owner[b] >= 0; c++)
            bad += owner[c] == owner[b] && page_of[c] == page_of[b];
    if (bad)
        fprintf(stderr, "%s pool: %d slots break the paging\n", pool, bad);
    CHECK(bad == 0);
    free(page_of);
    free(owner);
}

/* The engine rules, token by token. extra_rows: when every request fits one extra page,
 * the slot's row within its page is its compressed entry, and causality is exact. */
static void check_engine(const smla_engine_spec *s, const smla_workload *w)
{
    const smla_attention_args *a = &w->args;
    const int32_t width = s->window + s->topk;
    const int32_t *idx = a->swa_indices.data;
    const int32_t *swa_lens = a->swa_lens.data, *extra_lens = a->extra_lens.data;
    const int32_t *cu = a->cu_seqlens_q.data, *seq_lens = a->seq_lens.data;
    /* The engine layout: one buffer, extra columns right after the window. */
    CHECK(a->swa_indices.shape[1] == s->window && a->swa_indices.stride[0] == width);
    if (s->topk > 0) {
        CHECK((const int32_t *)a->extra_indices.data == idx + s->window);
        CHECK(a->extra_indices.shape[1] == s->topk && a->extra_indices.stride[0] == width);
    } else {
        CHECK(a->extra.data == NULL && a->extra_indices.data == NULL);
    }
    CHECK(a->window == s->window);
    CHECK(w->num_requests == s->num_requests && a->cu_seqlens_q.shape[0] == s->num_requests + 1);
    slot_map swa, extra;
    slot_map_make(&swa, a->swa.num_blocks * a->swa.block_size);
    slot_map_make(&extra, s->topk > 0 ? a->extra.num_blocks * a->extra.block_size : 1);
    int64_t entries = 0, bad_swa = 0, bad_extra = 0, bad_causal = 0;
    int max_entries = 0;
    for (int32_t r = 0; r < s->num_requests; r++)
        if ((s->requests[r].prefix_len + s->requests[r].query_len) / s->compress_ratio >
            max_entries)
            max_entries = (s->requests[r].prefix_len + s->requests[r].query_len) /
                          s->compress_ratio;
    const int one_page = s->topk > 0 && max_entries <= s->extra_block_size;
    unsigned char *seen = smla_test_zalloc((size_t)extra.rows);
    CHECK(cu[0] == 0);
    for (int32_t r = 0; r < s->num_requests; r++) {
        const int32_t q = s->requests[r].query_len, prefix = s->requests[r].prefix_len;
        CHECK(cu[r + 1] - cu[r] == q && seq_lens[r] == prefix + q);
        int64_t used_so_far = 0; /* distinct extra slots this request has named */
        for (int32_t i = 0; i < q; i++) {
            const int64_t t = cu[r] + i, pos = prefix + i;
            const int32_t *row = idx + t * width;
            const int64_t n = pos + 1 < s->window ? pos + 1 : s->window;
            CHECK(swa_lens[t] == n);
            for (int64_t j = 0; j < s->window; j++)
                bad_swa += j < n ? !slot_map_note(&swa, row[j], r, pos - n + 1 + j)
                                 : row[j] != -1;
            entries += n;
            if (s->topk == 0)
                continue;
            const int64_t available = (pos + 1) / s->compress_ratio;
            const int64_t k = available < s->topk ? available : s->topk;
            CHECK(extra_lens[t] == k);
            for (int64_t j = 0; j < s->topk; j++) {
                const int32_t slot = row[s->window + j];
                if (j >= k) {
                    bad_extra += slot != -1;
                    continue;
                }
                /* distinct within the row */
                for (int64_t l = 0; l < j; l++)
                    bad_extra += row[s->window + l] == slot;
                const int64_t entry = one_page ? slot % s->extra_block_size : -1;
                if (one_page)
                    bad_causal += entry >= available;
                bad_extra += !slot_map_note(&extra, slot, r, one_page ? entry : 0);
                if (slot >= 0 && slot < extra.rows && !seen[slot]) {
                    seen[slot] = 1;
                    used_so_far++;
                }
            }
            /* Every entry named so far is at or before pos: there are only `available`. */
            bad_causal += used_so_far > available;
            entries += k;
        }
    }
    CHECK(bad_swa == 0);
    CHECK(bad_extra == 0);
    CHECK(bad_causal == 0);
    check_paging(&swa, s->swa_block_size, "swa");
    if (one_page)
        check_paging(&extra, s->extra_block_size, "extra");
    CHECK(w->active_entries == entries);
    CHECK(w->flops == 2.0 * s->heads * 1024.0 * (double)entries);
    CHECK(w->kv_bytes == (double)entries * (double)smla_kv_token_bytes(s->kv_format));
    free(seen);
    slot_map_free(&swa);
    slot_map_free(&extra);
}

/* Every slot the index set names unpacks to finite values, not all zero. */
static void check_rows_random(const smla_kv_pool *pool, const smla_tensor *indices)
{
    if (!pool->data)
        return;
    const int32_t *ids = indices->data;
    const int64_t rows = pool->num_blocks * pool->block_size;
    float row[SMLA_HEAD_DIM];
    int64_t bad = 0;
    for (int64_t t = 0; t < indices->shape[0]; t++)
        for (int64_t j = 0; j < indices->shape[1]; j++) {
            const int32_t id = ids[t * indices->stride[0] + j];
            if (id < 0 || id >= rows)
                continue;
            CHECK_STATUS(smla_kv_unpack_slot(pool, id, row), SMLA_OK);
            int nonzero = 0, finite = 1;
            for (int d = 0; d < SMLA_HEAD_DIM; d++) {
                nonzero += row[d] != 0.0f;
                finite &= isfinite(row[d]) != 0;
            }
            bad += nonzero < SMLA_HEAD_DIM / 2 || !finite;
        }
    CHECK(bad == 0);
}

static void check_data(const smla_workload *w, int32_t heads, smla_dtype q_dtype)
{
    const smla_attention_args *a = &w->args;
    CHECK(a->q.dtype == q_dtype && a->q.shape[0] == w->num_tokens && a->q.shape[1] == heads);
    CHECK(a->bmm1_scale == (float)(1.0 / sqrt(576.0)) && a->bmm2_scale == 1.0f);
    CHECK(a->out.data && a->lse.data && a->sinks.data && a->backend == SMLA_BACKEND_AUTO);
    const float *sinks = a->sinks.data;
    for (int32_t h = 0; h < heads; h++)
        CHECK(isfinite(sinks[h]));
    /* q: mostly non-zero, spread values (N(0,1) through the dtype) */
    const size_t count = (size_t)w->num_tokens * (size_t)heads * SMLA_HEAD_DIM;
    double sum2 = 0.0;
    for (size_t i = 0; i < count; i++) {
        const float v = q_dtype == SMLA_DTYPE_BF16
                            ? smla_bf16_to_float(((const uint16_t *)a->q.data)[i])
                            : smla_e4m3_to_float(((const uint8_t *)a->q.data)[i]);
        sum2 += (double)v * v;
    }
    CHECK_NEAR(sum2 / (double)count, 1.0, 0.2);
    check_rows_random(&a->swa, &a->swa_indices);
    check_rows_random(&a->extra, &a->extra_indices);
}

/* The generated problem passes validation and runs; a second run positioned by a host
 * plan gives bit-identical results. */
static void check_runs(smla_workload *w)
{
    smla_attention_args args = w->args;
    CHECK_STATUS(smla_attention(g_ctx, &args), SMLA_OK);
    const size_t out_bytes = (size_t)w->num_tokens * (size_t)args.q.shape[1] * SMLA_HEAD_DIM * 2;
    const size_t lse_bytes = (size_t)w->num_tokens * (size_t)args.q.shape[1] * sizeof(float);
    void *out = smla_test_alloc(out_bytes), *lse = smla_test_alloc(lse_bytes);
    smla_plan_capacity capacity = {w->num_tokens, w->num_requests, 0};
    smla_plan *plan = NULL;
    CHECK_STATUS(smla_plan_create(g_ctx, &capacity, SMLA_MEMORY_HOST, &plan), SMLA_OK);
    smla_batch batch = {w->num_requests, args.cu_seqlens_q.data, args.seq_lens.data, 1,
                        args.q.dtype, 2};
    CHECK_STATUS(smla_plan_build(plan, &batch, NULL), SMLA_OK);
    args.plan = plan;
    args.cu_seqlens_q.data = args.seq_lens.data = NULL;
    args.out.data = out;
    args.lse.data = lse;
    CHECK_STATUS(smla_attention(g_ctx, &args), SMLA_OK);
    CHECK(memcmp(out, w->args.out.data, out_bytes) == 0);
    CHECK(memcmp(lse, w->args.lse.data, lse_bytes) == 0);
    smla_plan_destroy(plan);
    free(out);
    free(lse);
}

static const smla_kv_format formats[3] = {SMLA_KV_BF16, SMLA_KV_FP8, SMLA_KV_FP8_DS_MLA};

/* A random small engine batch; one_page makes every request fit one extra page. */
static void test_engine(smla_rng *rng, int one_page, int run)
{
    smla_workload_request requests[6];
    smla_engine_spec s;
    memset(&s, 0, sizeof s);
    s.heads = 8 << pick(rng, 0, 1);
    s.window = pick(rng, 1, 40);
    s.topk = pick(rng, 0, 3) == 0 ? 0 : pick(rng, 1, 48);
    s.compress_ratio = pick(rng, 1, 5);
    s.q_dtype = pick(rng, 0, 1) ? SMLA_DTYPE_BF16 : SMLA_DTYPE_FP8_E4M3;
    s.kv_format = formats[pick(rng, 0, 2)];
    s.swa_block_size = pick(rng, 1, 32);
    s.extra_block_size = one_page ? 512 : pick(rng, 1, 32);
    s.num_requests = pick(rng, 1, 6);
    s.requests = requests;
    s.seed = smla_rng_next(rng);
    for (int32_t r = 0; r < s.num_requests; r++) {
        /* decodes first, then prefills, some with prefixes */
        requests[r].query_len = r < s.num_requests / 2 ? 1 : pick(rng, 2, 40);
        requests[r].prefix_len = pick(rng, 0, 1) ? 0 : pick(rng, 0, one_page ? 400 : 300);
    }
    if (one_page)
        s.topk = s.topk ? s.topk : 8;
    smla_workload w;
    smla_tool_error error = {{0}};
    CHECK_STATUS(smla_workload_engine(&s, &w, &error), SMLA_OK);
    if (smla_test_failures) {
        fprintf(stderr, "workload: %s\n", error.message);
        return;
    }
    check_engine(&s, &w);
    check_data(&w, s.heads, s.q_dtype);
    if (run)
        check_runs(&w);
    smla_workload_free(&w);
}

static void test_deterministic(smla_rng *rng)
{
    smla_workload_request requests[3] = {{1, 500}, {37, 80}, {9, 0}};
    smla_engine_spec s = {16, 128, 64, 4, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8, 16, 8,
                          requests, 3, smla_rng_next(rng)};
    smla_workload a, b;
    CHECK_STATUS(smla_workload_engine(&s, &a, NULL), SMLA_OK);
    CHECK_STATUS(smla_workload_engine(&s, &b, NULL), SMLA_OK);
    const size_t idx_bytes = (size_t)a.num_tokens * (128 + 64) * sizeof(int32_t);
    const size_t pool_bytes = (size_t)(a.args.swa.num_blocks * a.args.swa.block_stride);
    CHECK(memcmp(a.args.swa_indices.data, b.args.swa_indices.data, idx_bytes) == 0);
    CHECK(memcmp(a.args.q.data, b.args.q.data, (size_t)a.num_tokens * 16 * 512) == 0);
    CHECK(memcmp(a.args.swa.data, b.args.swa.data, pool_bytes) == 0);
    smla_workload_free(&b);
    s.seed++;
    CHECK_STATUS(smla_workload_engine(&s, &b, NULL), SMLA_OK);
    CHECK(memcmp(a.args.q.data, b.args.q.data, (size_t)a.num_tokens * 16 * 512) != 0);
    smla_workload_free(&a);
    smla_workload_free(&b);
}

/* A hand-sized batch whose entry count follows from the rules by hand: window 4, topk 3,
 * ratio 2, one request of 6 tokens after a prefix of 1: positions 1..6 have window
 * columns 2,3,4,4,4,4 and compressed entries min(3, (pos+1)/2) = 1,1,2,2,3,3: 33 in all. */
static void test_flops_by_hand(smla_rng *rng)
{
    smla_workload_request request = {6, 1};
    smla_engine_spec s = {8, 4, 3, 2, SMLA_DTYPE_BF16, SMLA_KV_BF16, 4, 2, &request, 1,
                          smla_rng_next(rng)};
    smla_workload w;
    CHECK_STATUS(smla_workload_engine(&s, &w, NULL), SMLA_OK);
    CHECK(w.active_entries == 33);
    CHECK(w.flops == 2.0 * 8 * 1024 * 33);
    CHECK(w.kv_bytes == 1024.0 * 33);
    smla_workload_free(&w);
}

static void test_random_rows(smla_rng *rng)
{
    smla_random_rows_spec s = {16, pick(rng, 1, 40), pick(rng, 1, 200), 0, 0.05,
                               SMLA_DTYPE_FP8_E4M3, formats[pick(rng, 0, 2)], pick(rng, 1, 64),
                               smla_rng_next(rng)};
    s.pool_rows = s.entries + pick(rng, 0, 300);
    smla_workload w;
    CHECK_STATUS(smla_workload_random_rows(&s, &w, NULL), SMLA_OK);
    const int32_t *idx = w.args.swa_indices.data;
    int64_t valid = 0, bad = 0;
    unsigned char *seen = smla_test_alloc((size_t)s.pool_rows);
    for (int32_t t = 0; t < s.tokens; t++) {
        memset(seen, 0, (size_t)s.pool_rows);
        for (int32_t j = 0; j < s.entries; j++) {
            const int32_t id = idx[(int64_t)t * s.entries + j];
            if (id == -1)
                continue;
            bad += id < 0 || id >= s.pool_rows || seen[id];
            if (id >= 0 && id < s.pool_rows)
                seen[id] = 1;
            valid++;
        }
    }
    free(seen);
    CHECK(bad == 0);
    CHECK(w.active_entries == valid);
    CHECK(w.flops == 2.0 * 16 * 1024 * (double)valid);
    CHECK(w.args.extra.data == NULL && w.args.cu_seqlens_q.data == NULL && w.num_requests == 0);
    check_data(&w, 16, SMLA_DTYPE_FP8_E4M3);
    CHECK_STATUS(smla_attention(g_ctx, &w.args), SMLA_OK);
    smla_workload_free(&w);
}

static void expect_bad_spec(smla_engine_spec s, const char *word)
{
    smla_workload w;
    smla_tool_error error = {{0}};
    CHECK_STATUS(smla_workload_engine(&s, &w, &error), SMLA_ERR_VALUE);
    if (!strstr(error.message, word)) {
        fprintf(stderr, "message '%s' does not name '%s'\n", error.message, word);
        smla_test_failures++;
    }
    CHECK(w.num_buffers == 0);
}

static void test_bad_specs(void)
{
    smla_workload_request good = {4, 10}, zero = {0, 10}, negative = {4, -1};
    const smla_engine_spec s = {16, 128, 512, 4, SMLA_DTYPE_FP8_E4M3, SMLA_KV_FP8, 64, 64,
                                &good, 1, 1};
    smla_engine_spec b = s;
    b.heads = 0;
    expect_bad_spec(b, "heads");
    b = s;
    b.compress_ratio = 0;
    expect_bad_spec(b, "compress_ratio");
    b = s;
    b.kv_format = SMLA_KV_INVALID;
    expect_bad_spec(b, "kv_format");
    b = s;
    b.q_dtype = SMLA_DTYPE_F32;
    expect_bad_spec(b, "q_dtype");
    b = s;
    b.extra_block_size = 0;
    expect_bad_spec(b, "block");
    b = s;
    b.requests = &zero;
    expect_bad_spec(b, "request 0");
    b.requests = &negative;
    expect_bad_spec(b, "request 0");
    b = s;
    b.num_requests = 0;
    expect_bad_spec(b, "request");
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_workload"));
    CHECK_STATUS(smla_context_create(&g_ctx), SMLA_OK);
    for (int i = 0; i < 60 && !smla_test_failures; i++)
        test_engine(&rng, i % 2, i < 10);
    test_deterministic(&rng);
    test_flops_by_hand(&rng);
    for (int i = 0; i < 10 && !smla_test_failures; i++)
        test_random_rows(&rng);
    test_bad_specs();
    smla_context_destroy(g_ctx);
    return smla_test_finish("test_workload");
}
