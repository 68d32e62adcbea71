/* smla_plan_build: validate the batch, split it into decodes and prefill segments on the
 * host, then refresh the sequence lengths (host) or stage them for the device.
 *
 * Classification: a request whose query length is <= the decode threshold is a decode.
 * A zero-length request never breaks the decodes-first order: it is a decode (with no
 * tokens) while no prefill has been seen, and a prefill with no segments after one. So
 * num_decodes is the index of the first request longer than the threshold.
 *
 * Two passes over the R+1 query starts: the first validates and counts, the second
 * writes, so a failed build leaves the previous plan untouched. No allocation. */
#include "cuda/plan/plan_device.h"
#include "plan.h"

typedef struct batch_shape {
    int32_t num_decodes;
    int32_t segment_cap;   /* effective: 0 = off */
    int64_t num_segments;
} batch_shape;

static int32_t effective_cap(const smla_batch *batch)
{
    if (batch->segment_cap != SMLA_SEGMENT_CAP_DEFAULT)
        return batch->segment_cap;
    return batch->query_dtype == SMLA_DTYPE_FP8_E4M3 ? SMLA_DEFAULT_FP8_SEGMENT_CAP : 0;
}

static int64_t segments_of(int64_t query_len, int32_t cap)
{
    if (query_len == 0)
        return 0;
    return cap > 0 ? (query_len + cap - 1) / cap : 1;
}

static smla_status check_scalars(smla_context *ctx, const smla_plan *plan,
                                 const smla_batch *batch)
{
    int32_t r = batch->num_requests;
    if (r < 0)
        return smla_fail(ctx, SMLA_ERR_VALUE, "batch num_requests must be >= 0, got %d", r);
    if (r > plan->capacity.max_requests)
        return smla_fail(ctx, SMLA_ERR_CAPACITY,
                         "batch has %d requests, the plan's capacity is max_requests = %d", r,
                         plan->capacity.max_requests);
    if (!batch->query_start_loc)
        return smla_fail(ctx, SMLA_ERR_NULL_POINTER, "batch query_start_loc is NULL");
    if (!batch->seq_lens && r > 0)
        return smla_fail(ctx, SMLA_ERR_NULL_POINTER,
                         "batch seq_lens is NULL with %d requests", r);
    if (batch->query_dtype != SMLA_DTYPE_FP8_E4M3 && batch->query_dtype != SMLA_DTYPE_BF16)
        return smla_fail(ctx, SMLA_ERR_DTYPE,
                         "batch query_dtype must be SMLA_DTYPE_FP8_E4M3 or SMLA_DTYPE_BF16, "
                         "got %d", (int)batch->query_dtype);
    if (batch->segment_cap < SMLA_SEGMENT_CAP_DEFAULT)
        return smla_fail(ctx, SMLA_ERR_VALUE,
                         "batch segment_cap must be -1 (default), 0 (off) or > 0, got %d",
                         batch->segment_cap);
    if (batch->decode_threshold < 0)
        return smla_fail(ctx, SMLA_ERR_VALUE,
                         "batch decode_threshold must be >= 0 (0 means 1), got %d",
                         batch->decode_threshold);
    if (batch->query_start_loc[0] != 0)
        return smla_fail(ctx, SMLA_ERR_VALUE, "batch query_start_loc[0] must be 0, got %d",
                         batch->query_start_loc[0]);
    return SMLA_OK;
}

/* Pass 1: query starts, order, capacity; fills shape. */
static smla_status check_requests(smla_context *ctx, const smla_plan *plan,
                                  const smla_batch *batch, batch_shape *shape)
{
    const int32_t *qsl = batch->query_start_loc;
    int32_t threshold = batch->decode_threshold ? batch->decode_threshold : 1;
    int32_t first_prefill = -1;
    shape->num_decodes = 0;
    shape->segment_cap = effective_cap(batch);
    shape->num_segments = 0;
    for (int32_t r = 0; r < batch->num_requests; r++) {
        int64_t q = (int64_t)qsl[r + 1] - qsl[r];
        if (q < 0)
            return smla_fail(ctx, SMLA_ERR_VALUE,
                             "batch query_start_loc decreases at request %d (%d then %d)", r,
                             qsl[r], qsl[r + 1]);
        if (qsl[r + 1] > plan->capacity.max_tokens)
            return smla_fail(ctx, SMLA_ERR_CAPACITY,
                             "batch has at least %d query tokens, the plan's capacity is "
                             "max_tokens = %d", qsl[r + 1], plan->capacity.max_tokens);
        if (q > threshold) {
            if (first_prefill < 0)
                first_prefill = r;
            shape->num_segments += segments_of(q, shape->segment_cap);
        } else if (first_prefill < 0) {
            shape->num_decodes = r + 1;
        } else if (q > 0) {
            return smla_fail(ctx, SMLA_ERR_BATCH_ORDER,
                             "request %d (query length %lld <= decode threshold %d) is a "
                             "decode after prefill request %d; decodes must come first",
                             r, (long long)q, threshold, first_prefill);
        }
    }
    if (shape->num_segments > plan->capacity.max_segments)
        return smla_fail(ctx, SMLA_ERR_CAPACITY,
                         "batch needs %lld prefill segments (cap %d), the plan's capacity is "
                         "max_segments = %d", (long long)shape->num_segments,
                         shape->segment_cap, plan->capacity.max_segments);
    return SMLA_OK;
}

/* A host plan reads seq_lens here, so it can reject lengths shorter than the query.
 * A device plan cannot without a sync; the attention kernels treat the resulting
 * negative positions safely (no SWA column is active before position 0). */
static smla_status check_host_seq_lens(smla_context *ctx, const smla_batch *batch)
{
    const int32_t *qsl = batch->query_start_loc;
    for (int32_t r = 0; r < batch->num_requests; r++) {
        int32_t q = qsl[r + 1] - qsl[r];
        if (batch->seq_lens[r] < q)
            return smla_fail(ctx, SMLA_ERR_VALUE,
                             "batch seq_lens[%d] = %d is less than its query length %d", r,
                             batch->seq_lens[r], q);
    }
    return SMLA_OK;
}

/* Pass 2: decode starts, then each prefill's n = ceil(Q / cap) segments of
 * as-equal-as-possible length, longer first, with their request and seq offset. */
static void write_plan(smla_plan *plan, const smla_batch *batch, const batch_shape *shape)
{
    const int32_t *qsl = batch->query_start_loc;
    const smla_plan_host_arrays *h = &plan->host;
    int32_t num_decodes = shape->num_decodes;
    for (int32_t r = 0; r <= num_decodes; r++)
        h->decode_query_starts[r] = qsl[r];
    int32_t prefill_base = qsl[num_decodes];
    int32_t seg = 0, max_len = 0;
    h->segment_query_starts[0] = 0;
    for (int32_t r = num_decodes; r < batch->num_requests; r++) {
        int32_t q = qsl[r + 1] - qsl[r];
        int32_t n = (int32_t)segments_of(q, shape->segment_cap);
        if (n == 0)
            continue;
        int32_t base = q / n, longer = q % n;
        int32_t start = qsl[r] - prefill_base, end = 0;
        for (int32_t k = 0; k < n; k++) {
            end += base + (k < longer);
            h->segment_requests[seg] = r;
            h->segment_seq_offsets[seg] = end - q;
            h->segment_query_starts[seg + 1] = start + end;
            seg++;
        }
        int32_t longest = base + (longer > 0);
        if (longest > max_len)
            max_len = longest;
    }
    smla_plan_view *v = &plan->view;
    v->num_requests = batch->num_requests;
    v->num_decodes = num_decodes;
    v->num_decode_tokens = prefill_base;
    v->num_prefill_tokens = qsl[batch->num_requests] - prefill_base;
    v->num_segments = seg;
    v->max_segment_len = max_len;
    v->segment_cap = shape->segment_cap;
    plan->host_counts[0] = num_decodes;
    plan->host_counts[1] = seg;
    plan->seq_lens = batch->seq_lens;
}

smla_status smla_plan_build(smla_plan *plan, const smla_batch *batch, void *stream)
{
    if (!plan)
        return SMLA_ERR_NULL_POINTER;
    smla_context *ctx = plan->ctx;
    if (!batch)
        return smla_fail(ctx, SMLA_ERR_NULL_POINTER, "batch is NULL");
    smla_status st = check_scalars(ctx, plan, batch);
    if (st != SMLA_OK)
        return st;
    batch_shape shape;
    st = check_requests(ctx, plan, batch, &shape);
    if (st != SMLA_OK)
        return st;
    if (plan->memory == SMLA_MEMORY_HOST) {
        st = check_host_seq_lens(ctx, batch);
        if (st != SMLA_OK)
            return st;
        write_plan(plan, batch, &shape);
        smla_plan_refresh(plan, stream);
        plan->built = 1;
        return smla_succeed(ctx);
    }
#ifdef SMLA_WITH_CUDA
    if (batch->num_requests > 0) {
        st = smla_plan_device_check_batch(plan, batch->seq_lens);
        if (st != SMLA_OK)
            return st;
    }
    write_plan(plan, batch, &shape);
    st = smla_plan_device_upload(plan, stream);
    if (st != SMLA_OK)
        return st;
    plan->built = 1;
#endif
    return smla_succeed(ctx);
}
