/* Batch plans for workloads (workload_plan.h). */
#include "workload_plan.h"

smla_status smla_workload_plan(smla_context *ctx, const smla_workload *w, smla_memory memory,
                               const int32_t *seq_lens, int32_t decode_threshold,
                               int32_t segment_cap, void *stream, smla_plan **plan,
                               smla_tool_error *error)
{
    *plan = NULL;
    if (w->num_requests == 0)
        return smla_tool_fail(error, SMLA_ERR_VALUE, "plan: the workload has no requests");
    const smla_plan_capacity capacity = {w->num_tokens, w->num_requests, 0};
    const smla_batch batch = {w->num_requests, w->args.cu_seqlens_q.data, seq_lens,
                              decode_threshold, w->args.q.dtype, segment_cap};
    smla_status st = smla_plan_create(ctx, &capacity, memory, plan);
    if (st == SMLA_OK)
        st = smla_plan_build(*plan, &batch, stream);
    if (st != SMLA_OK) {
        smla_tool_fail(error, st, "plan: %s: %s", smla_status_string(st),
                       smla_context_last_error(ctx));
        smla_plan_destroy(*plan);
        *plan = NULL;
    }
    return st;
}

smla_attention_args smla_args_with_plan(const smla_attention_args *args, const smla_plan *plan)
{
    smla_attention_args a = *args;
    a.plan = plan;
    a.cu_seqlens_q.data = NULL;
    a.seq_lens.data = NULL;
    return a;
}
