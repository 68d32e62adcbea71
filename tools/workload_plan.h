/* Batch plans for workloads (smla demo, smla bench): the batch an engine would pass to
 * smla_plan_build for a workload's requests, and the arguments positioned by the plan. */
#ifndef SMLA_TOOLS_WORKLOAD_PLAN_H
#define SMLA_TOOLS_WORKLOAD_PLAN_H

#include "workload.h"

/* Creates *plan in memory and builds it for w's requests (w must have positions):
 * query starts from w's cu_seqlens_q, seq_lens from the given array (device memory for a
 * device plan, host for a host plan), requests of at most decode_threshold tokens as
 * decodes, w's query dtype, segment_cap as in smla_batch. Device work goes on stream. */
smla_status smla_workload_plan(smla_context *ctx, const smla_workload *w, smla_memory memory,
                               const int32_t *seq_lens, int32_t decode_threshold,
                               int32_t segment_cap, void *stream, smla_plan **plan,
                               smla_tool_error *error);

/* args with the tokens positioned by plan instead of cu_seqlens_q / seq_lens. */
smla_attention_args smla_args_with_plan(const smla_attention_args *args, const smla_plan *plan);

#endif
