/* smla check: random problems on the GPU against the CPU reference, every head count and
 * query type, KV formats (also mixed), with and without positions, through plans, flat and
 * peaked logits, FP8 queries beside their quantisation floor (DESIGN section 8); then
 * bit-exactness checks (repeat runs, segmentation, running a slice of the batch alone, a
 * launch large enough to walk against the same tokens in per-item launches, 128 heads
 * against each 64-head group alone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_compare.h"
#include "check_floor.h"
#include "check_options.h"
#include "check_problem.h"
#include "check_table.h"
#include "commands.h"
#include "query_dtype.h"
#include "smla.h"

#ifdef SMLA_WITH_CUDA
#include <cuda_runtime.h>

#include "device_args.h"

typedef struct kv_combo {
    smla_kv_format swa, extra;
} kv_combo;

static const kv_combo kv_combos[] = {
    {SMLA_KV_FP8, SMLA_KV_FP8},
    {SMLA_KV_BF16, SMLA_KV_BF16},
    {SMLA_KV_FP8, SMLA_KV_INVALID},
    {SMLA_KV_BF16, SMLA_KV_FP8},
    {SMLA_KV_FP8_DS_MLA, SMLA_KV_FP8_DS_MLA},
    {SMLA_KV_FP8_DS_MLA, SMLA_KV_INVALID},
};

/* Runs a host problem on the GPU (through a device plan in PLAN mode) and copies the
 * outputs into out/lse (host buffers laid out like the problem's). */
static int run_gpu(smla_context *ctx, const smla_check_problem *p, int use_plan, int32_t cap,
                   uint16_t *out, float *lse)
{
    smla_attention_args host = p->args;
    host.out.data = out;
    host.lse.data = host.lse.data ? lse : NULL;
    if (use_plan) {
        host.cu_seqlens_q = (smla_tensor){0};
        host.seq_lens = (smla_tensor){0};
    }
    smla_device_args dev;
    smla_tool_error err;
    if (smla_device_args_upload(&host, &dev, &err) != SMLA_OK) {
        fprintf(stderr, "smla check: %s\n", err.message);
        return -1;
    }
    smla_plan *plan = NULL;
    int32_t *d_seq = NULL;
    int rc = 0;
    if (use_plan) {
        const smla_plan_capacity capacity = {(int32_t)p->args.q.shape[0] + 1, p->num_requests + 1, 0};
        smla_batch batch = {p->num_requests, p->query_start_loc, NULL, p->decode_threshold,
                            p->args.q.dtype, cap};
        if (cudaMalloc((void **)&d_seq, sizeof(int32_t) * (size_t)(p->num_requests + 1)) != cudaSuccess ||
            cudaMemcpy(d_seq, p->seq_lens, sizeof(int32_t) * (size_t)p->num_requests, cudaMemcpyHostToDevice) != cudaSuccess) {
            fprintf(stderr, "smla check: cannot copy seq_lens to the device\n");
            rc = -1;
        }
        batch.seq_lens = d_seq;
        if (!rc && (smla_plan_create(ctx, &capacity, SMLA_MEMORY_DEVICE, &plan) != SMLA_OK ||
                    smla_plan_build(plan, &batch, NULL) != SMLA_OK)) {
            fprintf(stderr, "smla check: plan: %s\n", smla_context_last_error(ctx));
            rc = -1;
        }
        dev.args.plan = plan;
    }
    if (!rc) {
        const smla_status st = smla_attention(ctx, &dev.args);
        const cudaError_t ce = cudaDeviceSynchronize();
        if (st != SMLA_OK || ce != cudaSuccess) {
            fprintf(stderr, "smla check: attention failed: %s (%s) %s\n", smla_status_string(st),
                    smla_context_last_error(ctx), cudaGetErrorString(ce));
            rc = -1;
        } else if (smla_device_args_download(&dev, &host, &err) != SMLA_OK) {
            fprintf(stderr, "smla check: %s\n", err.message);
            rc = -1;
        }
    }
    smla_plan_destroy(plan);
    cudaFree(d_seq);
    smla_device_args_free(&dev);
    return rc;
}

typedef struct output_copy {
    uint16_t *out;
    float *lse;
} output_copy;

static int output_alloc(const smla_check_problem *p, output_copy *c)
{
    c->out = malloc((size_t)p->out_elements * 2);
    c->lse = p->args.lse.data ? malloc((size_t)(p->args.lse.shape[0] * p->args.lse.stride[0]) * 4) : NULL;
    if (!c->out || (p->args.lse.data && !c->lse))
        return -1;
    memcpy(c->out, p->args.out.data, (size_t)p->out_elements * 2); /* the poison */
    if (c->lse)
        memcpy(c->lse, p->args.lse.data, (size_t)(p->args.lse.shape[0] * p->args.lse.stride[0]) * 4);
    return 0;
}

static void output_free(output_copy *c)
{
    free(c->out);
    free(c->lse);
}

static int outputs_equal(const smla_check_problem *p, const output_copy *a, const output_copy *b)
{
    if (memcmp(a->out, b->out, (size_t)p->out_elements * 2) != 0)
        return 0;
    return !a->lse || memcmp(a->lse, b->lse, (size_t)(p->args.lse.shape[0] * p->args.lse.stride[0]) * 4) == 0;
}

/* Prints a problem's figures: the kernel's error, for FP8 queries the floor's, and which
 * rule failed. */
static void report_problem(const smla_check_problem *p, const smla_check_result *r, const smla_check_result *floor,
                           smla_check_limits limits, int within_limits, int under_floor)
{
    const int bad = !within_limits || !under_floor;
    FILE *f = bad ? stderr : stdout;
    fprintf(f,
            "  %s %s: rel_fro %.2e worst_row %.2e (t %lld h %lld) lse %.2e nan %lld inf_mismatch %lld "
            "padding_written %lld rows %lld/%lld",
            bad ? "FAIL" : "ok", p->description, r->rel_fro, r->worst_row, (long long)r->worst_token,
            (long long)r->worst_head, r->lse_err, (long long)r->nan_count, (long long)r->lse_inf_mismatch,
            (long long)r->padding_written, (long long)r->rows_computed, (long long)r->rows_padding);
    if (floor)
        fprintf(f, "; floor: rel_fro %.2e lse %.2e", floor->rel_fro, floor->lse_err);
    if (!within_limits)
        fprintf(f, "; outside the limits (out %.0e, worst row %.0e, lse %.0e, no NaN, padding untouched)",
                limits.out, 8 * limits.out, limits.lse);
    if (!under_floor)
        fprintf(f, "; the error of out is above the quantisation floor (peaked logits)");
    fputc('\n', f);
}

/* One problem on the GPU against the reference and, FP8 queries, its quantisation floor.
 * Returns 1 when it fails (or cannot run); adds its figures to row. */
static int check_problem(smla_context *ctx, const smla_check_config *cfg, const check_options *o,
                         smla_tool_rng *rng, smla_check_row *row)
{
    smla_check_problem p;
    if (smla_check_problem_make(cfg, rng, &p) != SMLA_OK) {
        fprintf(stderr, "smla check: cannot make a problem (out of memory)\n");
        return 1;
    }
    output_copy gpu;
    int bad = output_alloc(&p, &gpu);
    smla_attention_args ref = p.args;
    ref.backend = SMLA_BACKEND_CPU;
    const int fp8 = cfg->q_dtype == SMLA_DTYPE_FP8_E4M3;
    smla_check_result floor;
    memset(&floor, 0, sizeof floor);
    smla_status st = bad ? SMLA_ERR_OUT_OF_MEMORY : smla_attention(ctx, &ref);
    if (st == SMLA_OK && fp8)
        st = smla_check_floor(ctx, &p, &floor);
    if (st != SMLA_OK) {
        fprintf(stderr, "smla check: reference failed on %s: %s (%s)\n", p.description, smla_status_string(st),
                smla_context_last_error(ctx));
        bad = 1;
    }
    const int use_plan = cfg->positions >= SMLA_CHECK_POSITIONS_PLAN;
    if (!bad && run_gpu(ctx, &p, use_plan, p.segment_cap, gpu.out, gpu.lse) != 0)
        bad = 1;
    if (!bad) {
        smla_check_result r;
        smla_check_compare(gpu.out, p.args.out.data, p.args.out.stride[0], gpu.lse, p.args.lse.data,
                           p.args.lse.data ? p.args.lse.stride[0] : 0, p.args.q.shape[0], cfg->num_heads, &r);
        const smla_check_limits limits = smla_check_tolerance(cfg->q_dtype);
        const int within_limits = smla_check_passed(&r, limits);
        const int under_floor = smla_check_floor_holds(&p, &r, &floor);
        bad = !within_limits || !under_floor;
        smla_check_row_add(row, p.logits, &r, fp8 ? &floor : NULL);
        if (bad || o->verbose)
            report_problem(&p, &r, fp8 ? &floor : NULL, limits, within_limits, under_floor);
    }
    output_free(&gpu);
    smla_check_problem_free(&p);
    return bad;
}

/* One configuration: `cases` fresh problems, their logit classes alternating from the
 * `first`th (even: flat). Returns the number of failures; fills row. */
static int check_config(smla_context *ctx, const smla_check_config *cfg, const check_options *o, int first,
                        smla_tool_rng *rng, smla_check_row *row)
{
    int failures = 0;
    smla_check_row_init(row);
    for (int c = 0; c < o->cases; c++) {
        smla_check_config one = *cfg;
        one.logits = (first + c) % 2 ? SMLA_CHECK_LOGITS_PEAKED : SMLA_CHECK_LOGITS_FLAT;
        failures += check_problem(ctx, &one, o, rng, row);
    }
    return failures;
}

/* Entries [first, first + n) of a tensor's dimension `dim`, or the empty tensor as it is. */
static smla_tensor slice_of(smla_tensor t, int dim, int64_t first, int64_t n)
{
    if (t.data) {
        t.data = (char *)t.data + first * t.stride[dim] * (int64_t)smla_dtype_size(t.dtype);
        t.shape[dim] = n;
    }
    return t;
}

/* Tokens [first, first + n) of a problem without positions, as a problem of their own
 * (its tensors point into p's). */
static smla_check_problem token_slice(const smla_check_problem *p, int64_t first, int64_t n)
{
    smla_check_problem sub = *p;
    smla_attention_args *a = &sub.args;
    a->q = slice_of(a->q, 0, first, n);
    a->swa_indices = slice_of(a->swa_indices, 0, first, n);
    a->extra_indices = slice_of(a->extra_indices, 0, first, n);
    a->swa_lens = slice_of(a->swa_lens, 0, first, n);
    a->extra_lens = slice_of(a->extra_lens, 0, first, n);
    a->out = slice_of(a->out, 0, first, n);
    a->lse = slice_of(a->lse, 0, first, n);
    sub.out_elements = n * p->args.out.stride[0];
    return sub;
}

/* The walking heads-on-M kernels (a CTA per SM takes item after item; launch.cu's
 * heads_on_m_walks: more than two items per SM, no split token) against per-item launches,
 * bit for bit over every token: kWalkItems items (a token per 64 heads) in one launch (it
 * walks on any GPU of up to kWalkItems / 2 SMs), then the same tokens in launches of
 * kSliceTokens (at most 128 items: per item on any GPU of 64 SMs or more). Without
 * positions and with split NONE, every token's items are the same whatever else the
 * launch holds. */
static int check_walk(smla_context *ctx, int heads, smla_dtype q_dtype, kv_combo kv, smla_tool_rng *rng)
{
    enum { kWalkItems = 640, kSliceTokens = 64 };
    const int tokens = kWalkItems / (heads / 64);
    const smla_check_config cfg = {heads, q_dtype, kv.swa, kv.extra, SMLA_CHECK_POSITIONS_NONE,
                                   tokens, tokens, SMLA_CHECK_LOGITS_ANY};
    smla_check_problem p;
    if (smla_check_problem_make(&cfg, rng, &p) != SMLA_OK)
        return 1;
    smla_check_problem_set_split(&p, SMLA_SPLIT_NONE);
    output_copy whole, sliced;
    int bad = output_alloc(&p, &whole) | output_alloc(&p, &sliced);
    bad = bad || run_gpu(ctx, &p, 0, 0, whole.out, whole.lse);
    for (int64_t first = 0; !bad && first < tokens; first += kSliceTokens) {
        const smla_check_problem sub = token_slice(&p, first, kSliceTokens);
        bad = run_gpu(ctx, &sub, 0, 0, sliced.out + first * p.args.out.stride[0],
                      sliced.lse ? sliced.lse + first * p.args.lse.stride[0] : NULL);
    }
    const int same = !bad && outputs_equal(&p, &whole, &sliced);
    printf("  walk (split none) H=%-3d q=%-4s %s: in slices of %d tokens %s\n", heads,
           smla_query_dtype_name(q_dtype), p.description, kSliceTokens,
           bad ? "FAILED TO RUN" : same ? "identical" : "DIFFERENT");
    output_free(&whole);
    output_free(&sliced);
    smla_check_problem_free(&p);
    return !same;
}

/* Heads [first, first + n) of a problem, as a problem of their own (its tensors point
 * into p's). */
static smla_check_problem head_slice(const smla_check_problem *p, int first, int n)
{
    smla_check_problem sub = *p;
    smla_attention_args *a = &sub.args;
    a->q = slice_of(a->q, 1, first, n);
    a->out = slice_of(a->out, 1, first, n);
    a->lse = slice_of(a->lse, 1, first, n);
    a->sinks = slice_of(a->sinks, 0, first, n);
    return sub;
}

/* 128 heads against each 64-head group run alone, bit for bit (split FIXED, so that the
 * splits do not follow the launch's item count): a head's arithmetic must not depend on
 * how many heads the launch holds, also where the two head groups of a token could share
 * work (a cluster that widens or transposes each tile once for both: docs/prepared). */
static int check_head_groups(smla_context *ctx, smla_dtype q_dtype, kv_combo kv, smla_tool_rng *rng)
{
    const smla_check_config cfg = {128, q_dtype, kv.swa, kv.extra, SMLA_CHECK_POSITIONS_SEQLENS, 300, 1,
                                   SMLA_CHECK_LOGITS_ANY};
    smla_check_problem p;
    if (smla_check_problem_make(&cfg, rng, &p) != SMLA_OK)
        return 1;
    smla_check_problem_set_split(&p, SMLA_SPLIT_FIXED);
    output_copy whole, groups;
    int bad = output_alloc(&p, &whole) | output_alloc(&p, &groups);
    bad = bad || run_gpu(ctx, &p, 0, 0, whole.out, whole.lse);
    for (int g = 0; !bad && g < 2; g++) {
        const smla_check_problem sub = head_slice(&p, 64 * g, 64);
        bad = run_gpu(ctx, &sub, 0, 0, groups.out + 64 * g * SMLA_HEAD_DIM, groups.lse ? groups.lse + 64 * g : NULL);
    }
    const int same = !bad && outputs_equal(&p, &whole, &groups);
    printf("  head groups (split fixed) H=128 q=%-4s %s: against 2 x 64 heads %s\n",
           smla_query_dtype_name(q_dtype), p.description,
           bad ? "FAILED TO RUN" : same ? "identical" : "DIFFERENT");
    output_free(&whole);
    output_free(&groups);
    smla_check_problem_free(&p);
    return !same;
}

/* Bit-exactness on the GPU (split-KV at fixed points, SMLA_SPLIT_FIXED): the same
 * problem twice; through a plan with segments versus one sequence per request; the first
 * `keep` tokens run alone versus in the batch. */
static int check_invariance(smla_context *ctx, int heads, smla_dtype q_dtype, smla_kv_format format,
                            smla_tool_rng *rng)
{
    smla_check_config cfg = {heads, q_dtype, format, format, SMLA_CHECK_POSITIONS_PLAN, 400, 1, SMLA_CHECK_LOGITS_ANY};
    smla_check_problem p;
    if (smla_check_problem_make(&cfg, rng, &p) != SMLA_OK)
        return 1;
    smla_check_problem_set_split(&p, SMLA_SPLIT_FIXED);
    output_copy a, b, c, d;
    int bad = output_alloc(&p, &a) | output_alloc(&p, &b) | output_alloc(&p, &c) | output_alloc(&p, &d);
    bad = bad || run_gpu(ctx, &p, 0, 0, a.out, a.lse) || run_gpu(ctx, &p, 0, 0, b.out, b.lse) ||
          run_gpu(ctx, &p, 1, 1 + (int32_t)smla_tool_rng_range(rng, 0, 40), c.out, c.lse);
    const int repeat_ok = !bad && outputs_equal(&p, &a, &b);
    const int segment_ok = !bad && outputs_equal(&p, &a, &c);
    /* The slice: without positions, the first `keep` tokens alone. */
    smla_check_problem_poison(&p);
    p.args.cu_seqlens_q = (smla_tensor){0};
    p.args.seq_lens = (smla_tensor){0};
    int slice_ok = 0;
    if (!bad && !run_gpu(ctx, &p, 0, 0, a.out, a.lse)) {
        const int64_t keep = 1 + smla_tool_rng_range(rng, 0, p.args.q.shape[0] > 3 ? 2 : 0);
        const smla_check_problem sub = token_slice(&p, 0, keep);
        slice_ok = !run_gpu(ctx, &sub, 0, 0, d.out, d.lse) &&
                   memcmp(a.out, d.out, (size_t)sub.out_elements * 2) == 0 &&
                   (!a.lse || memcmp(a.lse, d.lse, (size_t)(keep * p.args.lse.stride[0]) * 4) == 0);
    }
    printf("  invariance (split fixed) H=%-3d q=%-4s %s: repeat %s, segmented plan %s, slice alone %s\n", heads,
           smla_query_dtype_name(q_dtype), p.description, repeat_ok ? "identical" : "DIFFERENT",
           segment_ok ? "identical" : "DIFFERENT", slice_ok ? "identical" : "DIFFERENT");
    output_free(&a);
    output_free(&b);
    output_free(&c);
    output_free(&d);
    smla_check_problem_free(&p);
    return !(repeat_ok && segment_ok && slice_ok);
}

/* Whether the checks cover head count h (--heads) with query type q (--q). */
static int covers(const check_options *o, int h, smla_dtype q)
{
    return (!o->heads || o->heads == h) && (o->q_dtype == SMLA_DTYPE_INVALID || o->q_dtype == q);
}

static int run_checks(smla_context *ctx, const check_options *o)
{
    static const int heads[] = {8, 16, 32, 64, 128};
    static const smla_dtype qs[] = {SMLA_DTYPE_FP8_E4M3, SMLA_DTYPE_BF16};
    smla_tool_rng rng;
    smla_tool_rng_seed(&rng, o->seed);
    int failures = 0, total = 0;
    smla_check_table_header(stdout);
    const size_t num_combos = sizeof kv_combos / sizeof kv_combos[0];
    for (size_t hi = 0; hi < sizeof heads / sizeof heads[0]; hi++)
        for (size_t qi = 0; qi < 2; qi++)
            for (size_t ki = 0; ki < num_combos && covers(o, heads[hi], qs[qi]); ki++)
                for (int pos = 0; pos < 4; pos++) {
                    int max_tokens = o->token_heads / heads[hi];
                    if (pos == SMLA_CHECK_POSITIONS_DECODE) /* batches up to 512 requests */
                        max_tokens = 4 * max_tokens < 2048 ? 4 * max_tokens : 2048;
                    const smla_check_config cfg = {heads[hi], qs[qi], kv_combos[ki].swa, kv_combos[ki].extra,
                                                   (smla_check_positions)pos, max_tokens < 1 ? 1 : max_tokens, 1,
                                                   SMLA_CHECK_LOGITS_ANY};
                    smla_check_row row;
                    const int f = check_config(ctx, &cfg, o, total, &rng, &row);
                    smla_check_table_row(stdout, &cfg, &row, f);
                    failures += f;
                    total += o->cases;
                }
    printf("bit-exactness:\n");
    int inv_failures = 0;
    /* Each query type over its own cache format and over fp8_ds_mla. */
    static const smla_kv_format inv_formats[2][2] = {{SMLA_KV_FP8, SMLA_KV_FP8_DS_MLA},
                                                     {SMLA_KV_BF16, SMLA_KV_FP8_DS_MLA}};
    for (size_t hi = 0; hi < sizeof heads / sizeof heads[0]; hi++)
        for (size_t qi = 0; qi < 2; qi++)
            for (size_t fi = 0; fi < 2 && covers(o, heads[hi], qs[qi]); fi++)
                inv_failures += check_invariance(ctx, heads[hi], qs[qi], inv_formats[qi][fi], &rng);
    static const int walking_heads[] = {64, 128};
    for (size_t hi = 0; hi < 2; hi++)
        for (size_t qi = 0; qi < 2; qi++)
            for (size_t ki = 0; ki < num_combos && covers(o, walking_heads[hi], qs[qi]); ki++)
                inv_failures += check_walk(ctx, walking_heads[hi], qs[qi], kv_combos[ki], &rng);
    /* Raw rows, which the BF16 path widens: fp8_ds_mla, and BF16 window rows beside E4M3 ones. */
    static const kv_combo raw_combos[] = {{SMLA_KV_FP8_DS_MLA, SMLA_KV_FP8_DS_MLA}, {SMLA_KV_BF16, SMLA_KV_FP8}};
    for (size_t qi = 0; qi < 2; qi++)
        for (size_t ki = 0; ki < sizeof raw_combos / sizeof raw_combos[0] && covers(o, 128, qs[qi]); ki++)
            inv_failures += check_head_groups(ctx, qs[qi], raw_combos[ki], &rng);
    printf("smla check: %d/%d problems passed, %d bit-exactness failures (seed %llu)\n", total - failures, total,
           inv_failures, (unsigned long long)o->seed);
    return failures || inv_failures ? 1 : 0;
}
#endif

int smla_cmd_check(int argc, char **argv)
{
    check_options o;
    const int code = smla_check_options_parse(argc, argv, &o);
    if (code >= 0)
        return code;
#ifdef SMLA_WITH_CUDA
    smla_context *ctx = NULL;
    if (smla_context_create(&ctx) != SMLA_OK)
        return 2;
    if (!smla_context_has_cuda(ctx)) {
        fprintf(stderr, "smla check: no usable GPU: it compares the CUDA backend with the CPU reference\n");
        smla_context_destroy(ctx);
        return 2;
    }
    printf("smla check: seed %llu\n", (unsigned long long)o.seed);
    const int rc = run_checks(ctx, &o);
    smla_context_destroy(ctx);
    return rc;
#else
    fprintf(stderr, "smla check: this smla was built without CUDA; it compares the CUDA backend with the CPU reference\n");
    return 2;
#endif
}
