/* An independent model of smla_plan_build on a host plan (DESIGN section 4), for the plan
 * fuzzers: the batch is accepted exactly when it is valid for the capacity, and then the
 * view holds exactly the decodes and segments the specification gives; a refused batch
 * leaves the previous plan untouched. A difference stops the process (fuzz_fail). */
#ifndef SMLA_FUZZ_PLAN_ORACLE_H
#define SMLA_FUZZ_PLAN_ORACLE_H

#include "smla.h"

/* The view and the arrays of a plan before a build. */
typedef struct plan_snapshot {
    smla_plan_view view;
    int32_t *arrays; /* decode starts, decode seq lens, segment starts, seq lens, requests */
    size_t count;
} plan_snapshot;

void plan_snapshot_take(const smla_plan *plan, plan_snapshot *snapshot);
void plan_snapshot_free(plan_snapshot *snapshot);

/* Checks the outcome (status, plan's view now, message on ctx) of
 * smla_plan_build(plan, batch) on a host plan created with capacity (max_segments
 * resolved: 0 means max_tokens). batch may be NULL. */
void plan_oracle_check(const smla_context *ctx, const smla_plan_capacity *capacity,
                       const smla_batch *batch, smla_status status, const smla_plan *plan,
                       const plan_snapshot *before);

#endif
