/* The batch planner on host plans: the seed's cases, padded query_start_loc, the
 * zero-length rule, plan reuse, and property checks over thousands of random batches.
 * Every plan is checked against the batch by check_plan(), which derives what the plan
 * must be from the batch alone: decodes, token counts, segments covering every prefill
 * token once in order within its own request, segment counts and lengths from the cap,
 * and every token's absolute position. */
#include <string.h>

#include "testutil.h"

typedef struct test_batch {
    int32_t num_requests;
    int32_t *query_start_loc; /* num_requests + 1 (+ padding) */
    int32_t *seq_lens;
    int32_t threshold;        /* as given: 0 means 1 */
    smla_dtype dtype;
    int32_t cap;              /* as given: -1 default */
} test_batch;

static smla_batch as_batch(const test_batch *b)
{
    smla_batch batch = {.num_requests = b->num_requests,
                        .query_start_loc = b->query_start_loc,
                        .seq_lens = b->seq_lens,
                        .decode_threshold = b->threshold,
                        .query_dtype = b->dtype,
                        .segment_cap = b->cap};
    return batch;
}

static int32_t expected_cap(const test_batch *b)
{
    if (b->cap >= 0)
        return b->cap;
    return b->dtype == SMLA_DTYPE_FP8_E4M3 ? 1024 : 0;
}

static int32_t query_len(const test_batch *b, int32_t r)
{
    return b->query_start_loc[r + 1] - b->query_start_loc[r];
}

/* Absolute position of query row k of request r (the unsegmented truth). */
static int32_t true_position(const test_batch *b, int32_t r, int32_t k)
{
    return b->seq_lens[r] - query_len(b, r) + (k - b->query_start_loc[r]);
}

static int check_decodes(const test_batch *b, const smla_plan_view *v)
{
    int failures = smla_test_failures;
    int32_t threshold = b->threshold ? b->threshold : 1;
    int32_t d = 0;
    while (d < b->num_requests && query_len(b, d) <= threshold)
        d++;
    CHECK(v->num_decodes == d);
    if (v->num_decodes != d)
        return 0;
    CHECK(v->num_decode_tokens == b->query_start_loc[d]);
    for (int32_t r = 0; r <= d; r++)
        CHECK(v->decode_query_starts[r] == b->query_start_loc[r]);
    for (int32_t r = 0; r < d; r++) {
        CHECK(v->decode_seq_lens[r] == b->seq_lens[r]);
        for (int32_t k = v->decode_query_starts[r]; k < v->decode_query_starts[r + 1]; k++)
            CHECK(v->decode_seq_lens[r] - query_len(b, r) +
                  (k - v->decode_query_starts[r]) == true_position(b, r, k));
    }
    return failures == smla_test_failures;
}

/* Segments of request r: count, lengths (as equal as possible, longer first, <= cap). */
static void check_request_segments(const test_batch *b, const smla_plan_view *v, int32_t r,
                                   int32_t first, int32_t count)
{
    int32_t q = query_len(b, r), cap = expected_cap(b);
    int32_t want = q == 0 ? 0 : cap > 0 ? (q + cap - 1) / cap : 1;
    CHECK(count == want);
    for (int32_t i = first; i < first + count; i++) {
        int32_t len = v->segment_query_starts[i + 1] - v->segment_query_starts[i];
        int32_t first_len = v->segment_query_starts[first + 1] - v->segment_query_starts[first];
        CHECK(len == first_len || len == first_len - 1);
        if (i > first)
            CHECK(len <= v->segment_query_starts[i] - v->segment_query_starts[i - 1]);
        if (cap > 0)
            CHECK(len <= cap);
    }
}

static void check_segments(const test_batch *b, const smla_plan_view *v)
{
    const int32_t *qsl = b->query_start_loc;
    int32_t d = v->num_decodes, n = v->num_segments, base = qsl[d];
    CHECK(v->num_prefill_tokens == qsl[b->num_requests] - base);
    CHECK(v->segment_cap == expected_cap(b));
    CHECK(v->segment_query_starts[0] == 0);
    CHECK(v->segment_query_starts[n] == v->num_prefill_tokens);
    int32_t max_len = 0, seg = 0;
    for (int32_t r = d; r < b->num_requests; r++) {
        int32_t first = seg;
        while (seg < n && v->segment_requests[seg] == r) {
            int32_t start = v->segment_query_starts[seg], end = v->segment_query_starts[seg + 1];
            int32_t len = end - start;
            CHECK(len > 0);
            CHECK(base + start >= qsl[r] && base + end <= qsl[r + 1]);
            if (len > max_len)
                max_len = len;
            for (int32_t t = start; t < end && len > 0; t++)
                CHECK(v->segment_seq_lens[seg] - len + (t - start) ==
                      true_position(b, r, base + t));
            seg++;
        }
        check_request_segments(b, v, r, first, seg - first);
    }
    CHECK(seg == n); /* no segment names a request outside [d, R) or out of order */
    CHECK(v->max_segment_len == max_len);
    CHECK(v->host_segment_query_starts == v->segment_query_starts);
    CHECK(v->host_segment_requests == v->segment_requests);
    CHECK(v->host_decode_query_starts == v->decode_query_starts);
}

/* Builds b on plan and checks the view; returns the view. */
static smla_plan_view build_and_check(smla_plan *plan, const test_batch *b)
{
    smla_batch batch = as_batch(b);
    smla_plan_view v;
    memset(&v, 0, sizeof v);
    CHECK_STATUS(smla_plan_build(plan, &batch, NULL), SMLA_OK);
    CHECK_STATUS(smla_plan_get_view(plan, &v), SMLA_OK);
    CHECK(v.memory == SMLA_MEMORY_HOST);
    CHECK(v.decode_token_positions == NULL); /* device plans only */
    CHECK(v.num_requests == b->num_requests);
    if (check_decodes(b, &v))
        check_segments(b, &v);
    return v;
}

static smla_plan *make_plan(smla_context *ctx, int32_t max_tokens, int32_t max_requests)
{
    smla_plan_capacity capacity = {max_tokens, max_requests, 0};
    smla_plan *plan = NULL;
    CHECK_STATUS(smla_plan_create(ctx, &capacity, SMLA_MEMORY_HOST, &plan), SMLA_OK);
    return plan;
}

/* Fills qsl / seq_lens from query lengths and prefixes, padding qsl with poison. */
static test_batch batch_of(int32_t r, const int32_t *queries, const int32_t *prefixes,
                           int32_t *qsl, int32_t padding, int32_t *seq_lens)
{
    static const int32_t poison[] = {-1, INT32_MIN, INT32_MAX, 7, -123456};
    qsl[0] = 0;
    for (int32_t i = 0; i < r; i++) {
        qsl[i + 1] = qsl[i] + queries[i];
        seq_lens[i] = prefixes[i] + queries[i];
    }
    for (int32_t i = 0; i < padding; i++)
        qsl[r + 1 + i] = poison[i % 5];
    test_batch b = {r, qsl, seq_lens, 0, SMLA_DTYPE_FP8_E4M3, SMLA_SEGMENT_CAP_DEFAULT};
    return b;
}

static void test_seed_cases(smla_context *ctx)
{
    smla_plan *plan = make_plan(ctx, 1 << 16, 16);
    int32_t qsl[16], seq_lens[8];

    /* Decode-only: no segments. */
    test_batch b = batch_of(2, (const int32_t[]){1, 1}, (const int32_t[]){100000, 8000}, qsl,
                            0, seq_lens);
    smla_plan_view v = build_and_check(plan, &b);
    CHECK(v.num_decodes == 2 && v.num_decode_tokens == 2 && v.num_segments == 0);
    CHECK(v.max_segment_len == 0 && v.num_prefill_tokens == 0);

    /* One fresh 8192-token prefill: 8 x 1024 in FP8, 1 x 8192 in BF16. */
    b = batch_of(1, (const int32_t[]){8192}, (const int32_t[]){0}, qsl, 0, seq_lens);
    v = build_and_check(plan, &b);
    CHECK(v.num_segments == 8 && v.max_segment_len == 1024);
    for (int32_t i = 0; i < v.num_segments; i++)
        CHECK(v.segment_seq_lens[i] == 1024 * (i + 1));
    b.dtype = SMLA_DTYPE_BF16;
    v = build_and_check(plan, &b);
    CHECK(v.num_segments == 1 && v.max_segment_len == 8192 && v.segment_seq_lens[0] == 8192);

    /* Mixed, with CUDA-graph padding after the R+1 entries. */
    b = batch_of(5, (const int32_t[]){1, 1, 2051, 19, 1024},
                 (const int32_t[]){5000, 9000, 3, 0, 99000}, qsl, 10, seq_lens);
    v = build_and_check(plan, &b);
    CHECK(v.num_decodes == 2 && v.num_decode_tokens == 2 && v.num_prefill_tokens == 3094);
    static const int32_t fp8_starts[] = {0, 684, 1368, 2051, 2070, 3094};
    static const int32_t fp8_seq[] = {687, 1371, 2054, 19, 100024};
    static const int32_t fp8_req[] = {2, 2, 2, 3, 4};
    CHECK(v.num_segments == 5 && v.max_segment_len == 1024);
    for (int32_t i = 0; i < 5 && v.num_segments == 5; i++) {
        CHECK(v.segment_query_starts[i] == fp8_starts[i]);
        CHECK(v.segment_seq_lens[i] == fp8_seq[i]);
        CHECK(v.segment_requests[i] == fp8_req[i]);
    }
    b.dtype = SMLA_DTYPE_BF16;
    v = build_and_check(plan, &b);
    CHECK(v.num_segments == 3 && v.max_segment_len == 2051);
    b.cap = 1000; /* explicitly asked for: BF16 is segmented too */
    v = build_and_check(plan, &b);
    CHECK(v.num_segments == 3 + 1 + 2 && v.max_segment_len == 684);
    b.dtype = SMLA_DTYPE_FP8_E4M3;
    b.cap = 0; /* off */
    v = build_and_check(plan, &b);
    CHECK(v.num_segments == 3 && v.segment_cap == 0);
    smla_plan_destroy(plan);
}

/* Zero-length requests: decodes before the first prefill, segment-less prefills after;
 * the speculative threshold moves the split. */
static void test_zero_length_and_threshold(smla_context *ctx)
{
    smla_plan *plan = make_plan(ctx, 1 << 12, 16);
    int32_t qsl[16], seq_lens[16];
    test_batch b = batch_of(7, (const int32_t[]){0, 1, 0, 5, 0, 3, 0},
                            (const int32_t[]){10, 20, 0, 30, 40, 50, 60}, qsl, 0, seq_lens);
    smla_plan_view v = build_and_check(plan, &b);
    CHECK(v.num_decodes == 3 && v.num_decode_tokens == 1 && v.num_segments == 2);

    b = batch_of(5, (const int32_t[]){2, 3, 1, 4, 6}, (const int32_t[]){9, 9, 9, 9, 9}, qsl, 0,
                 seq_lens);
    b.threshold = 3; /* 1 + 2 speculative tokens */
    v = build_and_check(plan, &b);
    CHECK(v.num_decodes == 3 && v.num_decode_tokens == 6 && v.num_segments == 2);
    b.threshold = 0; /* means 1: request 0 (2 tokens) is already a prefill... */
    smla_batch batch = as_batch(&b);
    CHECK_STATUS(smla_plan_build(plan, &batch, NULL), SMLA_ERR_BATCH_ORDER); /* ...then 1 */
    smla_plan_destroy(plan);
}

/* A cap of 1 reaches the derived segment capacity (one segment per token) exactly. */
static void test_derived_segment_capacity(smla_context *ctx)
{
    smla_plan *plan = make_plan(ctx, 10, 3);
    int32_t qsl[4], seq_lens[3];
    test_batch b = batch_of(3, (const int32_t[]){1, 4, 5}, (const int32_t[]){0, 6, 1}, qsl, 0,
                            seq_lens);
    b.cap = 1;
    smla_plan_view v = build_and_check(plan, &b);
    CHECK(v.num_segments == 9 && v.max_segment_len == 1);
    b = batch_of(1, (const int32_t[]){10}, (const int32_t[]){3}, qsl, 0, seq_lens);
    b.cap = 1;
    v = build_and_check(plan, &b);
    CHECK(v.num_segments == 10);
    smla_plan_destroy(plan);
}

static int32_t random_query_len(smla_rng *rng, int32_t lo)
{
    double u = smla_rng_uniform(rng);
    int32_t hi = u < 0.6 ? 64 : u < 0.9 ? 3000 : 20000;
    return (int32_t)smla_rng_range(rng, lo, lo > hi ? lo : hi);
}

static int32_t random_cap(smla_rng *rng)
{
    static const int32_t caps[] = {-1, -1, -1, 0, 1, 2, 3, 7, 1024, 4096};
    int32_t c = caps[smla_rng_range(rng, 0, 9)];
    return c == 7 ? (int32_t)smla_rng_range(rng, 1, 5000) : c;
}

/* Random batches (decodes, zero-length requests, prefills, padding) on one reused plan;
 * qsl is allocated with exactly R+1 entries so a sanitizer build catches any over-read. */
static void test_random_batches(smla_context *ctx, uint64_t seed)
{
    enum { MAX_REQUESTS = 300, MAX_TOKENS = 1 << 21, BATCHES = 4000 };
    smla_rng rng;
    smla_rng_seed(&rng, seed);
    smla_plan *plan = make_plan(ctx, MAX_TOKENS, MAX_REQUESTS);
    smla_plan_view first;
    CHECK_STATUS(smla_plan_get_view(plan, &first), SMLA_OK);
    int32_t *queries = smla_test_alloc(MAX_REQUESTS * sizeof *queries);
    int32_t *prefixes = smla_test_alloc(MAX_REQUESTS * sizeof *prefixes);
    int32_t *seq_lens = smla_test_alloc(MAX_REQUESTS * sizeof *seq_lens);
    for (int iter = 0; iter < BATCHES && !smla_test_failures; iter++) {
        int32_t r = (int32_t)smla_rng_range(&rng, 0, smla_rng_uniform(&rng) < 0.5 ? 8 : MAX_REQUESTS);
        int32_t threshold = (int32_t)smla_rng_range(&rng, 0, 4);
        int32_t t = threshold ? threshold : 1;
        int32_t decodes = (int32_t)smla_rng_range(&rng, 0, r);
        for (int32_t i = 0; i < r; i++) {
            int zero = smla_rng_uniform(&rng) < 0.05;
            queries[i] = zero ? 0 : i < decodes ? (int32_t)smla_rng_range(&rng, 1, t)
                                                : random_query_len(&rng, t + 1);
            prefixes[i] = (int32_t)smla_rng_range(&rng, 0, smla_rng_uniform(&rng) < 0.3 ? 0 : 200000);
        }
        int32_t *qsl = smla_test_alloc(((size_t)r + 1) * sizeof *qsl);
        test_batch b = batch_of(r, queries, prefixes, qsl, 0, seq_lens);
        b.threshold = threshold;
        b.dtype = smla_rng_uniform(&rng) < 0.5 ? SMLA_DTYPE_BF16 : SMLA_DTYPE_FP8_E4M3;
        b.cap = random_cap(&rng);
        smla_plan_view v = build_and_check(plan, &b);
        CHECK(v.decode_query_starts == first.decode_query_starts &&
              v.segment_seq_lens == first.segment_seq_lens &&
              v.segment_query_starts == first.segment_query_starts);
        if (smla_test_failures)
            fprintf(stderr, "failed on random batch %d: R=%d threshold=%d dtype=%d cap=%d\n",
                    iter, r, threshold, (int)b.dtype, b.cap);
        free(qsl);
    }
    free(queries);
    free(prefixes);
    free(seq_lens);
    smla_plan_destroy(plan);
}

int main(void)
{
    uint64_t seed = smla_test_seed("test_plan");
    smla_context *ctx = NULL;
    CHECK_STATUS(smla_context_create(&ctx), SMLA_OK);
    test_seed_cases(ctx);
    test_zero_length_and_threshold(ctx);
    test_derived_segment_capacity(ctx);
    test_random_batches(ctx, seed);
    smla_context_destroy(ctx);
    return smla_test_finish("test_plan");
}
