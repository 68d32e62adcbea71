/* Every error status of the planner: its code, a message naming the argument, a failed
 * build leaving the previous plan as it was, and a plan never built refused by
 * smla_attention. */
#include <string.h>

#include "testutil.h"

static smla_context *ctx;

/* The call returned status and the context's message contains word. */
#define CHECK_FAILS(expr, status, word)                                                 \
    do {                                                                                \
        CHECK_STATUS(expr, status);                                                     \
        if (!strstr(smla_context_last_error(ctx), word)) {                              \
            fprintf(stderr, "%s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__,     \
                    smla_context_last_error(ctx), word);                                \
            smla_test_failures++;                                                       \
        }                                                                               \
    } while (0)

static void test_create_errors(void)
{
    static int sentinel;
    smla_plan *plan = (smla_plan *)&sentinel; /* a failed create must reset it to NULL */
    smla_plan_capacity ok = {100, 10, 0};
    CHECK_STATUS(smla_plan_create(NULL, &ok, SMLA_MEMORY_HOST, &plan), SMLA_ERR_NULL_POINTER);
    CHECK_FAILS(smla_plan_create(ctx, &ok, SMLA_MEMORY_HOST, NULL), SMLA_ERR_NULL_POINTER,
                "plan");
    CHECK_FAILS(smla_plan_create(ctx, NULL, SMLA_MEMORY_HOST, &plan), SMLA_ERR_NULL_POINTER,
                "capacity");
    CHECK(plan == NULL);
    smla_plan_capacity bad = {0, 10, 0};
    CHECK_FAILS(smla_plan_create(ctx, &bad, SMLA_MEMORY_HOST, &plan), SMLA_ERR_VALUE,
                "max_tokens");
    bad = (smla_plan_capacity){100, 0, 0};
    CHECK_FAILS(smla_plan_create(ctx, &bad, SMLA_MEMORY_HOST, &plan), SMLA_ERR_VALUE,
                "max_requests");
    bad = (smla_plan_capacity){100, 10, -1};
    CHECK_FAILS(smla_plan_create(ctx, &bad, SMLA_MEMORY_HOST, &plan), SMLA_ERR_VALUE,
                "max_segments");
    CHECK_FAILS(smla_plan_create(ctx, &ok, (smla_memory)7, &plan), SMLA_ERR_VALUE, "memory");
    if (!smla_context_has_cuda(ctx))
        CHECK_FAILS(smla_plan_create(ctx, &ok, SMLA_MEMORY_DEVICE, &plan), SMLA_ERR_BACKEND,
                    "device plan");
    CHECK(plan == NULL);
    CHECK_STATUS(smla_plan_get_view(NULL, NULL), SMLA_ERR_NULL_POINTER);
    CHECK_STATUS(smla_plan_build(NULL, NULL, NULL), SMLA_ERR_NULL_POINTER);
    smla_plan_destroy(NULL);
}

static int same_view(const smla_plan_view *a, const smla_plan_view *b)
{
    return a->num_requests == b->num_requests && a->num_decodes == b->num_decodes &&
           a->num_segments == b->num_segments && a->max_segment_len == b->max_segment_len &&
           a->num_prefill_tokens == b->num_prefill_tokens &&
           a->num_decode_tokens == b->num_decode_tokens &&
           !memcmp(a->segment_seq_lens, b->segment_seq_lens,
                   (size_t)a->num_segments * sizeof(int32_t));
}

/* Builds a broken copy of good; expects status and word, and the plan unchanged. */
static void expect_build_failure(smla_plan *plan, const smla_batch *batch, smla_status status,
                                 const char *word, int line)
{
    smla_plan_view before, after;
    int32_t saved[8];
    CHECK_STATUS(smla_plan_get_view(plan, &before), SMLA_OK);
    CHECK(before.num_segments <= 8);
    memcpy(saved, before.segment_seq_lens, (size_t)before.num_segments * sizeof *saved);
    smla_status st = smla_plan_build(plan, batch, NULL);
    if (st != status || !strstr(smla_context_last_error(ctx), word)) {
        fprintf(stderr, "line %d: build returned %s '%s', expected %s with '%s'\n", line,
                smla_status_string(st), smla_context_last_error(ctx),
                smla_status_string(status), word);
        smla_test_failures++;
    }
    CHECK_STATUS(smla_plan_get_view(plan, &after), SMLA_OK);
    before.segment_seq_lens = saved;
    CHECK(same_view(&before, &after));
}

static void test_build_errors(void)
{
    smla_plan_capacity capacity = {3000, 4, 6};
    smla_plan *plan = NULL;
    CHECK_STATUS(smla_plan_create(ctx, &capacity, SMLA_MEMORY_HOST, &plan), SMLA_OK);
    smla_plan_view view;
    CHECK_FAILS(smla_plan_get_view(plan, NULL), SMLA_ERR_NULL_POINTER, "view");

    int32_t qsl[6] = {0, 1, 2051, 2070, 2070, 0};
    int32_t seq_lens[4] = {5000, 2054, 19, 40};
    const smla_batch good = {4, qsl, seq_lens, 0, SMLA_DTYPE_FP8_E4M3, -1};
    CHECK_STATUS(smla_plan_build(plan, &good, NULL), SMLA_OK);
    CHECK_STATUS(smla_plan_get_view(plan, &view), SMLA_OK);
    CHECK(view.num_segments == 4 && !strcmp(smla_context_last_error(ctx), ""));

    smla_batch b = good;
#define EXPECT(status, word) expect_build_failure(plan, &b, status, word, __LINE__)
    CHECK_FAILS(smla_plan_build(plan, NULL, NULL), SMLA_ERR_NULL_POINTER, "batch");
    b.query_start_loc = NULL;
    EXPECT(SMLA_ERR_NULL_POINTER, "query_start_loc");
    b = good;
    b.seq_lens = NULL;
    EXPECT(SMLA_ERR_NULL_POINTER, "seq_lens");
    b = good;
    b.num_requests = -1;
    EXPECT(SMLA_ERR_VALUE, "num_requests");
    b.num_requests = 5;
    EXPECT(SMLA_ERR_CAPACITY, "max_requests");
    b = good;
    b.query_dtype = SMLA_DTYPE_F32;
    EXPECT(SMLA_ERR_DTYPE, "query_dtype");
    b.query_dtype = SMLA_DTYPE_INVALID;
    EXPECT(SMLA_ERR_DTYPE, "query_dtype");
    b = good;
    b.segment_cap = -2;
    EXPECT(SMLA_ERR_VALUE, "segment_cap");
    b = good;
    b.decode_threshold = -1;
    EXPECT(SMLA_ERR_VALUE, "decode_threshold");
    b = good;
    b.segment_cap = 500; /* 5 + 1 segments fit max_segments = 6 */
    CHECK_STATUS(smla_plan_build(plan, &b, NULL), SMLA_OK);
    b.segment_cap = 400; /* 6 + 1 do not */
    EXPECT(SMLA_ERR_CAPACITY, "max_segments");
    b = good;

    int32_t bad_qsl[6];
    b.query_start_loc = bad_qsl;
    memcpy(bad_qsl, qsl, sizeof qsl);
    bad_qsl[0] = 1;
    EXPECT(SMLA_ERR_VALUE, "query_start_loc[0]");
    memcpy(bad_qsl, qsl, sizeof qsl);
    bad_qsl[2] = 0; /* decreasing: negative query length */
    EXPECT(SMLA_ERR_VALUE, "decreases");
    memcpy(bad_qsl, qsl, sizeof qsl);
    bad_qsl[3] = bad_qsl[4] = 3001;
    EXPECT(SMLA_ERR_CAPACITY, "max_tokens");
    memcpy(bad_qsl, qsl, sizeof qsl);
    bad_qsl[4] = 2071; /* a one-token decode after the prefills */
    EXPECT(SMLA_ERR_BATCH_ORDER, "decodes must come first");
    b.decode_threshold = 2000; /* now requests 0 and 2 are decodes around prefill 1 */
    EXPECT(SMLA_ERR_BATCH_ORDER, "after prefill request 1");

    b = good;
    int32_t bad_seq[4];
    memcpy(bad_seq, seq_lens, sizeof seq_lens);
    bad_seq[1] = 2049;
    b.seq_lens = bad_seq;
    EXPECT(SMLA_ERR_VALUE, "seq_lens[1]");
    memcpy(bad_seq, seq_lens, sizeof seq_lens);
    bad_seq[3] = -1; /* even a zero-length request needs a non-negative length */
    EXPECT(SMLA_ERR_VALUE, "seq_lens[3]");

    /* Empty batches: seq_lens may be NULL, and every entry of the view is zero. */
    b = good;
    b.num_requests = 0;
    b.seq_lens = NULL;
    CHECK_STATUS(smla_plan_build(plan, &b, NULL), SMLA_OK);
    CHECK_STATUS(smla_plan_get_view(plan, &view), SMLA_OK);
    CHECK(view.num_requests == 0 && view.num_decodes == 0 && view.num_segments == 0 &&
          view.max_segment_len == 0 && view.num_prefill_tokens == 0 &&
          view.segment_query_starts[0] == 0 && view.decode_query_starts[0] == 0);
#undef EXPECT
    smla_plan_destroy(plan);
}

/* A plan that was never built positions no token: smla_attention refuses it rather than
 * computing nothing (out left as it was, lse NaN); a refused build does not count. */
static void test_attention_unbuilt(void)
{
    enum { T = 3, H = 8, ROWS = 4 };
    static uint16_t q[T][H][SMLA_HEAD_DIM], out[T][H][SMLA_HEAD_DIM];
    static uint16_t cache[ROWS][SMLA_HEAD_DIM];
    int32_t indices[T][2] = {{0, 1}, {2, 3}, {1, 2}};
    smla_plan_capacity capacity = {T, 2, 0};
    smla_plan *plan = NULL;
    CHECK_STATUS(smla_plan_create(ctx, &capacity, SMLA_MEMORY_HOST, &plan), SMLA_OK);

    smla_attention_args a = smla_attention_args_default();
    a.q = smla_tensor_3d(q, SMLA_DTYPE_BF16, T, H, SMLA_HEAD_DIM, SMLA_MEMORY_HOST);
    a.swa = smla_kv_pool_make(cache, SMLA_KV_BF16, 1, ROWS, SMLA_MEMORY_HOST);
    a.swa_indices = smla_tensor_2d(indices, SMLA_DTYPE_I32, T, 2, SMLA_MEMORY_HOST);
    a.out = smla_tensor_3d(out, SMLA_DTYPE_BF16, T, H, SMLA_HEAD_DIM, SMLA_MEMORY_HOST);
    a.bmm1_scale = 0.04f;
    a.plan = plan;
    CHECK_FAILS(smla_attention(ctx, &a), SMLA_ERR_VALUE, "never been built");

    int32_t qsl[3] = {0, 1, 3}, seq_lens[2] = {5, 0}; /* seq_lens[1] < its 2 tokens */
    smla_batch batch = {2, qsl, seq_lens, 1, SMLA_DTYPE_BF16, SMLA_SEGMENT_CAP_DEFAULT};
    CHECK_STATUS(smla_plan_build(plan, &batch, NULL), SMLA_ERR_VALUE);
    CHECK_FAILS(smla_attention(ctx, &a), SMLA_ERR_VALUE, "never been built");
    seq_lens[1] = 2;
    CHECK_STATUS(smla_plan_build(plan, &batch, NULL), SMLA_OK);
    CHECK_STATUS(smla_attention(ctx, &a), SMLA_OK);
    smla_plan_destroy(plan);
}

int main(void)
{
    CHECK_STATUS(smla_context_create(&ctx), SMLA_OK);
    test_create_errors();
    test_build_errors();
    test_attention_unbuilt();
    smla_context_destroy(ctx);
    return smla_test_finish("test_plan_errors");
}
