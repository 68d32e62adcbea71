/* The batch planner's lifetime: create (every buffer allocated once, sized by capacity),
 * destroy, the view and the refresh. The build itself is in plan_build.c. */
#include <stdlib.h>

#include "cuda/plan/plan_device.h"
#include "plan.h"

static smla_status check_capacity(smla_context *ctx, const smla_plan_capacity *capacity)
{
    if (capacity->max_tokens < 1)
        return smla_fail(ctx, SMLA_ERR_VALUE, "capacity max_tokens must be >= 1, got %d",
                         capacity->max_tokens);
    if (capacity->max_requests < 1)
        return smla_fail(ctx, SMLA_ERR_VALUE, "capacity max_requests must be >= 1, got %d",
                         capacity->max_requests);
    if (capacity->max_segments < 0)
        return smla_fail(ctx, SMLA_ERR_VALUE,
                         "capacity max_segments must be >= 0 (0 = derived), got %d",
                         capacity->max_segments);
    return SMLA_OK;
}

/* Every segment holds at least one query token and no two share one, so a batch never
 * has more segments than tokens, whatever the cap (a cap of 1 reaches that bound). */
static int32_t derived_max_segments(const smla_plan_capacity *capacity)
{
    return capacity->max_tokens;
}

/* One allocation for the host arrays; seq lens arrays only for host plans. */
static smla_status alloc_host_arrays(smla_plan *plan)
{
    size_t requests = (size_t)plan->capacity.max_requests;
    size_t segments = (size_t)plan->capacity.max_segments;
    int host = plan->memory == SMLA_MEMORY_HOST;
    size_t count = (requests + 1) + (segments + 1) + 2 * segments +
                   (host ? requests + segments : 0);
    int32_t *p = calloc(count, sizeof *p);
    if (!p)
        return smla_fail(plan->ctx, SMLA_ERR_OUT_OF_MEMORY,
                         "cannot allocate %zu bytes of host plan arrays", count * sizeof *p);
    plan->host_block = p;
    smla_plan_host_arrays *h = &plan->host;
    h->decode_query_starts = p;
    p += requests + 1;
    h->segment_query_starts = p;
    p += segments + 1;
    h->segment_requests = p;
    p += segments;
    h->segment_seq_offsets = p;
    p += segments;
    if (host) {
        h->decode_seq_lens = p;
        p += requests;
        h->segment_seq_lens = p;
    }
    return SMLA_OK;
}

static void point_view_at_host(smla_plan *plan)
{
    smla_plan_view *v = &plan->view;
    const smla_plan_host_arrays *h = &plan->host;
    v->host_decode_query_starts = h->decode_query_starts;
    v->host_segment_query_starts = h->segment_query_starts;
    v->host_segment_requests = h->segment_requests;
    v->max_tokens = plan->capacity.max_tokens;
    if (plan->memory == SMLA_MEMORY_HOST) {
        v->counts = plan->host_counts;
        v->decode_query_starts = h->decode_query_starts;
        v->decode_seq_lens = h->decode_seq_lens;
        v->segment_query_starts = h->segment_query_starts;
        v->segment_seq_lens = h->segment_seq_lens;
        v->segment_requests = h->segment_requests;
    }
}

smla_status smla_plan_create(smla_context *ctx, const smla_plan_capacity *capacity,
                             smla_memory memory, smla_plan **plan)
{
    if (!ctx)
        return SMLA_ERR_NULL_POINTER;
    if (!plan)
        return smla_fail(ctx, SMLA_ERR_NULL_POINTER, "plan (the output handle) is NULL");
    *plan = NULL;
    if (!capacity)
        return smla_fail(ctx, SMLA_ERR_NULL_POINTER, "capacity is NULL");
    smla_status st = check_capacity(ctx, capacity);
    if (st != SMLA_OK)
        return st;
    if (memory != SMLA_MEMORY_HOST && memory != SMLA_MEMORY_DEVICE)
        return smla_fail(ctx, SMLA_ERR_VALUE, "memory must be SMLA_MEMORY_HOST or "
                         "SMLA_MEMORY_DEVICE, got %d", (int)memory);
    if (memory == SMLA_MEMORY_DEVICE && !ctx->has_cuda)
#ifdef SMLA_WITH_CUDA
        return smla_fail(ctx, SMLA_ERR_BACKEND, "a device plan needs a usable GPU; none found");
#else
        return smla_fail(ctx, SMLA_ERR_BACKEND,
                         "a device plan needs CUDA; this smla was built without it");
#endif

    smla_plan *p = calloc(1, sizeof *p);
    if (!p)
        return smla_fail(ctx, SMLA_ERR_OUT_OF_MEMORY, "cannot allocate the plan");
    p->ctx = ctx;
    p->memory = memory;
    p->capacity = *capacity;
    if (p->capacity.max_segments == 0)
        p->capacity.max_segments = derived_max_segments(capacity);
    p->view.memory = memory;
    st = alloc_host_arrays(p);
#ifdef SMLA_WITH_CUDA
    if (st == SMLA_OK && memory == SMLA_MEMORY_DEVICE)
        st = smla_plan_device_create(p);
#endif
    if (st != SMLA_OK) {
        smla_plan_destroy(p);
        return st;
    }
    point_view_at_host(p);
    *plan = p;
    return smla_succeed(ctx);
}

void smla_plan_destroy(smla_plan *plan)
{
    if (!plan)
        return;
#ifdef SMLA_WITH_CUDA
    smla_plan_device_destroy(plan->device);
#endif
    free(plan->host_block);
    free(plan);
}

smla_status smla_plan_get_view(const smla_plan *plan, smla_plan_view *view)
{
    if (!plan)
        return SMLA_ERR_NULL_POINTER;
    if (!view)
        return smla_fail(plan->ctx, SMLA_ERR_NULL_POINTER, "view is NULL");
    *view = plan->view;
    return smla_succeed(plan->ctx);
}

smla_status smla_plan_refresh(const smla_plan *plan, void *stream)
{
    if (!plan)
        return SMLA_ERR_NULL_POINTER;
#ifdef SMLA_WITH_CUDA
    if (plan->memory == SMLA_MEMORY_DEVICE)
        return smla_plan_device_refresh(plan, stream);
#endif
    const smla_plan_view *v = &plan->view;
    const smla_plan_host_arrays *h = &plan->host;
    for (int32_t r = 0; r < v->num_decodes; r++)
        h->decode_seq_lens[r] = plan->seq_lens[r];
    for (int32_t i = 0; i < v->num_segments; i++)
        h->segment_seq_lens[i] = plan->seq_lens[h->segment_requests[i]] +
                                 h->segment_seq_offsets[i];
    return SMLA_OK;
}
