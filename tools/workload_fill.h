/* The parts of a workload both builders share (workload.c: engine batches,
 * workload_rows.c: random rows): owned buffers, pools, and the random data. */
#ifndef SMLA_TOOLS_WORKLOAD_FILL_H
#define SMLA_TOOLS_WORKLOAD_FILL_H

#include <stddef.h>

#include "rng.h"
#include "workload.h"

/* A zeroed, 64-byte aligned buffer of bytes (> 0) owned by w; NULL when out of memory. */
void *smla_workload_buffer(smla_workload *w, size_t bytes);

/* A host pool of num_blocks blocks owned by w, all bytes zero (data NULL when out of
 * memory). */
smla_kv_pool smla_workload_pool(smla_workload *w, smla_kv_format format, int64_t num_blocks,
                                int32_t block_size);

/* Completes a workload whose builder has set num_tokens, the pools and index sets of
 * args: allocates and fills q [T][heads][512] in q_dtype, sinks, out and lse; fills every
 * pool row some index names; sets the scales and, from active_entries, the FLOPs and
 * gathered bytes. */
smla_status smla_workload_finish(smla_workload *w, int32_t heads, smla_dtype q_dtype,
                                 int64_t active_entries, smla_tool_rng *rng,
                                 smla_tool_error *error);

#endif
