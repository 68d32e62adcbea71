/* The quantisation floor of an FP8-query `smla check` problem (DESIGN section 8): how far
 * quantising q and the caches alone moves the result, and the rule that holds a kernel's
 * error on peaked problems below it. */
#ifndef SMLA_TOOLS_CHECK_FLOOR_H
#define SMLA_TOOLS_CHECK_FLOOR_H

#include "check_compare.h"
#include "check_problem.h"

/* Runs the CPU reference over problem->unquantised (into its out and lse) and compares
 * the reference over the decoded inputs, which the caller has run into problem->args' out
 * and lse, with it: the kernel's metrics (rel_fro of out, max abs LSE error) of that
 * difference. SMLA_ERR_DTYPE for a problem without FP8 queries. */
smla_status smla_check_floor(smla_context *ctx, const smla_check_problem *problem, smla_check_result *floor);

/* The peaked-floor rule: on a peaked FP8 problem the kernel's error of out (result:
 * against the reference over the decoded inputs) must not exceed the floor's. 1 when it
 * holds or does not apply (flat logits, BF16 queries). */
int smla_check_floor_holds(const smla_check_problem *problem, const smla_check_result *result,
                           const smla_check_result *floor);

#endif
