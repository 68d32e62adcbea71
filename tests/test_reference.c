/* The CPU reference attention (src/ref/) against DESIGN section 2: a case worked out by
 * hand; random problems against this file's own plain reading of the spec; the rules
 * one by one (invalid indices next to inaccessible pages, sinks, positions and the
 * window, active lengths, scales, duplicates, FP8 queries, the engine index layout); and
 * the invariances: segmentation, plan vs cu_seqlens positions and the thread count give
 * bit-identical outputs. Problems are built by hand as smla_problem, so any head count
 * works. */
#define _DEFAULT_SOURCE /* mmap, MAP_ANONYMOUS */
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "problem.h"
#include "testutil.h"

#define D SMLA_HEAD_DIM
#define OUT_POISON 0xFFC1u      /* a BF16 NaN the reference never writes */
#define LSE_POISON 0x7FC0DEADu  /* an F32 NaN the reference never writes */

static smla_context *g_ctx;

/* ------------------------------------------------------------------ memory */

/* A mapping whose usable bytes end exactly at an inaccessible page, with another
 * inaccessible page before its first page: reading past the end crashes the test, and
 * so does reading before the start when the size is a multiple of the page size. */
typedef struct guarded {
    void *base;
    size_t bytes;
} guarded;

static void *guarded_alloc(size_t bytes, guarded *g)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t pages = (bytes + page - 1) / page;
    g->bytes = (pages + 2) * page;
    g->base = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->base == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    char *base = g->base;
    if (mprotect(base, page, PROT_NONE) != 0 ||
        mprotect(base + (pages + 1) * page, page, PROT_NONE) != 0) {
        perror("mprotect");
        exit(1);
    }
    return base + (pages + 1) * page - bytes;
}

/* ------------------------------------------------------------------ fixtures */

/* A pool behind guard pages, and every row decoded (the truth the oracle reads). */
typedef struct pool_data {
    smla_kv_pool pool;
    float *decoded;
    guarded mem;
} pool_data;

static void pool_free(pool_data *pd)
{
    if (pd->mem.base)
        munmap(pd->mem.base, pd->mem.bytes);
    free(pd->decoded);
    memset(pd, 0, sizeof *pd);
}

/* Packs rows [rows][D] (NULL: random values, tiles of different magnitudes). */
static void pool_make(pool_data *pd, smla_rng *rng, smla_kv_format format, int64_t num_blocks,
                      int32_t block_size, int64_t block_stride, const float *rows)
{
    pd->pool = smla_kv_pool_make(NULL, format, num_blocks, block_size, SMLA_MEMORY_HOST);
    if (block_stride > 0)
        pd->pool.block_stride = block_stride;
    pd->pool.data = guarded_alloc((size_t)(num_blocks * pd->pool.block_stride), &pd->mem);
    const int64_t n = num_blocks * block_size;
    float *values = smla_test_alloc(sizeof(float) * (size_t)(n * D));
    for (int64_t i = 0; i < n * D; i++) {
        const double tile_scale = ldexp(1.0, (int)((i / 64 * 7919) % 7) - 3);
        values[i] = rows ? rows[i] : (float)(smla_rng_normal(rng) * tile_scale);
    }
    CHECK_STATUS(smla_kv_pack(&pd->pool, values), SMLA_OK);
    pd->decoded = smla_test_alloc(sizeof(float) * (size_t)(n * D));
    CHECK_STATUS(smla_kv_unpack(&pd->pool, pd->decoded), SMLA_OK);
    free(values);
}

/* A problem with its own buffers. */
typedef struct fixture {
    smla_problem p;
    pool_data pools[2];      /* swa, extra */
    void *q;
    int32_t *indices[2];
    int32_t *lens[2];
    int32_t *cu[SMLA_MAX_POSITION_PARTS];
    int32_t *seq_lens[SMLA_MAX_POSITION_PARTS];
    float *sinks;
    uint16_t *out;
    float *lse;
} fixture;

/* What a random fixture looks like. */
typedef struct spec {
    int64_t tokens;
    int32_t heads;
    smla_dtype q_dtype;
    smla_kv_format format[2]; /* format[1] SMLA_KV_INVALID: SWA only */
    int32_t width[2];
    int lens;                 /* random active lengths, some out of range */
    int parts;                /* 0: no positions; else 1 or 2 parts */
    int32_t window;
    int sinks;                /* random per-head sinks, some +-inf */
} spec;

static smla_index_set *index_set(smla_problem *p, int i)
{
    return i == 0 ? &p->swa : &p->extra;
}

/* Output buffers sized by the problem's strides, filled with poison. */
static void outputs_make(smla_problem *p, uint16_t **out, float **lse)
{
    const size_t out_elems = (size_t)(p->num_tokens * p->out_token_stride);
    const size_t lse_elems = (size_t)(p->num_tokens * p->lse_token_stride);
    *out = smla_test_alloc(sizeof(uint16_t) * out_elems);
    for (size_t i = 0; i < out_elems; i++)
        (*out)[i] = OUT_POISON;
    *lse = smla_test_alloc(sizeof(float) * lse_elems);
    const uint32_t poison = LSE_POISON;
    for (size_t i = 0; i < lse_elems; i++)
        memcpy(&(*lse)[i], &poison, sizeof poison);
    p->out = *out;
    p->lse = *lse;
}

static void fixture_free(fixture *f)
{
    for (int i = 0; i < 2; i++) {
        pool_free(&f->pools[i]);
        free(f->indices[i]);
        free(f->lens[i]);
    }
    for (int i = 0; i < SMLA_MAX_POSITION_PARTS; i++) {
        free(f->cu[i]);
        free(f->seq_lens[i]);
    }
    free(f->q);
    free(f->sinks);
    free(f->out);
    free(f->lse);
    memset(f, 0, sizeof *f);
}

static void make_queries(fixture *f, smla_rng *rng, smla_dtype dtype)
{
    smla_problem *p = &f->p;
    p->q_dtype = dtype;
    p->q_token_stride = (int64_t)p->num_heads * D + 64 * smla_rng_range(rng, 0, 1);
    const int64_t n = p->num_tokens * p->q_token_stride;
    f->q = smla_test_alloc((size_t)n * smla_dtype_size(dtype));
    for (int64_t i = 0; i < n; i++) {
        const double x = smla_rng_normal(rng);
        if (dtype == SMLA_DTYPE_BF16)
            ((uint16_t *)f->q)[i] = smla_float_to_bf16((float)x);
        else
            ((uint8_t *)f->q)[i] = smla_float_to_e4m3((float)(8.0 * x));
    }
    p->q = f->q;
}

/* A slot id that is not valid for a pool of rows rows. */
static int32_t invalid_slot(smla_rng *rng, int64_t rows)
{
    const int64_t kinds[] = {-1, -2, INT32_MIN, rows, rows + 1, INT32_MAX, -rows - 1};
    return (int32_t)kinds[smla_rng_range(rng, 0, 6)];
}

static void make_index_set(fixture *f, smla_rng *rng, int i, smla_kv_format format,
                           int32_t width, int lens)
{
    smla_index_set *set = index_set(&f->p, i);
    const int64_t blocks = smla_rng_range(rng, 1, 4);
    const int32_t block_size = (int32_t)smla_rng_range(rng, 1, 24);
    const int64_t pad = 16 * smla_rng_range(rng, 0, 2);
    pool_make(&f->pools[i], rng, format, blocks,
              block_size, smla_kv_block_bytes(format, block_size) + pad, NULL);
    set->pool = f->pools[i].pool;
    set->pool_rows = blocks * block_size;
    set->width = width;
    set->row_stride = width + smla_rng_range(rng, 0, 3);
    const int64_t T = f->p.num_tokens;
    f->indices[i] = smla_test_alloc(sizeof(int32_t) * (size_t)(T * set->row_stride));
    for (int64_t t = 0; t < T; t++) {
        int32_t *row = f->indices[i] + t * set->row_stride;
        for (int64_t j = 0; j < set->row_stride; j++) {
            const double u = smla_rng_uniform(rng);
            if (u < 0.1)
                row[j] = invalid_slot(rng, set->pool_rows);
            else if (u < 0.2 && j > 0)
                row[j] = row[j - 1]; /* a duplicate */
            else
                row[j] = (int32_t)smla_rng_range(rng, 0, set->pool_rows - 1);
        }
    }
    set->indices = f->indices[i];
    if (!lens)
        return;
    set->lens_stride = smla_rng_range(rng, 1, 2);
    f->lens[i] = smla_test_alloc(sizeof(int32_t) * (size_t)(T * set->lens_stride));
    for (int64_t t = 0; t < T; t++) {
        const double u = smla_rng_uniform(rng);
        f->lens[i][t * set->lens_stride] =
            u < 0.1 ? INT32_MIN
            : u < 0.2 ? INT32_MAX
                      : (int32_t)smla_rng_range(rng, -3, width + 3);
    }
    set->lens = f->lens[i];
}

/* Part i over tokens [offset, offset + n): a few sequences, some empty, rows at the
 * start and end often left as padding, sequence lengths sometimes shorter than the
 * query length and sometimes far past the window. */
static void make_part(fixture *f, smla_rng *rng, int i, int64_t offset, int64_t n)
{
    const int32_t num_seqs = (int32_t)smla_rng_range(rng, 1, 4);
    f->cu[i] = smla_test_alloc(sizeof(int32_t) * (size_t)(num_seqs + 1));
    f->seq_lens[i] = smla_test_alloc(sizeof(int32_t) * (size_t)num_seqs);
    f->cu[i][0] = (int32_t)smla_rng_range(rng, 0, n > 0 ? 1 : 0);
    for (int32_t b = 0; b < num_seqs; b++) {
        const int64_t left = n - f->cu[i][b];
        const int64_t len = smla_rng_range(rng, 0, left);
        f->cu[i][b + 1] = (int32_t)(f->cu[i][b] + len);
        const int64_t context = smla_rng_uniform(rng) < 0.2 ? 100000
                                                            : smla_rng_range(rng, -len - 2, 140);
        f->seq_lens[i][b] = (int32_t)(len + context);
    }
    smla_positions *part = &f->p.parts[i];
    part->cu = f->cu[i];
    part->seq_lens = f->seq_lens[i];
    part->num_seqs = num_seqs;
    part->token_offset = offset;
    part->num_tokens = n;
}

static void fixture_make(fixture *f, smla_rng *rng, const spec *s)
{
    memset(f, 0, sizeof *f);
    smla_problem *p = &f->p;
    p->num_tokens = s->tokens;
    p->num_heads = s->heads;
    p->memory = SMLA_MEMORY_HOST;
    make_queries(f, rng, s->q_dtype);
    for (int i = 0; i < 2; i++)
        if (s->format[i] != SMLA_KV_INVALID)
            make_index_set(f, rng, i, s->format[i], s->width[i], s->lens);
    p->num_parts = s->parts;
    p->window = s->window;
    if (s->parts == 1) {
        make_part(f, rng, 0, 0, s->tokens);
    } else if (s->parts == 2) { /* decode part, prefill part, maybe rows after both */
        const int64_t split = smla_rng_range(rng, 0, s->tokens);
        make_part(f, rng, 0, 0, split);
        make_part(f, rng, 1, split, smla_rng_range(rng, 0, s->tokens - split));
    }
    if (s->sinks) {
        f->sinks = smla_test_alloc(sizeof(float) * (size_t)s->heads);
        for (int32_t h = 0; h < s->heads; h++) {
            const double u = smla_rng_uniform(rng);
            f->sinks[h] = u < 0.15 ? -INFINITY : u < 0.3 ? INFINITY : (float)(2 * smla_rng_normal(rng));
        }
        p->sinks = f->sinks;
    }
    p->bmm1_scale = (float)(smla_rng_uniform(rng) + 0.5) / sqrtf((float)D) *
                    (s->q_dtype == SMLA_DTYPE_FP8_E4M3 ? 0.125f : 1.0f);
    p->bmm2_scale = (float)(smla_rng_uniform(rng) * 1.5 + 0.5);
    p->out_token_stride = (int64_t)s->heads * D + 8 * smla_rng_range(rng, 0, 2);
    p->lse_token_stride = s->heads + smla_rng_range(rng, 0, 2);
    outputs_make(p, &f->out, &f->lse);
}

static spec random_spec(smla_rng *rng)
{
    static const int32_t heads[] = {1, 2, 3, 8, 16};
    static const int32_t windows[] = {1, 2, 7, 128};
    spec s;
    s.tokens = smla_rng_range(rng, 1, 40);
    s.heads = heads[smla_rng_range(rng, 0, 4)];
    s.q_dtype = smla_rng_uniform(rng) < 0.5 ? SMLA_DTYPE_BF16 : SMLA_DTYPE_FP8_E4M3;
    s.format[0] = (smla_kv_format)smla_rng_range(rng, SMLA_KV_BF16, SMLA_KV_FP8_DS_MLA);
    s.format[1] = (smla_kv_format)smla_rng_range(rng, SMLA_KV_INVALID, SMLA_KV_FP8_DS_MLA);
    s.width[0] = (int32_t)smla_rng_range(rng, 0, 40);
    s.width[1] = (int32_t)smla_rng_range(rng, 0, 60);
    s.lens = smla_rng_uniform(rng) < 0.5;
    s.parts = (int)smla_rng_range(rng, 0, 2);
    s.window = windows[smla_rng_range(rng, 0, 3)];
    s.sinks = smla_rng_uniform(rng) < 0.6;
    return s;
}

/* ------------------------------------------------------------------ the oracle */

/* This file's own, plain reading of DESIGN section 2 for one token: every head's out
 * (before BF16 rounding) and lse. Returns 0 when the token is padding. */
static int oracle_position(const smla_problem *p, int64_t t, int64_t *pos)
{
    for (int i = 0; i < p->num_parts; i++) {
        const smla_positions *part = &p->parts[i];
        const int64_t rel = t - part->token_offset;
        if (rel < 0 || rel >= part->num_tokens)
            continue;
        for (int32_t b = 0; b < part->num_seqs; b++)
            if (part->cu[b] <= rel && rel < part->cu[b + 1]) {
                *pos = part->seq_lens[b] - (int64_t)(part->cu[b + 1] - part->cu[b]) +
                       (rel - part->cu[b]);
                return 1;
            }
        return 0;
    }
    *pos = INT64_MAX; /* no positions: no window */
    return p->num_parts == 0;
}

static int64_t oracle_active(const smla_index_set *set, int64_t t)
{
    int64_t n = set->lens ? set->lens[t * set->lens_stride] : set->width;
    return n < 0 ? 0 : n > set->width ? set->width : n;
}

static double oracle_query(const smla_problem *p, int64_t t, int32_t h, int d)
{
    const int64_t i = t * p->q_token_stride + (int64_t)h * D + d;
    if (p->q_dtype == SMLA_DTYPE_BF16)
        return smla_bf16_to_float(((const uint16_t *)p->q)[i]);
    return smla_e4m3_to_float(((const uint8_t *)p->q)[i]);
}

static int oracle_token(const smla_problem *p, const float *const decoded[2], int64_t t,
                        double *out, double *lse)
{
    int64_t pos;
    if (!oracle_position(p, t, &pos))
        return 0;
    const float *rows[4096];
    int n = 0;
    for (int i = 0; i < 2; i++) {
        const smla_index_set *set = i == 0 ? &p->swa : &p->extra;
        int64_t active = oracle_active(set, t);
        if (i == 0 && pos != INT64_MAX) {
            const int64_t window = pos + 1 < p->window ? pos + 1 : p->window;
            active = active < window ? active : window < 0 ? 0 : window;
        }
        for (int64_t j = 0; j < active; j++) {
            const int32_t slot = set->indices[t * set->row_stride + j];
            if (slot >= 0 && slot < set->pool_rows && n < 4096)
                rows[n++] = decoded[i] + (int64_t)slot * D;
        }
    }
    for (int32_t h = 0; h < p->num_heads; h++) {
        double *o = out + (int64_t)h * D;
        memset(o, 0, sizeof(double) * D);
        lse[h] = -INFINITY;
        if (n == 0)
            continue;
        double s[4096], max_s = -INFINITY, sum = 0.0;
        for (int j = 0; j < n; j++) {
            double dot = 0.0;
            for (int d = 0; d < D; d++)
                dot += oracle_query(p, t, h, d) * rows[j][d];
            s[j] = p->bmm1_scale * dot;
            max_s = fmax(max_s, s[j]);
        }
        for (int j = 0; j < n; j++)
            sum += exp(s[j] - max_s);
        lse[h] = max_s + log(sum);
        const double sink = p->sinks ? p->sinks[h] : -INFINITY;
        if (sink == INFINITY)
            continue;
        const double m = fmax(max_s, sink);
        double denominator = exp(sink - m);
        for (int j = 0; j < n; j++)
            denominator += exp(s[j] - m);
        for (int j = 0; j < n; j++) {
            const double probability = exp(s[j] - m) / denominator;
            for (int d = 0; d < D; d++)
                o[d] += p->bmm2_scale * probability * rows[j][d];
        }
    }
    return 1;
}

static uint32_t lse_bits(const float *lse)
{
    uint32_t bits;
    memcpy(&bits, lse, sizeof bits);
    return bits;
}

/* Checks every token of the problem's outputs against the oracle; padding rows and the
 * gaps between rows must still hold the poison. Prints the first few mismatches. */
static void check_against_oracle(const smla_problem *p, const float *const decoded[2],
                                 const char *label)
{
    double *out = smla_test_alloc(sizeof(double) * (size_t)p->num_heads * D);
    double *lse = smla_test_alloc(sizeof(double) * (size_t)p->num_heads);
    int reported = 0;
    for (int64_t t = 0; t < p->num_tokens; t++) {
        const uint16_t *got = p->out + t * p->out_token_stride;
        const float *got_lse = p->lse + t * p->lse_token_stride;
        const int computed = oracle_token(p, decoded, t, out, lse);
        int64_t bad = 0;
        for (int64_t i = (int64_t)p->num_heads * D; i < p->out_token_stride; i++)
            bad += got[i] != OUT_POISON;
        for (int64_t i = p->num_heads; i < p->lse_token_stride; i++)
            bad += lse_bits(&got_lse[i]) != LSE_POISON;
        for (int32_t h = 0; h < p->num_heads; h++) {
            const uint32_t lb = lse_bits(&got_lse[h]);
            if (!computed) {
                bad += lb != LSE_POISON;
                for (int d = 0; d < D; d++)
                    bad += got[(int64_t)h * D + d] != OUT_POISON;
                continue;
            }
            const double want_lse = lse[h];
            if (isinf(want_lse) ? got_lse[h] != want_lse
                                : !(fabs(got_lse[h] - want_lse) <= 1e-5 * (1 + fabs(want_lse))))
                bad++;
            for (int d = 0; d < D; d++) {
                const double want = out[(int64_t)h * D + d];
                const double value = smla_bf16_to_float(got[(int64_t)h * D + d]);
                /* Both sides sum in double; their BF16 roundings differ by at most one
                 * step, and only next to a rounding boundary. */
                if (!(fabs(value - want) <= fabs(want) * 0x1p-8 + 1e-30)) {
                    if (reported++ < 5)
                        fprintf(stderr, "%s: token %lld head %d dim %d: got %.9g want %.9g\n",
                                label, (long long)t, (int)h, d, value, want);
                    bad++;
                }
            }
        }
        if (bad && reported++ < 5)
            fprintf(stderr, "%s: token %lld (%s): %lld wrong values\n", label, (long long)t,
                    computed ? "computed" : "padding", (long long)bad);
        CHECK(bad == 0);
    }
    free(out);
    free(lse);
}

static const float *const *fixture_truth(const fixture *f, const float *truth[2])
{
    truth[0] = f->pools[0].decoded;
    truth[1] = f->pools[1].decoded;
    return truth;
}

/* Runs the reference on a copy of f's problem with fresh poisoned outputs (kept in
 * *out / *lse, which the caller frees) after edit changed the copy. */
static smla_problem run_copy(const smla_problem *base, uint16_t **out, float **lse)
{
    smla_problem p = *base;
    outputs_make(&p, out, lse);
    CHECK_STATUS(smla_ref_attention(g_ctx, &p), SMLA_OK);
    return p;
}

static int same_outputs(const smla_problem *a, const smla_problem *b)
{
    return memcmp(a->out, b->out, sizeof(uint16_t) * (size_t)(a->num_tokens * a->out_token_stride)) == 0 &&
           memcmp(a->lse, b->lse, sizeof(float) * (size_t)(a->num_tokens * a->lse_token_stride)) == 0;
}

/* ------------------------------------------------------------------ a case by hand */

/* Two tokens, two heads, three entries of a bf16 pool:
 *   k0 = e0,  k1 = e1 + 0.5 e511,  k2 = e0 + e1
 * token 0 reads (0, 1, 2), token 1 reads (2, -1, 2): the invalid -1 is skipped and k2
 * counts twice. q: token 0 head 0 = 2 e0, head 1 = 4 e1; token 1 head 0 = e0 + e1,
 * head 1 = -2 e1. bmm1 = 0.5, bmm2 = 2; sink of head 0 absent (-inf), of head 1 = 1.
 * Scores s = 0.5 q.k: t0h0 (1, 0, 1), t0h1 (0, 2, 2), t1h0 (1, 1), t1h1 (-1, -1). */
static void test_hand_case(void)
{
    const double e = exp(1.0);
    float rows[4 * D] = {0};
    rows[0 * D + 0] = 1;
    rows[1 * D + 1] = 1;
    rows[1 * D + 511] = 0.5f;
    rows[2 * D + 0] = 1;
    rows[2 * D + 1] = 1;
    pool_data pool;
    memset(&pool, 0, sizeof pool);
    pool_make(&pool, NULL, SMLA_KV_BF16, 1, 4, 0, rows);
    int32_t indices[2][3] = {{0, 1, 2}, {2, -1, 2}};
    uint16_t q[2][2][D] = {{{0}}};
    q[0][0][0] = smla_float_to_bf16(2);
    q[0][1][1] = smla_float_to_bf16(4);
    q[1][0][0] = q[1][0][1] = smla_float_to_bf16(1);
    q[1][1][1] = smla_float_to_bf16(-2);
    float sinks[2] = {-INFINITY, 1};
    smla_problem p;
    memset(&p, 0, sizeof p);
    p.num_tokens = 2;
    p.num_heads = 2;
    p.q = q;
    p.q_dtype = SMLA_DTYPE_BF16;
    p.q_token_stride = 2 * D;
    p.swa.indices = &indices[0][0];
    p.swa.row_stride = 3;
    p.swa.width = 3;
    p.swa.pool = pool.pool;
    p.swa.pool_rows = 4;
    p.window = SMLA_DEFAULT_WINDOW;
    p.sinks = sinks;
    p.bmm1_scale = 0.5f;
    p.bmm2_scale = 2.0f;
    p.out_token_stride = 2 * D;
    p.lse_token_stride = 2;
    p.memory = SMLA_MEMORY_HOST;
    uint16_t *out;
    float *lse;
    p = run_copy(&p, &out, &lse);

    /* want[t][h] = {out[0], out[1], out[511], lse} */
    const double z00 = 2 + 1 / e;             /* e^0 + e^-1 + e^0, no sink */
    const double z01 = exp(-2) + 2 + exp(-1); /* m = 2; the sink e^(1-2) joins */
    const double z11 = 2 * exp(-2) + 1;       /* m = sink = 1 */
    const double want[2][2][4] = {
        {{2 * 2 / z00, 2 * (1 / e + 1) / z00, 2 * 0.5 / e / z00, log(2 * e + 1)},
         {2 * (exp(-2) + 1) / z01, 2 * 2 / z01, 2 * 0.5 / z01, log(1 + 2 * e * e)}},
        {{2, 2, 0, log(2 * e)},
         {4 * exp(-2) / z11, 4 * exp(-2) / z11, 0, -1 + log(2.0)}}};
    for (int t = 0; t < 2; t++)
        for (int h = 0; h < 2; h++) {
            const uint16_t *o = out + (t * 2 + h) * D;
            CHECK(o[0] == smla_float_to_bf16((float)want[t][h][0]));
            CHECK(o[1] == smla_float_to_bf16((float)want[t][h][1]));
            CHECK(o[511] == smla_float_to_bf16((float)want[t][h][2]));
            int nonzero_elsewhere = 0;
            for (int d = 2; d < 511; d++)
                nonzero_elsewhere += o[d] != 0;
            CHECK(nonzero_elsewhere == 0);
            CHECK_NEAR(lse[t * 2 + h], want[t][h][3], 1e-6);
        }
    free(out);
    free(lse);
    pool_free(&pool);
}

/* ------------------------------------------------------------------ random problems */

static void test_random_against_oracle(smla_rng *rng)
{
    for (int iter = 0; iter < 40; iter++) {
        spec s = random_spec(rng);
        fixture f;
        fixture_make(&f, rng, &s);
        CHECK_STATUS(smla_ref_attention(g_ctx, &f.p), SMLA_OK);
        char label[160];
        snprintf(label, sizeof label,
                 "random %d (T %lld H %d q %s formats %d/%d widths %d/%d lens %d parts %d "
                 "window %d sinks %d)",
                 iter, (long long)s.tokens, s.heads,
                 s.q_dtype == SMLA_DTYPE_BF16 ? "bf16" : "fp8", s.format[0], s.format[1],
                 s.width[0], s.width[1], s.lens, s.parts, s.window, s.sinks);
        const float *truth[2];
        check_against_oracle(&f.p, fixture_truth(&f, truth), label);
        fixture_free(&f);
    }
}

/* Each kind of invalid slot id, for each format, with pools whose first and last byte
 * touch inaccessible pages: reading any invalid slot would crash. The outputs equal
 * those of the same rows with the invalid ids removed. */
static void test_invalid_indices(smla_rng *rng)
{
    /* block geometry of a whole number of pages: 4 KiB for bf16 and fp8, 40 KiB for a
     * fp8_ds_mla block of 64 rows with a padded stride */
    static const struct {
        smla_kv_format format;
        int32_t block_size;
        int64_t block_stride;
    } pools[] = {{SMLA_KV_BF16, 4, 4096}, {SMLA_KV_FP8, 8, 4096},
                 {SMLA_KV_FP8_DS_MLA, 64, 40960}};
    for (size_t k = 0; k < sizeof pools / sizeof pools[0]; k++) {
        const spec s = {6, 3, SMLA_DTYPE_BF16, {SMLA_KV_BF16, SMLA_KV_INVALID}, {12, 0}, 0, 0,
                        SMLA_DEFAULT_WINDOW, 0};
        fixture f;
        fixture_make(&f, rng, &s);
        pool_free(&f.pools[0]);
        pool_make(&f.pools[0], rng, pools[k].format, 2, pools[k].block_size,
                  pools[k].block_stride, NULL);
        smla_index_set *set = &f.p.swa;
        set->pool = f.pools[0].pool;
        set->pool_rows = 2 * pools[k].block_size;
        const int64_t rows = set->pool_rows;
        const int32_t invalid[] = {-1, -2, INT32_MIN, (int32_t)rows, (int32_t)rows + 1,
                                   INT32_MAX, (int32_t)(2 * rows)};
        int32_t compact[6][12];
        int32_t compact_lens[6];
        for (int64_t t = 0; t < 6; t++) {
            int32_t *row = f.indices[0] + t * set->row_stride;
            compact_lens[t] = 0;
            for (int j = 0; j < 12; j++) {
                if ((j + t) % 2 == 0) {
                    row[j] = invalid[(j + t) / 2 % 7];
                } else {
                    /* first and last rows of the pool included: the guard pages sit
                     * right next to them */
                    row[j] = j == 1 ? 0 : j == 3 ? (int32_t)rows - 1
                                                 : (int32_t)smla_rng_range(rng, 0, rows - 1);
                    compact[t][compact_lens[t]++] = row[j];
                }
            }
        }
        CHECK_STATUS(smla_ref_attention(g_ctx, &f.p), SMLA_OK);
        const float *truth[2];
        check_against_oracle(&f.p, fixture_truth(&f, truth), "invalid indices");
        smla_problem valid_only = f.p;
        valid_only.swa.indices = &compact[0][0];
        valid_only.swa.row_stride = 12;
        valid_only.swa.lens = compact_lens;
        valid_only.swa.lens_stride = 1;
        uint16_t *out;
        float *lse;
        valid_only = run_copy(&valid_only, &out, &lse);
        CHECK(same_outputs(&f.p, &valid_only));
        free(out);
        free(lse);
        fixture_free(&f);
    }
}

/* A SWA-only problem without positions or lengths, for the rule-by-rule tests. */
static void plain_fixture(fixture *f, smla_rng *rng, int64_t tokens, int32_t width,
                          int extra)
{
    const spec s = {tokens, 4, SMLA_DTYPE_BF16,
                    {SMLA_KV_BF16, extra ? SMLA_KV_FP8_DS_MLA : SMLA_KV_INVALID},
                    {width, extra ? 16 : 0}, 0, 0, SMLA_DEFAULT_WINDOW, 0};
    fixture_make(f, rng, &s);
}

/* sink -inf is the same as no sink; +inf gives out = 0 and leaves lse alone; finite
 * sinks agree with the oracle (and the hand case). */
static void test_sinks(smla_rng *rng)
{
    fixture f;
    plain_fixture(&f, rng, 9, 20, 1);
    CHECK_STATUS(smla_ref_attention(g_ctx, &f.p), SMLA_OK);
    float sinks[4];
    smla_problem with_sinks = f.p;
    with_sinks.sinks = sinks;
    uint16_t *out;
    float *lse;

    for (int h = 0; h < 4; h++)
        sinks[h] = -INFINITY;
    smla_problem minus_inf = run_copy(&with_sinks, &out, &lse);
    CHECK(same_outputs(&f.p, &minus_inf));
    free(out);
    free(lse);

    for (int h = 0; h < 4; h++)
        sinks[h] = INFINITY;
    smla_problem plus_inf = run_copy(&with_sinks, &out, &lse);
    int64_t nonzero = 0, lse_changed = 0;
    for (int64_t t = 0; t < f.p.num_tokens; t++) {
        for (int64_t i = 0; i < 4 * D; i++)
            nonzero += plus_inf.out[t * f.p.out_token_stride + i] != 0;
        for (int h = 0; h < 4; h++)
            lse_changed += lse_bits(&plus_inf.lse[t * f.p.lse_token_stride + h]) !=
                           lse_bits(&f.p.lse[t * f.p.lse_token_stride + h]);
    }
    CHECK(nonzero == 0);
    CHECK(lse_changed == 0);
    free(out);
    free(lse);

    for (int h = 0; h < 4; h++)
        sinks[h] = (float)smla_rng_normal(rng);
    smla_problem finite = run_copy(&with_sinks, &out, &lse);
    const float *truth[2];
    check_against_oracle(&finite, fixture_truth(&f, truth), "finite sinks");
    free(out);
    free(lse);
    fixture_free(&f);
}

/* Active lengths: above the width counts as the width, negative as 0; 0 active entries
 * (and no extra set) gives out = 0 and lse = -inf. */
static void test_active_lengths(smla_rng *rng)
{
    enum { T = 7, W = 15 };
    fixture f;
    plain_fixture(&f, rng, T, W, 0);
    CHECK_STATUS(smla_ref_attention(g_ctx, &f.p), SMLA_OK);
    int32_t lens[T];
    smla_problem with_lens = f.p;
    with_lens.swa.lens = lens;
    with_lens.swa.lens_stride = 1;
    uint16_t *out;
    float *lse;

    for (int t = 0; t < T; t++)
        lens[t] = t % 2 ? W + 1 + t : INT32_MAX;
    smla_problem beyond = run_copy(&with_lens, &out, &lse);
    CHECK(same_outputs(&f.p, &beyond));
    free(out);
    free(lse);

    for (int t = 0; t < T; t++)
        lens[t] = t % 2 ? -t : INT32_MIN;
    smla_problem negative = run_copy(&with_lens, &out, &lse);
    for (int t = 0; t < T; t++)
        lens[t] = 0;
    uint16_t *out0;
    float *lse0;
    smla_problem zero = run_copy(&with_lens, &out0, &lse0);
    CHECK(same_outputs(&negative, &zero));
    int64_t nonzero = 0, finite_lse = 0;
    for (int64_t t = 0; t < T; t++) {
        for (int64_t i = 0; i < 4 * D; i++)
            nonzero += out0[t * f.p.out_token_stride + i] != 0;
        for (int h = 0; h < 4; h++)
            finite_lse += lse0[t * f.p.lse_token_stride + h] != -INFINITY;
    }
    CHECK(nonzero == 0);
    CHECK(finite_lse == 0);
    free(out);
    free(lse);
    free(out0);
    free(lse0);
    fixture_free(&f);
}

/* Positions only ever shorten the SWA row: min(pos + 1, window) columns. So a problem
 * with positions equals the same one without positions and with lens set to that count.
 * One part: a prefill sequence whose seq_len is shorter than its query length (its first
 * tokens see nothing), a decode token, and padding rows before and after. */
static void test_positions_window(smla_rng *rng)
{
    enum { T = 12, W = 140 };
    static const int32_t windows[] = {1, 128, 5};
    for (size_t k = 0; k < sizeof windows / sizeof windows[0]; k++) {
        fixture f;
        plain_fixture(&f, rng, T, W, 0);
        int32_t cu[] = {1, 8, 9};             /* rows 0, 9, 10, 11: padding */
        int32_t seq_lens[] = {4, 3000};       /* 7 queries, 4 KV: positions -3..3 */
        int32_t lens[T];
        f.p.num_parts = 1;
        f.p.parts[0] = (smla_positions){cu, seq_lens, 2, 0, T};
        f.p.window = windows[k];
        CHECK_STATUS(smla_ref_attention(g_ctx, &f.p), SMLA_OK);
        const float *truth[2];
        check_against_oracle(&f.p, fixture_truth(&f, truth), "positions");

        for (int t = 0; t < T; t++) {
            const int64_t pos = t < 8 ? t - 1 - 3 : 2999;
            const int64_t active = pos + 1 < windows[k] ? pos + 1 : windows[k];
            lens[t] = (int32_t)(active < 0 ? 0 : active);
        }
        smla_problem by_lens = f.p;
        by_lens.num_parts = 0;
        by_lens.swa.lens = lens;
        by_lens.swa.lens_stride = 1;
        uint16_t *out;
        float *lse;
        by_lens = run_copy(&by_lens, &out, &lse);
        for (int t = 1; t < 9; t++) /* the rows that positions compute */
            CHECK(memcmp(f.p.out + t * f.p.out_token_stride, out + t * f.p.out_token_stride,
                         sizeof(uint16_t) * 4 * D) == 0 &&
                  memcmp(f.p.lse + t * f.p.lse_token_stride, lse + t * f.p.lse_token_stride,
                         sizeof(float) * 4) == 0);
        free(out);
        free(lse);
        fixture_free(&f);
    }
}

/* One prefill sequence of Q tokens and KV length S, positioned (a) as one sequence,
 * (b) cut into segments [s, e) with seq_len S - Q + e, (c) as the planner does: a decode
 * part then the segments in a second part with starts rebased. Bit-identical. */
static void test_segmentation_invariance(smla_rng *rng)
{
    enum { DECODE = 3, Q = 37, T = DECODE + Q };
    const spec s = {T, 8, SMLA_DTYPE_FP8_E4M3, {SMLA_KV_FP8, SMLA_KV_FP8_DS_MLA}, {130, 20},
                    1, 0, SMLA_DEFAULT_WINDOW, 1};
    fixture f;
    fixture_make(&f, rng, &s);
    const int32_t S = (int32_t)smla_rng_range(rng, Q - 5, Q + 200);
    int32_t decode_lens[DECODE];
    for (int i = 0; i < DECODE; i++)
        decode_lens[i] = (int32_t)smla_rng_range(rng, 1, 300);
    /* (a) */
    int32_t cu_one[DECODE + 2], seq_one[DECODE + 1];
    for (int i = 0; i <= DECODE; i++)
        cu_one[i] = i;
    cu_one[DECODE + 1] = T;
    memcpy(seq_one, decode_lens, sizeof decode_lens);
    seq_one[DECODE] = S;
    smla_problem one = f.p;
    one.num_parts = 1;
    one.parts[0] = (smla_positions){cu_one, seq_one, DECODE + 1, 0, T};
    uint16_t *out_one;
    float *lse_one;
    one = run_copy(&one, &out_one, &lse_one);
    /* segment ends within the request, random cuts */
    int32_t ends[Q];
    int num_segments = 0;
    for (int e = 1; e <= Q; e++)
        if (e == Q || smla_rng_uniform(rng) < 0.2)
            ends[num_segments++] = e;
    /* (b) */
    int32_t cu_cut[DECODE + Q + 1], seq_cut[DECODE + Q];
    for (int i = 0; i <= DECODE; i++)
        cu_cut[i] = i;
    memcpy(seq_cut, decode_lens, sizeof decode_lens);
    for (int i = 0; i < num_segments; i++) {
        cu_cut[DECODE + i + 1] = DECODE + ends[i];
        seq_cut[DECODE + i] = S - Q + ends[i];
    }
    smla_problem cut = f.p;
    cut.num_parts = 1;
    cut.parts[0] = (smla_positions){cu_cut, seq_cut, DECODE + num_segments, 0, T};
    uint16_t *out_cut;
    float *lse_cut;
    cut = run_copy(&cut, &out_cut, &lse_cut);
    CHECK(same_outputs(&one, &cut));
    /* (c) */
    int32_t cu_prefill[Q + 1];
    cu_prefill[0] = 0;
    for (int i = 0; i < num_segments; i++)
        cu_prefill[i + 1] = ends[i];
    smla_problem planned = f.p;
    planned.num_parts = 2;
    planned.parts[0] = (smla_positions){cu_one, decode_lens, DECODE, 0, DECODE};
    planned.parts[1] = (smla_positions){cu_prefill, seq_cut + DECODE, num_segments, DECODE, Q};
    uint16_t *out_plan;
    float *lse_plan;
    planned = run_copy(&planned, &out_plan, &lse_plan);
    CHECK(same_outputs(&one, &planned));
    const float *truth[2];
    check_against_oracle(&one, fixture_truth(&f, truth), "segmentation");
    free(out_one);
    free(lse_one);
    free(out_cut);
    free(lse_cut);
    free(out_plan);
    free(lse_plan);
    fixture_free(&f);
}

/* Bit-identical for any thread count (contiguous chunks of different sizes). */
static void test_thread_invariance(smla_rng *rng)
{
    spec s = random_spec(rng);
    s.tokens = 33;
    fixture f;
    fixture_make(&f, rng, &s);
    uint16_t *out[3];
    float *lse[3];
    smla_problem runs[3];
    const int threads[3] = {1, 3, 7};
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(smla_context_set_num_threads(g_ctx, threads[i]), SMLA_OK);
        runs[i] = run_copy(&f.p, &out[i], &lse[i]);
    }
    CHECK(same_outputs(&runs[0], &runs[1]));
    CHECK(same_outputs(&runs[0], &runs[2]));
    CHECK_STATUS(smla_context_set_num_threads(g_ctx, 2), SMLA_OK);
    for (int i = 0; i < 3; i++) {
        free(out[i]);
        free(lse[i]);
    }
    fixture_free(&f);
}

/* bmm2_scale x2 doubles every output exactly; q x2 with bmm1_scale / 2 changes nothing;
 * FP8 queries equal the same values given as BF16 (every E4M3 value is a BF16 value). */
static void test_scales_and_fp8(smla_rng *rng)
{
    const spec s = {10, 8, SMLA_DTYPE_FP8_E4M3, {SMLA_KV_BF16, SMLA_KV_FP8}, {24, 24}, 1, 0,
                    SMLA_DEFAULT_WINDOW, 1};
    fixture f;
    fixture_make(&f, rng, &s);
    CHECK_STATUS(smla_ref_attention(g_ctx, &f.p), SMLA_OK);
    const int64_t n = f.p.num_tokens * f.p.q_token_stride;
    uint16_t *q_bf16 = smla_test_alloc(sizeof(uint16_t) * (size_t)n);
    uint16_t *q_double = smla_test_alloc(sizeof(uint16_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        const float x = smla_e4m3_to_float(((const uint8_t *)f.q)[i]);
        q_bf16[i] = smla_float_to_bf16(x);
        q_double[i] = smla_float_to_bf16(2 * x);
    }
    smla_problem as_bf16 = f.p;
    as_bf16.q = q_bf16;
    as_bf16.q_dtype = SMLA_DTYPE_BF16;
    uint16_t *out[3];
    float *lse[3];
    smla_problem bf16_run = run_copy(&as_bf16, &out[0], &lse[0]);
    CHECK(same_outputs(&f.p, &bf16_run));

    smla_problem doubled_q = as_bf16;
    doubled_q.q = q_double;
    doubled_q.bmm1_scale = as_bf16.bmm1_scale / 2;
    doubled_q = run_copy(&doubled_q, &out[1], &lse[1]);
    CHECK(same_outputs(&f.p, &doubled_q));

    smla_problem doubled_out = f.p;
    doubled_out.bmm2_scale = f.p.bmm2_scale * 2;
    doubled_out = run_copy(&doubled_out, &out[2], &lse[2]);
    int64_t wrong = 0;
    for (int64_t t = 0; t < f.p.num_tokens; t++)
        for (int64_t i = 0; i < 8 * D; i++) {
            const int64_t at = t * f.p.out_token_stride + i;
            wrong += out[2][at] != smla_float_to_bf16(2 * smla_bf16_to_float(f.p.out[at]));
        }
    CHECK(wrong == 0);
    CHECK(memcmp(lse[2], f.p.lse, sizeof(float) * (size_t)(f.p.num_tokens * f.p.lse_token_stride)) == 0);
    const float *truth[2];
    check_against_oracle(&f.p, fixture_truth(&f, truth), "fp8 queries");
    for (int i = 0; i < 3; i++) {
        free(out[i]);
        free(lse[i]);
    }
    free(q_bf16);
    free(q_double);
    fixture_free(&f);
}

/* A slot listed twice counts twice: same out as once, lse larger by log 2. */
static void test_duplicates(smla_rng *rng)
{
    fixture f;
    plain_fixture(&f, rng, 5, 2, 0);
    for (int64_t t = 0; t < 5; t++)
        f.indices[0][t * f.p.swa.row_stride + 1] = f.indices[0][t * f.p.swa.row_stride] =
            (int32_t)smla_rng_range(rng, 0, f.p.swa.pool_rows - 1);
    CHECK_STATUS(smla_ref_attention(g_ctx, &f.p), SMLA_OK);
    smla_problem once = f.p;
    once.swa.width = 1;
    uint16_t *out;
    float *lse;
    once = run_copy(&once, &out, &lse);
    for (int64_t t = 0; t < 5; t++)
        for (int h = 0; h < 4; h++) {
            CHECK(memcmp(out + t * once.out_token_stride + h * D,
                         f.p.out + t * once.out_token_stride + h * D, sizeof(uint16_t) * D) == 0);
            CHECK_NEAR(f.p.lse[t * once.lse_token_stride + h],
                       lse[t * once.lse_token_stride + h] + log(2.0), 1e-5);
        }
    free(out);
    free(lse);
    fixture_free(&f);
}

/* The engine layout: one [T][window + topk] buffer passed as swa_indices and, offset by
 * window columns, as extra_indices; pools in different formats. Same as two buffers. */
static void test_engine_layout(smla_rng *rng)
{
    enum { T = 9, WINDOW = 13, TOPK = 21 };
    const spec s = {T, 16, SMLA_DTYPE_BF16, {SMLA_KV_FP8_DS_MLA, SMLA_KV_BF16}, {WINDOW, TOPK},
                    1, 1, 8, 1};
    fixture f;
    fixture_make(&f, rng, &s);
    CHECK_STATUS(smla_ref_attention(g_ctx, &f.p), SMLA_OK);
    int32_t joint[T][WINDOW + TOPK];
    for (int t = 0; t < T; t++) {
        memcpy(joint[t], f.p.swa.indices + t * f.p.swa.row_stride, sizeof(int32_t) * WINDOW);
        memcpy(joint[t] + WINDOW, f.p.extra.indices + t * f.p.extra.row_stride,
               sizeof(int32_t) * TOPK);
    }
    smla_problem engine = f.p;
    engine.swa.indices = &joint[0][0];
    engine.swa.row_stride = WINDOW + TOPK;
    engine.extra.indices = &joint[0][0] + WINDOW;
    engine.extra.row_stride = WINDOW + TOPK;
    uint16_t *out;
    float *lse;
    engine = run_copy(&engine, &out, &lse);
    CHECK(same_outputs(&f.p, &engine));
    const float *truth[2];
    check_against_oracle(&f.p, fixture_truth(&f, truth), "engine layout");
    free(out);
    free(lse);
    fixture_free(&f);
}

/* The public arguments that describe f's problem (positions left out). */
static smla_attention_args fixture_args(const fixture *f)
{
    const smla_problem *p = &f->p;
    smla_attention_args a = smla_attention_args_default();
    a.q = smla_tensor_3d(f->q, p->q_dtype, p->num_tokens, p->num_heads, D, SMLA_MEMORY_HOST);
    a.q.stride[0] = p->q_token_stride;
    smla_kv_pool *pools[2] = {&a.swa, &a.extra};
    smla_tensor *indices[2] = {&a.swa_indices, &a.extra_indices};
    smla_tensor *lens[2] = {&a.swa_lens, &a.extra_lens};
    for (int i = 0; i < 2; i++) {
        const smla_index_set *set = i == 0 ? &p->swa : &p->extra;
        if (set->indices == NULL)
            continue;
        *pools[i] = set->pool;
        *indices[i] = smla_tensor_2d(f->indices[i], SMLA_DTYPE_I32, p->num_tokens, set->width,
                                     SMLA_MEMORY_HOST);
        indices[i]->stride[0] = set->row_stride;
        if (set->lens) {
            *lens[i] = smla_tensor_1d(f->lens[i], SMLA_DTYPE_I32, p->num_tokens,
                                      SMLA_MEMORY_HOST);
            lens[i]->stride[0] = set->lens_stride;
        }
    }
    if (p->sinks)
        a.sinks = smla_tensor_1d(f->sinks, SMLA_DTYPE_F32, p->num_heads, SMLA_MEMORY_HOST);
    a.bmm1_scale = p->bmm1_scale;
    a.bmm2_scale = p->bmm2_scale;
    a.window = p->window;
    a.out = smla_tensor_3d(p->out, SMLA_DTYPE_BF16, p->num_tokens, p->num_heads, D,
                           SMLA_MEMORY_HOST);
    a.out.stride[0] = p->out_token_stride;
    a.lse = smla_tensor_2d(p->lse, SMLA_DTYPE_F32, p->num_tokens, p->num_heads,
                           SMLA_MEMORY_HOST);
    a.lse.stride[0] = p->lse_token_stride;
    return a;
}

/* Through smla_attention: positions from a host plan (decodes, then prefills cut into
 * segments of at most 4 tokens) and from cu_seqlens_q / seq_lens of the same batch give
 * bit-identical outputs, right by the oracle, with the rows after the batch untouched. */
static void test_plan_positions(smla_rng *rng)
{
    enum { R = 6, DECODES = 2, T = 48 };
    int32_t qsl[R + 1] = {0}, seq_lens[R];
    for (int r = 0; r < R; r++) {
        /* The first prefill is longer than a segment (4 tokens), so that some prefill is
         * cut (all four at 3-4 tokens happened for ~0.7% of seeds). */
        const int64_t len = r < DECODES ? smla_rng_range(rng, 1, 2) : smla_rng_range(rng, r == DECODES ? 5 : 3, 9);
        qsl[r + 1] = qsl[r] + (int32_t)len;
        seq_lens[r] = (int32_t)(len + smla_rng_range(rng, 0, 150));
    }
    const spec s = {T, 8, SMLA_DTYPE_FP8_E4M3, {SMLA_KV_FP8, SMLA_KV_FP8_DS_MLA}, {20, 30},
                    1, 0, SMLA_DEFAULT_WINDOW, 1};
    fixture f;
    fixture_make(&f, rng, &s);
    const smla_plan_capacity capacity = {T, R, 0};
    smla_plan *plan = NULL;
    CHECK_STATUS(smla_plan_create(g_ctx, &capacity, SMLA_MEMORY_HOST, &plan), SMLA_OK);
    const smla_batch batch = {R, qsl, seq_lens, 2, SMLA_DTYPE_FP8_E4M3, 4};
    CHECK_STATUS(smla_plan_build(plan, &batch, NULL), SMLA_OK);
    smla_plan_view view;
    CHECK_STATUS(smla_plan_get_view(plan, &view), SMLA_OK);
    CHECK(view.num_decodes == DECODES && view.num_segments > R - DECODES);

    smla_attention_args by_plan = fixture_args(&f);
    by_plan.plan = plan;
    CHECK_STATUS(smla_attention(g_ctx, &by_plan), SMLA_OK);
    smla_problem by_cu = f.p;
    uint16_t *out;
    float *lse;
    outputs_make(&by_cu, &out, &lse);
    smla_attention_args cu_args = fixture_args(&f);
    cu_args.out.data = out;
    cu_args.lse.data = lse;
    cu_args.cu_seqlens_q = smla_tensor_1d(qsl, SMLA_DTYPE_I32, R + 1, SMLA_MEMORY_HOST);
    cu_args.seq_lens = smla_tensor_1d(seq_lens, SMLA_DTYPE_I32, R, SMLA_MEMORY_HOST);
    CHECK_STATUS(smla_attention(g_ctx, &cu_args), SMLA_OK);
    CHECK(same_outputs(&f.p, &by_cu));
    f.p.num_parts = 1;
    f.p.parts[0] = (smla_positions){qsl, seq_lens, R, 0, T};
    const float *truth[2];
    check_against_oracle(&f.p, fixture_truth(&f, truth), "plan positions");
    free(out);
    free(lse);
    smla_plan_destroy(plan);
    fixture_free(&f);
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_reference"));
    if (smla_context_create(&g_ctx) != SMLA_OK)
        return 1;
    CHECK_STATUS(smla_context_set_num_threads(g_ctx, 2), SMLA_OK);
    test_hand_case();
    test_random_against_oracle(&rng);
    test_invalid_indices(&rng);
    test_sinks(&rng);
    test_active_lengths(&rng);
    test_positions_window(&rng);
    test_segmentation_invariance(&rng);
    test_thread_invariance(&rng);
    test_scales_and_fp8(&rng);
    test_duplicates(&rng);
    test_engine_layout(&rng);
    test_plan_positions(&rng);
    smla_context_destroy(g_ctx);
    return smla_test_finish("test_reference");
}
