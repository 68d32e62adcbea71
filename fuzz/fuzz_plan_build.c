/* Fuzzes the batch planner's API: smla_plan_create with any capacity and memory, then up
 * to three smla_plan_build calls on the plan with any batch (request counts, query starts,
 * seq_lens, decode threshold, query dtype, segment cap, NULL pointers), each checked
 * against the planner's model (plan_oracle.h). */
#include <stdlib.h>

#include "input.h"
#include "plan_oracle.h"

#define MAX_CAPACITY (1 << 16) /* larger capacities only cost memory */

static smla_context *ctx;

static int32_t capacity_value(fuzz_input *in, int32_t usual)
{
    const int32_t values[] = {usual, 1, 8, 300, 5000, 0, -1, INT32_MIN};
    const int32_t v = fuzz_i32_from(in, values, 8);
    return v > MAX_CAPACITY ? v % MAX_CAPACITY : v;
}

/* A request's query length: short ones first (decodes), then any. */
static int64_t query_length(fuzz_input *in, int *prefill_phase, int32_t threshold)
{
    if (!*prefill_phase && fuzz_choice(in, 3) == 2)
        *prefill_phase = 1;
    if (!*prefill_phase)
        return fuzz_choice(in, (threshold > 0 && threshold < 8 ? threshold : 1) + 1);
    const int32_t lengths[] = {0, 1, 2, 3, 5, 255, 256, 257, 1023, 1024, 1025, 2051, 4096};
    const int k = fuzz_choice(in, 15);
    return k < 13 ? lengths[k] : k == 13 ? fuzz_u8(in) : (int32_t)fuzz_u32(in);
}

/* seq_lens[r] for a query of q tokens: q plus a prefix, sometimes invalid. */
static int32_t seq_len(fuzz_input *in, int64_t q)
{
    const int64_t prefixes[] = {0, 1, 127, 128, 100000, -1, -q, INT32_MAX - q};
    return (int32_t)fuzz_add(q, fuzz_i64_from(in, prefixes, 8)); /* wraps like a caller's bug */
}

/* A batch of up to MAX_CAPACITY requests; arrays owned by the caller (free qsl, seq). */
static smla_batch make_batch(fuzz_input *in, int32_t **qsl_out, int32_t **seq_out)
{
    const int32_t counts[] = {0, 1, 2, 3, 5, 16, 64, -1, INT32_MIN, INT32_MAX};
    const int32_t thresholds[] = {1, 0, 2, 4, -1, INT32_MAX};
    const int32_t dtypes[] = {SMLA_DTYPE_FP8_E4M3, SMLA_DTYPE_BF16, SMLA_DTYPE_INVALID,
                              SMLA_DTYPE_F32, SMLA_DTYPE_U8};
    const int32_t caps[] = {SMLA_SEGMENT_CAP_DEFAULT, 0, 1, 7, 256, 512, 1024, 2048, -2,
                            INT32_MAX};
    smla_batch b;
    b.num_requests = fuzz_i32_from(in, counts, 10);
    b.decode_threshold = fuzz_i32_from(in, thresholds, 6);
    b.query_dtype = (smla_dtype)fuzz_i32_from(in, dtypes, 5);
    b.segment_cap = fuzz_i32_from(in, caps, 10);
    /* Room for the R + 1 starts the planner may read, and graph padding after them. */
    const int64_t r = b.num_requests >= 0 && b.num_requests <= MAX_CAPACITY ? b.num_requests : 0;
    int32_t *qsl = malloc((size_t)(r + 4) * sizeof *qsl);
    int32_t *seq = malloc((size_t)(r + 1) * sizeof *seq);
    if (!qsl || !seq)
        abort();
    const int raw = fuzz_choice(in, 8) == 7;
    int prefill_phase = 0;
    int64_t total = 0;
    qsl[0] = raw ? (int32_t)fuzz_u32(in) : 0;
    for (int64_t i = 0; i < r; i++) {
        const int64_t q = raw ? (int32_t)fuzz_u32(in) : query_length(in, &prefill_phase,
                                                                    b.decode_threshold);
        total += q;
        qsl[i + 1] = raw ? (int32_t)q : (int32_t)total;
        seq[i] = seq_len(in, q);
    }
    for (int i = 1; i < 4; i++)
        qsl[r + i] = -999;
    const int nulls = fuzz_choice(in, 16);
    b.query_start_loc = nulls == 1 ? NULL : qsl;
    b.seq_lens = nulls == 2 ? NULL : seq;
    *qsl_out = qsl;
    *seq_out = seq;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size, 0};
    if (!ctx && smla_context_create(&ctx) != SMLA_OK)
        abort();
    smla_plan_capacity capacity = {capacity_value(&in, 4096), capacity_value(&in, 64),
                                   capacity_value(&in, 0)};
    const int32_t memories[] = {SMLA_MEMORY_HOST, SMLA_MEMORY_DEVICE};
    const smla_memory memory = (smla_memory)fuzz_i32_from(&in, memories, 2);
    smla_plan *plan = NULL;
    const smla_status st = smla_plan_create(ctx, &capacity, memory, &plan);
    const int valid = capacity.max_tokens >= 1 && capacity.max_requests >= 1 &&
                      capacity.max_segments >= 0 && memory == SMLA_MEMORY_HOST;
    if ((st == SMLA_OK) != valid || (st == SMLA_OK) != (plan != NULL))
        fuzz_fail("smla_plan_create: status %d for capacity (%d, %d, %d) memory %d", (int)st,
                  capacity.max_tokens, capacity.max_requests, capacity.max_segments,
                  (int)memory);
    if (st != SMLA_OK)
        return 0;
    if (capacity.max_segments == 0)
        capacity.max_segments = capacity.max_tokens;
    const int builds = 1 + fuzz_choice(&in, 3);
    for (int i = 0; i < builds; i++) {
        int32_t *qsl, *seq;
        smla_batch batch = make_batch(&in, &qsl, &seq);
        const int no_batch = fuzz_choice(&in, 32) == 31;
        plan_snapshot before;
        plan_snapshot_take(plan, &before);
        const smla_status built = smla_plan_build(plan, no_batch ? NULL : &batch, NULL);
        plan_oracle_check(ctx, &capacity, no_batch ? NULL : &batch, built, plan, &before);
        plan_snapshot_free(&before);
        free(qsl);
        free(seq);
    }
    smla_plan_destroy(plan);
    return 0;
}
