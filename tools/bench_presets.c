/* The benchmark presets (bench_presets.h). */
#include "bench_presets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 128
#define COMPRESS_RATIO 4
/* DeepSeek-V4 engines page the window cache in blocks of 256 and the compressed cache in
 * blocks of 64 (FlashMLA's production decode shapes). */
#define SWA_BLOCK 256
#define EXTRA_BLOCK 64
/* Decode requests: 2 query tokens (one speculative) at KV length 8192, so 2048
 * compressed entries, as FlashMLA's production decode shapes. */
#define DECODE_QUERY 2
#define DECODE_SEQ_LEN 8192
#define ROWS_TOKENS 4096
#define ROWS_BLOCK 64
#define ROWS_INVALID_FRACTION 0.01

typedef struct preset {
    const char *name;
    smla_bench_kind kind;
    int32_t heads, topk; /* engine presets */
} preset;

static const preset presets[] = {
    {"v41-flash-tp1", SMLA_BENCH_PREFILL, 64, 512},
    {"v41-flash-tp4", SMLA_BENCH_PREFILL, 16, 512},
    {"v4-pro-tp1", SMLA_BENCH_PREFILL, 128, 1024},
    {"v4-pro-tp8", SMLA_BENCH_PREFILL, 16, 1024},
    {"flashmla-shapes", SMLA_BENCH_RANDOM_ROWS, 0, 0},
    {"decode-v41-flash-tp1", SMLA_BENCH_DECODE, 64, 512},
    {"decode-v41-flash-tp4", SMLA_BENCH_DECODE, 16, 512},
    {"decode-v4-pro-tp1", SMLA_BENCH_DECODE, 128, 1024},
    {"decode-v4-pro-tp8", SMLA_BENCH_DECODE, 16, 1024},
};
#define NUM_PRESETS ((int)(sizeof presets / sizeof presets[0]))

/* Prefill requests: a fresh 8192-token prompt, and 4096 tokens after a 65536 prefix. */
static const smla_workload_request prefill_shapes[] = {{8192, 0}, {4096, 65536}};
static const int32_t default_decode_batches[] = {2, 64, 128, 256};
/* flashmla-shapes: DESIGN section 6's table, over two pool sizes. */
static const struct {
    int32_t heads, entries;
} rows_shapes[] = {{64, 512}, {64, 640}, {128, 1024}, {128, 1152}};
static const int32_t rows_pools[] = {8192, 65536};

int smla_bench_num_presets(void)
{
    return NUM_PRESETS;
}

const char *smla_bench_preset_name(int index)
{
    return presets[index].name;
}

int smla_bench_preset_is_prefill(int index)
{
    return presets[index].kind != SMLA_BENCH_DECODE;
}

int smla_bench_find_preset(const char *name)
{
    for (int i = 0; i < NUM_PRESETS; i++)
        if (!strcmp(presets[i].name, name))
            return i;
    return -1;
}

static smla_bench_case engine_case(const preset *p, smla_kv_format kv, smla_dtype q)
{
    smla_bench_case c;
    memset(&c, 0, sizeof c);
    c.kind = p->kind;
    c.heads = p->heads;
    c.topk = p->topk;
    c.q_dtype = q;
    c.kv_format = kv;
    c.swa_block_size = SWA_BLOCK;
    c.extra_block_size = EXTRA_BLOCK;
    return c;
}

static int prefill_cases(const preset *p, smla_dtype q, smla_kv_format kv,
                         smla_bench_case *cases)
{
    const int n = (int)(sizeof prefill_shapes / sizeof prefill_shapes[0]);
    for (int i = 0; i < n; i++) {
        smla_bench_case *c = &cases[i];
        *c = engine_case(p, kv, q);
        c->num_requests = 1;
        c->query_len = prefill_shapes[i].query_len;
        c->prefix_len = prefill_shapes[i].prefix_len;
        snprintf(c->name, sizeof c->name, "%s q%d+p%d", p->name, c->query_len, c->prefix_len);
    }
    return n;
}

static int decode_cases(const preset *p, smla_dtype q, smla_kv_format kv,
                        const int32_t *decode_batches, int num_batches, smla_bench_case *cases)
{
    const smla_kv_format formats[2] = {SMLA_KV_FP8_DS_MLA, SMLA_KV_FP8};
    const int num_formats = kv != SMLA_KV_INVALID ? 1 : 2;
    if (num_batches == 0) {
        decode_batches = default_decode_batches;
        num_batches = (int)(sizeof default_decode_batches / sizeof default_decode_batches[0]);
    }
    int n = 0;
    for (int f = 0; f < num_formats; f++)
        for (int b = 0; b < num_batches; b++, n++) {
            smla_bench_case *c = &cases[n];
            *c = engine_case(p, kv != SMLA_KV_INVALID ? kv : formats[f], q);
            c->num_requests = decode_batches[b];
            c->query_len = DECODE_QUERY;
            c->prefix_len = DECODE_SEQ_LEN - DECODE_QUERY;
            snprintf(c->name, sizeof c->name, "%s b%d", p->name, c->num_requests);
        }
    return n;
}

/* fp8 cache with FP8 queries, bf16 cache with BF16 queries, unless overridden. */
static int random_rows_cases(const preset *p, smla_dtype q, smla_kv_format kv,
                             smla_bench_case *cases)
{
    const smla_kv_format formats[2] = {SMLA_KV_FP8, SMLA_KV_BF16};
    const int num_formats = kv != SMLA_KV_INVALID ? 1 : 2;
    const int num_shapes = (int)(sizeof rows_shapes / sizeof rows_shapes[0]);
    const int num_pools = (int)(sizeof rows_pools / sizeof rows_pools[0]);
    int n = 0;
    for (int f = 0; f < num_formats; f++)
        for (int s = 0; s < num_shapes; s++)
            for (int r = 0; r < num_pools; r++, n++) {
                smla_bench_case *c = &cases[n];
                memset(c, 0, sizeof *c);
                c->kind = p->kind;
                c->heads = rows_shapes[s].heads;
                c->topk = rows_shapes[s].entries;
                c->tokens = ROWS_TOKENS;
                c->pool_rows = rows_pools[r];
                c->kv_format = kv != SMLA_KV_INVALID ? kv : formats[f];
                c->q_dtype = q != SMLA_DTYPE_INVALID ? q
                             : c->kv_format == SMLA_KV_BF16 ? SMLA_DTYPE_BF16
                                                            : SMLA_DTYPE_FP8_E4M3;
                c->swa_block_size = ROWS_BLOCK;
                snprintf(c->name, sizeof c->name, "flashmla h%d k%d rows%d", c->heads,
                         c->topk, c->pool_rows);
            }
    return n;
}

int smla_bench_preset_cases(int index, smla_dtype q_dtype, smla_kv_format kv_format,
                            const int32_t *decode_batches, int num_batches,
                            smla_bench_case *cases)
{
    const preset *p = &presets[index];
    const smla_dtype q = q_dtype != SMLA_DTYPE_INVALID ? q_dtype : SMLA_DTYPE_FP8_E4M3;
    switch (p->kind) {
    case SMLA_BENCH_PREFILL:
        return prefill_cases(p, q, kv_format != SMLA_KV_INVALID ? kv_format : SMLA_KV_FP8,
                             cases);
    case SMLA_BENCH_DECODE:
        return decode_cases(p, q, kv_format, decode_batches, num_batches, cases);
    default:
        return random_rows_cases(p, q_dtype, kv_format, cases);
    }
}

int32_t smla_bench_decode_threshold(const smla_bench_case *c)
{
    return c->kind == SMLA_BENCH_DECODE ? c->query_len : 1;
}

static const char *const split_names[] = {"auto", "fixed", "none"};
static const smla_split_mode split_modes[] = {SMLA_SPLIT_AUTO, SMLA_SPLIT_FIXED,
                                              SMLA_SPLIT_NONE};

const char *smla_bench_split_name(smla_split_mode split)
{
    for (size_t i = 0; i < sizeof split_modes / sizeof split_modes[0]; i++)
        if (split_modes[i] == split)
            return split_names[i];
    return "?";
}

int smla_bench_split_parse(const char *name, smla_split_mode *split)
{
    for (size_t i = 0; i < sizeof split_modes / sizeof split_modes[0]; i++)
        if (!strcmp(split_names[i], name)) {
            *split = split_modes[i];
            return 1;
        }
    return 0;
}

void smla_bench_cap_text(int32_t cap, char *buf, size_t bytes)
{
    if (cap < 0)
        snprintf(buf, bytes, "-");
    else if (cap == 0)
        snprintf(buf, bytes, "off");
    else
        snprintf(buf, bytes, "%d", cap);
}

smla_status smla_bench_case_workload(const smla_bench_case *c, uint64_t seed,
                                     smla_workload *w, smla_tool_error *error)
{
    if (c->kind == SMLA_BENCH_RANDOM_ROWS) {
        const smla_random_rows_spec spec = {c->heads, c->tokens, c->topk, c->pool_rows,
                                            ROWS_INVALID_FRACTION, c->q_dtype, c->kv_format,
                                            c->swa_block_size, seed};
        return smla_workload_random_rows(&spec, w, error);
    }
    smla_workload_request *requests = malloc((size_t)c->num_requests * sizeof *requests);
    if (!requests)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "%s: no memory", c->name);
    for (int32_t r = 0; r < c->num_requests; r++)
        requests[r] = (smla_workload_request){c->query_len, c->prefix_len};
    const smla_engine_spec spec = {c->heads, WINDOW, c->topk, COMPRESS_RATIO, c->q_dtype,
                                   c->kv_format, c->swa_block_size, c->extra_block_size,
                                   requests, c->num_requests, seed};
    const smla_status st = smla_workload_engine(&spec, w, error);
    free(requests);
    return st;
}
