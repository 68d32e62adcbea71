/* Result comparison (check_compare.h). */
#include "check_compare.h"

#include <math.h>
#include <string.h>

#include "check_problem.h"

static int is_poison_row(const uint16_t *row)
{
    return row[0] == SMLA_CHECK_OUT_POISON;
}

void smla_check_compare(const uint16_t *out, const uint16_t *ref_out, int64_t out_stride,
                        const float *lse, const float *ref_lse, int64_t lse_stride,
                        int64_t tokens, int heads, smla_check_result *r)
{
    memset(r, 0, sizeof *r);
    r->worst_token = r->worst_head = -1;
    double diff2 = 0.0, ref2 = 0.0, row_norm_sum = 0.0;
    /* First pass: global norms, to give near-zero rows a sensible scale. */
    for (int64_t t = 0; t < tokens; t++)
        for (int h = 0; h < heads; h++) {
            const uint16_t *ref = ref_out + t * out_stride + (int64_t)h * SMLA_HEAD_DIM;
            if (is_poison_row(ref))
                continue;
            double n2 = 0.0;
            for (int d = 0; d < SMLA_HEAD_DIM; d++) {
                const double v = smla_bf16_to_float(ref[d]);
                n2 += v * v;
            }
            row_norm_sum += sqrt(n2);
            r->rows_computed++;
        }
    const double mean_row_norm = r->rows_computed ? row_norm_sum / (double)r->rows_computed : 0.0;
    for (int64_t t = 0; t < tokens; t++) {
        for (int h = 0; h < heads; h++) {
            const uint16_t *ref = ref_out + t * out_stride + (int64_t)h * SMLA_HEAD_DIM;
            const uint16_t *got = out + t * out_stride + (int64_t)h * SMLA_HEAD_DIM;
            const float *rl = ref_lse ? ref_lse + t * lse_stride + h : NULL;
            const float *gl = lse ? lse + t * lse_stride + h : NULL;
            if (is_poison_row(ref)) {
                r->rows_padding++;
                for (int d = 0; d < SMLA_HEAD_DIM; d++)
                    r->padding_written += got[d] != ref[d];
                if (gl && memcmp(gl, rl, sizeof *gl) != 0)
                    r->padding_written++;
                continue;
            }
            double row_diff2 = 0.0, row_ref2 = 0.0;
            for (int d = 0; d < SMLA_HEAD_DIM; d++) {
                const double a = smla_bf16_to_float(got[d]), b = smla_bf16_to_float(ref[d]);
                if (isnan(a)) {
                    r->nan_count++;
                    continue;
                }
                row_diff2 += (a - b) * (a - b);
                row_ref2 += b * b;
            }
            diff2 += row_diff2;
            ref2 += row_ref2;
            const double scale = fmax(sqrt(row_ref2), 0.1 * mean_row_norm);
            const double row_err = scale > 0 ? sqrt(row_diff2) / scale : sqrt(row_diff2);
            if (row_err > r->worst_row) {
                r->worst_row = row_err;
                r->worst_token = t;
                r->worst_head = h;
            }
            if (gl) {
                if (isnan(*gl))
                    r->nan_count++;
                else if (isinf(*rl) || isinf(*gl))
                    r->lse_inf_mismatch += *rl != *gl;
                else
                    r->lse_err = fmax(r->lse_err, fabs((double)*gl - (double)*rl));
            }
        }
    }
    r->rel_fro = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
}

smla_check_limits smla_check_tolerance(smla_dtype q_dtype)
{
    const smla_check_limits fp8 = {3e-2, 1e-2}, bf16 = {4e-3, 1e-3};
    return q_dtype == SMLA_DTYPE_FP8_E4M3 ? fp8 : bf16;
}

int smla_check_passed(const smla_check_result *r, smla_check_limits limits)
{
    return r->rel_fro <= limits.out && r->worst_row <= 8 * limits.out && r->lse_err <= limits.lse &&
           r->nan_count == 0 && r->lse_inf_mismatch == 0 && r->padding_written == 0;
}
