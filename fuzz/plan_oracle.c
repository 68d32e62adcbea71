/* The planner's model (plan_oracle.h). */
#include "plan_oracle.h"

#include <stdlib.h>
#include <string.h>

#include "input.h"

/* The arrays of a view in one list, with their lengths from its counts. */
static size_t view_arrays(const smla_plan_view *v, const int32_t *arrays[5], size_t counts[5])
{
    arrays[0] = v->decode_query_starts;
    counts[0] = (size_t)v->num_decodes + 1;
    arrays[1] = v->decode_seq_lens;
    counts[1] = (size_t)v->num_decodes;
    arrays[2] = v->segment_query_starts;
    counts[2] = (size_t)v->num_segments + 1;
    arrays[3] = v->segment_seq_lens;
    counts[3] = (size_t)v->num_segments;
    arrays[4] = v->segment_requests;
    counts[4] = (size_t)v->num_segments;
    return counts[0] + counts[1] + counts[2] + counts[3] + counts[4];
}

void plan_snapshot_take(const smla_plan *plan, plan_snapshot *s)
{
    memset(s, 0, sizeof *s);
    if (smla_plan_get_view(plan, &s->view) != SMLA_OK)
        fuzz_fail("smla_plan_get_view failed on a live plan");
    const int32_t *arrays[5];
    size_t counts[5];
    s->count = view_arrays(&s->view, arrays, counts);
    s->arrays = malloc(s->count * sizeof *s->arrays);
    if (!s->arrays)
        abort();
    size_t k = 0;
    for (int i = 0; i < 5; i++)
        for (size_t j = 0; j < counts[i]; j++)
            s->arrays[k++] = arrays[i][j];
}

void plan_snapshot_free(plan_snapshot *s)
{
    free(s->arrays);
    memset(s, 0, sizeof *s);
}

/* What a valid batch plans to; valid = 0 when the planner must refuse it. */
typedef struct expected_plan {
    int valid;
    int32_t num_decodes, num_segments, max_segment_len, cap;
} expected_plan;

static int32_t effective_cap(const smla_batch *b)
{
    if (b->segment_cap != SMLA_SEGMENT_CAP_DEFAULT)
        return b->segment_cap;
    return b->query_dtype == SMLA_DTYPE_FP8_E4M3 ? SMLA_DEFAULT_FP8_SEGMENT_CAP : 0;
}

static int64_t segments_of(int64_t q, int32_t cap)
{
    return q == 0 ? 0 : cap > 0 ? (q + cap - 1) / cap : 1;
}

static expected_plan expect(const smla_plan_capacity *capacity, const smla_batch *b)
{
    expected_plan e = {0, 0, 0, 0, 0};
    if (!b || b->num_requests < 0 || b->num_requests > capacity->max_requests ||
        !b->query_start_loc || (!b->seq_lens && b->num_requests > 0) ||
        (b->query_dtype != SMLA_DTYPE_FP8_E4M3 && b->query_dtype != SMLA_DTYPE_BF16) ||
        b->segment_cap < SMLA_SEGMENT_CAP_DEFAULT || b->decode_threshold < 0 ||
        b->query_start_loc[0] != 0)
        return e;
    const int32_t *qsl = b->query_start_loc;
    const int64_t threshold = b->decode_threshold ? b->decode_threshold : 1;
    e.cap = effective_cap(b);
    int seen_prefill = 0;
    int64_t segments = 0;
    for (int32_t r = 0; r < b->num_requests; r++) {
        const int64_t q = (int64_t)qsl[r + 1] - qsl[r];
        if (q < 0 || qsl[r + 1] > capacity->max_tokens || b->seq_lens[r] < q)
            return e;
        if (q > threshold) {
            seen_prefill = 1;
            segments += segments_of(q, e.cap);
            const int64_t n = segments_of(q, e.cap), longest = (q + n - 1) / n;
            if (longest > e.max_segment_len)
                e.max_segment_len = (int32_t)longest;
        } else if (!seen_prefill) {
            e.num_decodes = r + 1;
        } else if (q > 0) {
            return e; /* a decode after a prefill */
        }
    }
    if (segments > capacity->max_segments)
        return e;
    e.num_segments = (int32_t)segments;
    e.valid = 1;
    return e;
}

static void check_same(const plan_snapshot *before, const smla_plan *plan)
{
    plan_snapshot now;
    plan_snapshot_take(plan, &now);
    if (memcmp(&now.view, &before->view, sizeof now.view) || now.count != before->count ||
        memcmp(now.arrays, before->arrays, now.count * sizeof *now.arrays))
        fuzz_fail("a refused build changed the plan");
    plan_snapshot_free(&now);
}

static void check_segments(const smla_batch *b, const smla_plan_view *v, const expected_plan *e)
{
    const int32_t *qsl = b->query_start_loc;
    const int32_t base = qsl[e->num_decodes];
    int32_t seg = 0;
    if (v->segment_query_starts[0] != 0)
        fuzz_fail("segment_query_starts[0] = %d", v->segment_query_starts[0]);
    for (int32_t r = e->num_decodes; r < b->num_requests; r++) {
        const int32_t q = qsl[r + 1] - qsl[r];
        const int32_t n = (int32_t)segments_of(q, e->cap);
        int32_t end = 0;
        for (int32_t k = 0; k < n; k++, seg++) {
            const int32_t len = q / n + (k < q % n); /* as equal as possible, longer first */
            end += len;
            if (v->segment_requests[seg] != r ||
                v->segment_query_starts[seg + 1] != qsl[r] - base + end ||
                v->segment_seq_lens[seg] != b->seq_lens[r] - q + end)
                fuzz_fail("segment %d (request %d, part %d of %d): request %d, end %d, seq "
                          "len %d; expected %d, %d, %d",
                          seg, r, k, n, v->segment_requests[seg],
                          v->segment_query_starts[seg + 1], v->segment_seq_lens[seg], r,
                          qsl[r] - base + end, b->seq_lens[r] - q + end);
        }
    }
}

static void check_built(const smla_batch *b, const smla_plan *plan, const expected_plan *e)
{
    smla_plan_view v;
    if (smla_plan_get_view(plan, &v) != SMLA_OK)
        fuzz_fail("no view after a build");
    const int32_t *qsl = b->query_start_loc;
    const int32_t nd = e->num_decodes;
    if (v.num_requests != b->num_requests || v.num_decodes != nd ||
        v.num_decode_tokens != qsl[nd] ||
        v.num_prefill_tokens != qsl[b->num_requests] - qsl[nd] ||
        v.num_segments != e->num_segments || v.max_segment_len != e->max_segment_len ||
        v.segment_cap != e->cap || v.memory != SMLA_MEMORY_HOST || v.counts[0] != nd ||
        v.counts[1] != e->num_segments)
        fuzz_fail("view counts: decodes %d/%d, segments %d/%d, max len %d/%d, cap %d/%d",
                  v.num_decodes, nd, v.num_segments, e->num_segments, v.max_segment_len,
                  e->max_segment_len, v.segment_cap, e->cap);
    for (int32_t r = 0; r <= nd; r++)
        if (v.decode_query_starts[r] != qsl[r] || (r < nd && v.decode_seq_lens[r] != b->seq_lens[r]))
            fuzz_fail("decode %d: start %d, seq len %d", r, v.decode_query_starts[r],
                      r < nd ? v.decode_seq_lens[r] : 0);
    if (v.decode_token_positions != NULL)
        fuzz_fail("a host plan has decode_token_positions (device plans only)");
    if (v.host_decode_query_starts != v.decode_query_starts ||
        v.host_segment_query_starts != v.segment_query_starts ||
        v.host_segment_requests != v.segment_requests)
        fuzz_fail("a host plan's host_* arrays are not its arrays");
    check_segments(b, &v, e);
}

void plan_oracle_check(const smla_context *ctx, const smla_plan_capacity *capacity,
                       const smla_batch *batch, smla_status status, const smla_plan *plan,
                       const plan_snapshot *before)
{
    const expected_plan e = expect(capacity, batch);
    if (status == SMLA_OK && !e.valid)
        fuzz_fail("smla_plan_build accepted an invalid batch");
    if (status != SMLA_OK && e.valid)
        fuzz_fail("smla_plan_build refused a valid batch: %s: %s", smla_status_string(status),
                  smla_context_last_error(ctx));
    if (status != SMLA_OK) {
        if (status >= SMLA_STATUS_COUNT || !smla_context_last_error(ctx)[0])
            fuzz_fail("refused with status %d and message '%s'", (int)status,
                      smla_context_last_error(ctx));
        check_same(before, plan);
        return;
    }
    check_built(batch, plan, &e);
}
