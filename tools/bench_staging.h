/* smla bench --staging (issue 7): what engines do today over fp8_ds_mla caches — gather
 * every token's selected rows into a BF16 workspace (staging_gather.h), then run a BF16
 * sparse prefill (smla's own) on it — against smla's direct call on the cache. Both paths
 * decode exactly, so their outputs are compared once per case. Built with CUDA only. */
#ifndef SMLA_TOOLS_BENCH_STAGING_H
#define SMLA_TOOLS_BENCH_STAGING_H

#ifdef SMLA_WITH_CUDA

#include <cjson/cJSON.h>

#include "bench_presets.h"

typedef struct smla_staging_run {
    int32_t segment_cap;   /* as in smla_batch (cases with requests) */
    smla_split_mode split; /* of both calls */
    int warmup, iters;
} smla_staging_run;

/* Times the case (its workload w, fp8_ds_mla caches) both ways, prints one table row
 * and appends one JSON object to rows. Returns 0, or 1 when it could not run or the two
 * outputs disagree. */
int smla_bench_staging_case(smla_context *ctx, const smla_bench_case *c,
                            const smla_workload *w, const smla_staging_run *run,
                            cJSON *rows);

void smla_bench_staging_header(void);

#endif
#endif
