/* The `smla check` machinery on the CPU: random problems of every configuration are
 * valid arguments, the reference leaves exactly the padding rows poisoned, and the
 * comparison flags a corrupted output, a written padding row and a NaN; both logit
 * classes are drawn; an FP8 problem's quantisation floor is positive, and 0 over the
 * decoded inputs themselves; most fp8_ds_mla rows have unequal tile scales; the limits
 * are per query dtype (DESIGN section 8), and the peaked-floor rule rejects an error above
 * the floor. */
#include <math.h>
#include <string.h>

#include "check_compare.h"
#include "check_floor.h"
#include "check_problem.h"
#include "check_table.h"
#include "kv_format.h"
#include "testutil.h"

/* Whether a computed output element is non-zero (padding keeps the poison). */
static int any_nonzero_output(const smla_check_problem *p)
{
    const uint16_t *out = p->args.out.data;
    for (int64_t i = 0; i < p->out_elements; i++)
        if (out[i] != SMLA_CHECK_OUT_POISON && (out[i] & 0x7FFF) != 0)
            return 1;
    return 0;
}

/* The floor of an FP8 problem whose reference has run, with the decoded reference's
 * structure (padding, -inf LSEs, no NaN); and 0 when the "unquantised" inputs are the
 * decoded ones. A BF16 problem has none. Returns 1 when the floor is positive (it can be
 * 0 with a non-zero output: rows of one BF16 entry and no sink do not see q's rounding),
 * so that the caller can check that floors are found. */
static int check_floor(smla_context *ctx, const smla_check_problem *p)
{
    smla_check_result floor;
    if (p->args.q.dtype != SMLA_DTYPE_FP8_E4M3) {
        CHECK(p->unquantised.q.data == NULL);
        CHECK_STATUS(smla_check_floor(ctx, p, &floor), SMLA_ERR_DTYPE);
        return 0;
    }
    CHECK(p->unquantised.q.dtype == SMLA_DTYPE_BF16 && p->unquantised.swa.format == SMLA_KV_BF16);
    CHECK(!p->args.extra.data || p->unquantised.extra.format == SMLA_KV_BF16);
    CHECK_STATUS(smla_check_floor(ctx, p, &floor), SMLA_OK);
    CHECK(floor.nan_count == 0 && floor.lse_inf_mismatch == 0 && floor.padding_written == 0);
    const int positive = any_nonzero_output(p) && floor.rel_fro > 0;
    smla_check_problem same = *p;
    same.unquantised.q = p->args.q;
    same.unquantised.swa = p->args.swa;
    same.unquantised.extra = p->args.extra;
    CHECK_STATUS(smla_check_floor(ctx, &same, &floor), SMLA_OK);
    CHECK(floor.rel_fro == 0 && floor.lse_err == 0 && floor.padding_written == 0);
    return positive;
}

/* Whether an fp8_ds_mla pool's rows have tile scales that differ: counts its rows, and
 * those whose seven UE8M0 scales are not all equal, into rows[0] and rows[1]. (Rows of
 * equal tiles would let a kernel that applies one tile's scale to all pass.) */
static void count_mixed_scales(const smla_kv_pool *pool, int64_t rows[2])
{
    if (pool->format != SMLA_KV_FP8_DS_MLA)
        return;
    for (int64_t slot = 0; slot < smla_kv_pool_rows(pool); slot++) {
        const uint8_t *scales = (const uint8_t *)pool->data + smla_kv_slot_scales(pool, slot);
        int mixed = 0;
        for (int i = 1; i < SMLA_DS_MLA_NOPE / SMLA_DS_MLA_TILE; i++)
            mixed |= scales[i] != scales[0];
        rows[0]++;
        rows[1] += mixed;
    }
}

/* One problem; counts its logit class in drawn[] (flat, peaked) when the config left it
 * to the draw, and FP8 problems with a positive floor in floors[0] of floors[1]. */
static void check_one(smla_context *ctx, const smla_check_config *cfg, smla_tool_rng *rng, int drawn[2],
                      int floors[2], int64_t ds_rows[2])
{
    smla_check_problem p;
    CHECK_STATUS(smla_check_problem_make(cfg, rng, &p), SMLA_OK);
    count_mixed_scales(&p.args.swa, ds_rows);
    count_mixed_scales(&p.args.extra, ds_rows);
    const int peaked = p.logits == SMLA_CHECK_LOGITS_PEAKED;
    CHECK(cfg->logits == SMLA_CHECK_LOGITS_ANY || p.logits == cfg->logits);
    CHECK(peaked ? p.logit_std >= 0.5 && p.logit_std <= 2.5 : p.logit_std >= 0.05 && p.logit_std <= 0.2);
    CHECK(fabs(p.logit_std - p.args.bmm1_scale * sqrt(SMLA_HEAD_DIM)) < 1e-12);
    CHECK(strstr(p.description, peaked ? " logits=peaked(std " : " logits=flat(std ") != NULL);
    drawn[peaked] += cfg->logits == SMLA_CHECK_LOGITS_ANY;
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
    uint16_t *copy = smla_test_alloc((size_t)p.out_elements * 2);
    memcpy(copy, a.out.data, (size_t)p.out_elements * 2);
    const float *lse = a.lse.data;
    const int64_t lse_stride = lse ? a.lse.stride[0] : 0;
    smla_check_result r;
    smla_check_compare(copy, a.out.data, out_stride, lse, lse, lse_stride, tokens, cfg->num_heads, &r);
    const smla_check_limits exact = {1e-9, 0}, limits = smla_check_tolerance(cfg->q_dtype);
    CHECK(smla_check_passed(&r, exact));
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
        CHECK(!smla_check_passed(&r, limits));
        copy[t * out_stride + 7] = 0x7FC1; /* NaN */
        smla_check_compare(copy, a.out.data, out_stride, lse, lse, lse_stride, tokens, cfg->num_heads, &r);
        CHECK(r.nan_count == 1 && !smla_check_passed(&r, limits));
        copy[t * out_stride + 7] = saved;
    }
    if (r.rows_padding > 0) {
        int64_t t = 0;
        while (copy[t * out_stride] != SMLA_CHECK_OUT_POISON)
            t++;
        copy[t * out_stride + 3] = 0;
        smla_check_compare(copy, a.out.data, out_stride, lse, lse, lse_stride, tokens, cfg->num_heads, &r);
        CHECK(r.padding_written == 1 && !smla_check_passed(&r, limits));
    }
    free(copy);
    floors[0] += check_floor(ctx, &p);
    floors[1] += cfg->q_dtype == SMLA_DTYPE_FP8_E4M3;
    /* A split set after the draw: the arguments and the description say it. */
    smla_check_problem_set_split(&p, SMLA_SPLIT_FIXED);
    CHECK(p.args.split == SMLA_SPLIT_FIXED && (!p.unquantised.q.data || p.unquantised.split == SMLA_SPLIT_FIXED) &&
          strstr(p.description, " split=fixed") &&
          !strstr(p.description, "split=auto") && !strstr(p.description, "split=none"));
    smla_check_problem_free(&p);
}

/* The limits per query dtype; the peaked-floor rule; a summary row's aggregates. */
static void check_rules(void)
{
    smla_check_result r;
    memset(&r, 0, sizeof r);
    r.rel_fro = 1e-3;
    r.lse_err = 5e-3;
    CHECK(smla_check_passed(&r, smla_check_tolerance(SMLA_DTYPE_FP8_E4M3)));
    CHECK(!smla_check_passed(&r, smla_check_tolerance(SMLA_DTYPE_BF16)));
    r.lse_err = 0;
    r.rel_fro = 2e-2;
    CHECK(smla_check_passed(&r, smla_check_tolerance(SMLA_DTYPE_FP8_E4M3)));
    CHECK(!smla_check_passed(&r, smla_check_tolerance(SMLA_DTYPE_BF16)));

    smla_check_problem p;
    memset(&p, 0, sizeof p);
    p.args.q.dtype = SMLA_DTYPE_FP8_E4M3;
    p.logits = SMLA_CHECK_LOGITS_PEAKED;
    smla_check_result floor;
    memset(&floor, 0, sizeof floor);
    floor.rel_fro = 1.5e-2;
    CHECK(!smla_check_floor_holds(&p, &r, &floor)); /* 2e-2 above 1.5e-2 */
    floor.rel_fro = 2e-2;
    CHECK(smla_check_floor_holds(&p, &r, &floor));
    floor.rel_fro = 1e-2;
    p.logits = SMLA_CHECK_LOGITS_FLAT;
    CHECK(smla_check_floor_holds(&p, &r, &floor));
    p.logits = SMLA_CHECK_LOGITS_PEAKED;
    p.args.q.dtype = SMLA_DTYPE_BF16;
    CHECK(smla_check_floor_holds(&p, &r, &floor));

    smla_check_row row;
    smla_check_row_init(&row);
    smla_check_row_add(&row, SMLA_CHECK_LOGITS_FLAT, &r, &floor);
    r.rel_fro = 1e-3;
    r.lse_err = 4e-3;
    floor.rel_fro = 3e-2;
    smla_check_row_add(&row, SMLA_CHECK_LOGITS_FLAT, &r, &floor);
    smla_check_row_add(&row, SMLA_CHECK_LOGITS_PEAKED, &r, NULL);
    CHECK(row.problems[0] == 2 && row.problems[1] == 1);
    CHECK(row.out[0] == 2e-2 && row.floor[0] == 1e-2 && row.out[1] == 1e-3 && isnan(row.floor[1]));
    CHECK(row.lse == 4e-3 && row.lse_floor[0] == 0 && isnan(row.lse_floor[1]));
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
    int drawn[2] = {0, 0}, floors[2] = {0, 0};
    int64_t ds_rows[2] = {0, 0};
    for (int h = 0; h < 4; h++)
        for (int q = 0; q < 2; q++)
            for (int f = 0; f < 3; f++)
                for (int pos = 0; pos < 4; pos++) {
                    /* logits: drawn (positions none, decode), flat (seqlens), peaked (plan) */
                    const smla_check_config cfg = {heads[h], q ? SMLA_DTYPE_BF16 : SMLA_DTYPE_FP8_E4M3,
                                                   formats[f][0], formats[f][1], (smla_check_positions)pos,
                                                   512 / heads[h], 1, (smla_check_logits)(pos % 3)};
                    check_one(ctx, &cfg, &rng, drawn, floors, ds_rows);
                }
    CHECK(drawn[0] > 0 && drawn[1] > 0);
    fprintf(stderr, "test_check_problem: %d of %d FP8 problems with a positive floor\n", floors[0], floors[1]);
    CHECK(2 * floors[0] >= floors[1]); /* most: a zero floor needs every row's one entry unmoved */
    fprintf(stderr, "test_check_problem: %lld of %lld fp8_ds_mla rows with unequal tile scales\n",
            (long long)ds_rows[1], (long long)ds_rows[0]);
    CHECK(ds_rows[0] > 0 && 2 * ds_rows[1] >= ds_rows[0]);
    check_rules();
    smla_context_destroy(ctx);
    return smla_test_finish("test_check_problem");
}
