/* Comparing an attention result with the CPU reference's, for `smla check` and `smla demo`.
 * Both outputs start from the same poison (check_problem.h), so rows the reference left
 * untouched (padding) must be left untouched, bit for bit, by the backend too. */
#ifndef SMLA_TOOLS_CHECK_COMPARE_H
#define SMLA_TOOLS_CHECK_COMPARE_H

#include <stdint.h>

#include "smla.h"

typedef struct smla_check_result {
    double rel_fro;           /* ||out - ref|| / ||ref|| over computed rows */
    double worst_row;         /* worst per-(token, head) relative error */
    int64_t worst_token, worst_head;
    double lse_err;           /* max |lse - ref lse| over finite values */
    int64_t nan_count;        /* NaN in computed outputs */
    int64_t lse_inf_mismatch; /* -inf in one lse and not the other */
    int64_t padding_written;  /* elements of padding rows that were changed */
    int64_t rows_computed;
    int64_t rows_padding;
} smla_check_result;

/* out, ref_out: BF16 bits with token stride out_stride (heads 512 apart); lse, ref_lse:
 * may be NULL, token stride lse_stride. */
void smla_check_compare(const uint16_t *out, const uint16_t *ref_out, int64_t out_stride,
                        const float *lse, const float *ref_lse, int64_t lse_stride,
                        int64_t tokens, int heads, smla_check_result *result);

/* The precision contract (DESIGN section 8) of a query dtype: the limits of out's relative
 * Frobenius error and of the absolute LSE error against the CPU reference over the decoded
 * inputs. FP8 E4M3: 3e-2 and 1e-2; BF16: 4e-3 and 1e-3. */
typedef struct smla_check_limits {
    double out;
    double lse;
} smla_check_limits;

smla_check_limits smla_check_tolerance(smla_dtype q_dtype);

/* 1 when the result is within the limits: rel_fro <= limits.out, every row within
 * 8 limits.out, LSE within limits.lse, no NaN, no -inf mismatch, padding untouched. */
int smla_check_passed(const smla_check_result *result, smla_check_limits limits);

#endif
