/* The `smla check` machinery on the CPU: random problems of every configuration are
 * valid arguments, the reference leaves exactly the padding rows poisoned, and the
 * comparison flags a corrupted output, a written padding row and a NaN. */
#include <math.h>
#include <string.h>

#include "check_compare.h"
#include "check_problem.h"
#include "testutil.h"

static void check_one(smla_context *ctx, const smla_check_config *cfg, smla_tool_rng *rng)
{
    smla_check_problem p;
    CHECK_STATUS(smla_check_problem_make(cfg, rng, &p), SMLA_OK);
    if (cfg->positions >= SMLA_CHECK_POSITIONS_PLAN) { /* the batch is a valid plan input */
        const smla_plan_capacity cap = {(int32_t)p.args.q.shape[0] + 1, p.num_requests + 1, 0};
        const smla_batch batch = {p.num_requests, p.query_start_loc, p.seq_lens, p.decode_threshold,
                                  cfg->q_dtype, p.segment_cap};
        smla_plan *plan = NULL;
        CHECK_STATUS(smla_plan_create(ctx, &cap, SMLA_MEMORY_HOST, &plan), SMLA_OK);
        CHECK_STATUS(smla_plan_build(plan, &batch, NULL), SMLA_OK);
        smla_plan_destroy(plan);
    }
    smla_attention_args a = p.args;
    a.backend = SMLA_BACKEND_CPU;
    const smla_status st = smla_attention(ctx, &a);
    CHECK_STATUS(st, SMLA_OK);
    if (st != SMLA_OK) {
        fprintf(stderr, "  %s: %s\n", p.description, smla_context_last_error(ctx));
        smla_check_problem_free(&p);
        return;
    }
    const int64_t tokens = a.q.shape[0], out_stride = a.out.stride[0];
    uint16_t *copy = malloc((size_t)p.out_elements * 2);
    memcpy(copy, a.out.data, (size_t)p.out_elements * 2);
    const float *lse = a.lse.data;
    const int64_t lse_stride = lse ? a.lse.stride[0] : 0;
    smla_check_result r;
    smla_check_compare(copy, a.out.data, out_stride, lse, lse, lse_stride, tokens, cfg->num_heads, &r);
    CHECK(smla_check_passed(&r, 1e-9));
    CHECK(r.rel_fro == 0.0);
    CHECK(r.rows_computed + r.rows_padding == tokens * cfg->num_heads);
    if (cfg->positions == SMLA_CHECK_POSITIONS_NONE)
        CHECK(r.rows_padding == 0);
    /* Corruptions are caught. */
    if (r.rows_computed > 0) {
        int64_t t = 0;
        while (copy[t * out_stride] == SMLA_CHECK_OUT_POISON)
            t++;
        const uint16_t saved = copy[t * out_stride + 7];
        copy[t * out_stride + 7] = smla_float_to_bf16(smla_bf16_to_float(saved) + 1000.0f);
        smla_check_compare(copy, a.out.data, out_stride, lse, lse, lse_stride, tokens, cfg->num_heads, &r);
        CHECK(!smla_check_passed(&r, 1e-2));
        copy[t * out_stride + 7] = 0x7FC1; /* NaN */
        smla_check_compare(copy, a.out.data, out_stride, lse, lse, lse_stride, tokens, cfg->num_heads, &r);
        CHECK(r.nan_count == 1 && !smla_check_passed(&r, 1e-2));
        copy[t * out_stride + 7] = saved;
    }
    if (r.rows_padding > 0) {
        int64_t t = 0;
        while (copy[t * out_stride] != SMLA_CHECK_OUT_POISON)
            t++;
        copy[t * out_stride + 3] = 0;
        smla_check_compare(copy, a.out.data, out_stride, lse, lse, lse_stride, tokens, cfg->num_heads, &r);
        CHECK(r.padding_written == 1 && !smla_check_passed(&r, 1e-2));
    }
    free(copy);
    /* A split set after the draw: the arguments and the description say it. */
    smla_check_problem_set_split(&p, SMLA_SPLIT_FIXED);
    CHECK(p.args.split == SMLA_SPLIT_FIXED && strstr(p.description, " split=fixed") &&
          !strstr(p.description, "split=auto") && !strstr(p.description, "split=none"));
    smla_check_problem_free(&p);
}

int main(void)
{
    smla_tool_rng rng;
    smla_tool_rng_seed(&rng, smla_test_seed("test_check_problem"));
    smla_context *ctx = NULL;
    CHECK_STATUS(smla_context_create(&ctx), SMLA_OK);
    static const int heads[] = {8, 16, 64, 128};
    static const smla_kv_format formats[][2] = {{SMLA_KV_FP8, SMLA_KV_FP8},
                                                 {SMLA_KV_BF16, SMLA_KV_FP8},
                                                 {SMLA_KV_FP8_DS_MLA, SMLA_KV_INVALID}};
    for (int h = 0; h < 4; h++)
        for (int q = 0; q < 2; q++)
            for (int f = 0; f < 3; f++)
                for (int pos = 0; pos < 4; pos++) {
                    const smla_check_config cfg = {heads[h], q ? SMLA_DTYPE_BF16 : SMLA_DTYPE_FP8_E4M3,
                                                   formats[f][0], formats[f][1], (smla_check_positions)pos,
                                                   512 / heads[h], 1};
                    check_one(ctx, &cfg, &rng);
                }
    smla_context_destroy(ctx);
    return smla_test_finish("test_check_problem");
}
