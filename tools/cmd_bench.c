/* smla bench: the benchmark presets (bench_presets.h) on the GPU, timed with CUDA events. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench_presets.h"
#include "bench_staging.h"
#include "bench_timer.h"
#include "cli_number.h"
#include "commands.h"
#include "query_dtype.h"
#include "workload_device.h"

#define BENCH_SEED 1
#define BENCH_WARMUP 3
#define DEFAULT_ITERS 20
#define MAX_ITERS 100000
#define MAX_CAPS 8
#define MAX_BATCH 512 /* requests of a decode batch (each with its own 8192-token cache) */
#define TEXT(x) #x
#define NUMBER_TEXT(x) TEXT(x)
#define MAX_SPLITS 3

static const char usage_text[] =
    "usage: smla bench [--preset NAME[,NAME...]] [--q fp8|bf16] [--kv fp8|bf16|fp8_ds_mla]\n"
    "                  [--cap N|off[,N|off...]] [--split auto|fixed|none[,...]]\n"
    "                  [--batch N[,N...]] [--heads N] [--staging] [--iters N] [--json FILE]\n"
    "                  [--list]\n"
    "\n"
    "Times sparse MLA attention on the GPU (CUDA events: %d warm-up runs, then the median\n"
    "of --iters runs, default %d). Each case's inputs are rotated among copies when one\n"
    "copy is smaller than twice the L2 cache, so that runs do not find it there. Engine\n"
    "batches run through a device batch plan (built outside the timed region).\n"
    "Reported per case: tokens, heads, active entries per token, time, TFLOP/s (2 x heads\n"
    "x 1024 x active entries / time) and GB/s of gathered KV rows.\n"
    "\n"
    "Presets (without --preset: every prefill preset, flashmla-shapes included):\n"
    "  v41-flash-tp1 (64 heads), v41-flash-tp4 (16): window 128 + 512 compressed entries\n"
    "  v4-pro-tp1 (128 heads), v4-pro-tp8 (16): window 128 + 1024 compressed entries\n"
    "      each as an 8192-token fresh prefill and a 4096-token prefill after 65536;\n"
    "      FP8 queries and fp8 caches unless --q / --kv\n"
    "  flashmla-shapes: 4096 queries, one set of distinct random rows (1%% invalid) over a\n"
    "      pool of 8192 or 65536 rows: 64 heads x 512 and 640, 128 heads x 1024 and 1152;\n"
    "      fp8 cache with FP8 queries and bf16 cache with BF16 queries unless --q / --kv\n"
    "  decode-v41-flash-tp1, decode-v41-flash-tp4, decode-v4-pro-tp1, decode-v4-pro-tp8:\n"
    "      batches of 2, 64, 128, 256 requests x 2 query tokens at KV length 8192, with\n"
    "      fp8_ds_mla and fp8 caches (blocks of 256 window / 64 compressed rows)\n"
    "\n"
    "  --batch  the decode presets' batch sizes in requests (at most %d, each in\n"
    "           [1, %d]) instead of 2, 64, 128, 256\n"
    "  --heads  the engine presets' query heads (8, 16, 32, 64 or 128) instead of their\n"
    "           own; the case names get \" hN\" (not with flashmla-shapes, whose shapes\n"
    "           are head counts; without --preset, the engine prefill presets)\n"
    "  --cap    prefill segment caps of the plan, one run per cap (off = no segmentation);\n"
    "           default: the planner's default\n"
    "  --split  split-KV modes, one run per mode (default: auto, the library's): auto\n"
    "           splits only launches too small for the GPU, fixed splits every token at\n"
    "           512-entry points (batch-invariant), none never splits\n"
    "  --staging  fp8_ds_mla caches (default presets: v41-flash-tp1, v4-pro-tp1): times\n"
    "           what engines do today, a gather of every token's rows into a BF16\n"
    "           workspace then smla's BF16 sparse prefill on it, against the direct call\n"
    "           on the cache (one copy of the inputs, not rotated; same --q for both);\n"
    "           reports both, the speedup and TFLOP/s, and checks once that both outputs\n"
    "           agree\n"
    "  --json   also write the results to FILE\n"
    "  --list   print the cases of the selected presets and exit (no GPU needed)\n"
    "\n"
    "Exit status: 0 when every case ran, 1 when some could not (or, with --staging, the\n"
    "two outputs differ), 2 on bad arguments or without a GPU.\n";

typedef struct bench_options {
    int presets[SMLA_BENCH_MAX_CASES];
    int num_presets;
    smla_dtype q_dtype;        /* INVALID: the preset's */
    smla_kv_format kv_format;  /* INVALID: the preset's */
    int32_t caps[MAX_CAPS];
    int num_caps;
    smla_split_mode splits[MAX_SPLITS];
    int num_splits;
    int32_t batches[SMLA_BENCH_MAX_BATCHES];
    int num_batches;
    int32_t heads; /* 0: the presets' */
    int staging;
    int iters;
    const char *json;
    int list;
} bench_options;

static void usage(FILE *f)
{
    fprintf(f, usage_text, BENCH_WARMUP, DEFAULT_ITERS, SMLA_BENCH_MAX_BATCHES, MAX_BATCH);
}

static int bad_option(const char *fmt, const char *value)
{
    fprintf(stderr, "smla bench: ");
    fprintf(stderr, fmt, value);
    fprintf(stderr, " (smla bench --help)\n");
    return 2;
}

/* Calls item() on each entry of a comma list; 0 when one is refused. */
static int parse_list(const char *option, const char *text, bench_options *o,
                      int (*item)(const char *entry, bench_options *o))
{
    for (const char *p = text;; p++) {
        char entry[64];
        const size_t len = strcspn(p, ",");
        if (len >= sizeof entry)
            return bad_option("%s: an entry is too long", option), 0;
        memcpy(entry, p, len);
        entry[len] = '\0';
        if (!item(entry, o))
            return 0;
        p += len;
        if (*p == '\0')
            return 1;
    }
}

/* flashmla-shapes: its shapes are head counts (--heads does not apply). */
static int shapes_preset(int preset) { return !strcmp(smla_bench_preset_name(preset), "flashmla-shapes"); }

static int preset_item(const char *entry, bench_options *o)
{
    const int preset = smla_bench_find_preset(entry);
    if (preset < 0 || o->num_presets == SMLA_BENCH_MAX_CASES)
        return bad_option("--preset: '%s' is not a preset (or one too many)", entry), 0;
    o->presets[o->num_presets++] = preset;
    return 1;
}

static int cap_item(const char *entry, bench_options *o)
{
    if (o->num_caps == MAX_CAPS)
        return bad_option("--cap: at most 8 caps, not '%s'", entry), 0;
    if (!strcmp(entry, "off")) {
        o->caps[o->num_caps++] = 0;
        return 1;
    }
    uint64_t value;
    if (!smla_cli_parse_uint(entry, strlen(entry), 1, INT32_MAX, &value))
        return bad_option("--cap: '%s' is not an integer in [1, 2147483647] or off", entry), 0;
    o->caps[o->num_caps++] = (int32_t)value;
    return 1;
}

static int split_item(const char *entry, bench_options *o)
{
    if (o->num_splits == MAX_SPLITS)
        return bad_option("--split: at most 3 modes, not '%s'", entry), 0;
    if (!smla_bench_split_parse(entry, &o->splits[o->num_splits]))
        return bad_option("--split: '%s' is not auto, fixed or none", entry), 0;
    o->num_splits++;
    return 1;
}

static int batch_item(const char *entry, bench_options *o)
{
    if (o->num_batches == SMLA_BENCH_MAX_BATCHES)
        return bad_option("--batch: at most " NUMBER_TEXT(SMLA_BENCH_MAX_BATCHES) " batch sizes, not '%s'", entry), 0;
    uint64_t value;
    if (!smla_cli_parse_uint(entry, strlen(entry), 1, MAX_BATCH, &value))
        return bad_option("--batch: '%s' is not a number of requests in [1, " NUMBER_TEXT(MAX_BATCH) "]", entry), 0;
    o->batches[o->num_batches++] = (int32_t)value;
    return 1;
}

/* --staging: fp8_ds_mla caches; the two presets of issue 7 unless --preset. 0 when --kv
 * asks for another format. */
static int staging_defaults(bench_options *o)
{
    if (o->kv_format != SMLA_KV_INVALID && o->kv_format != SMLA_KV_FP8_DS_MLA)
        return bad_option("--staging runs on fp8_ds_mla caches, not --kv %s",
                          smla_kv_format_name(o->kv_format)), 0;
    o->kv_format = SMLA_KV_FP8_DS_MLA;
    if (o->num_presets == 0) {
        o->presets[o->num_presets++] = smla_bench_find_preset("v41-flash-tp1");
        o->presets[o->num_presets++] = smla_bench_find_preset("v4-pro-tp1");
    }
    return 1;
}

/* Returns -1 when the command should run, else its exit code. */
static int parse_options(int argc, char **argv, bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->iters = DEFAULT_ITERS;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(arg, "--list")) {
            o->list = 1;
            continue;
        }
        if (!strcmp(arg, "--staging")) {
            o->staging = 1;
            continue;
        }
        if (i + 1 == argc)
            return bad_option("'%s' is unknown or lacks its value", arg);
        const char *value = argv[++i];
        if (!strcmp(arg, "--preset")) {
            if (!parse_list(arg, value, o, preset_item))
                return 2;
        } else if (!strcmp(arg, "--cap")) {
            if (!parse_list(arg, value, o, cap_item))
                return 2;
        } else if (!strcmp(arg, "--split")) {
            if (!parse_list(arg, value, o, split_item))
                return 2;
        } else if (!strcmp(arg, "--batch")) {
            if (!parse_list(arg, value, o, batch_item))
                return 2;
        } else if (!strcmp(arg, "--heads")) {
            uint64_t n;
            if (!smla_cli_parse_uint(value, strlen(value), 8, 128, &n) || (n & (n - 1)) != 0)
                return bad_option("--heads must be 8, 16, 32, 64 or 128, not '%s'", value);
            o->heads = (int32_t)n;
        } else if (!strcmp(arg, "--q")) {
            o->q_dtype = smla_query_dtype_parse(value);
            if (o->q_dtype == SMLA_DTYPE_INVALID)
                return bad_option("--q must be fp8 or bf16, not '%s'", value);
        } else if (!strcmp(arg, "--kv")) {
            o->kv_format = smla_kv_format_parse(value);
            if (o->kv_format == SMLA_KV_INVALID)
                return bad_option("--kv must be fp8, bf16 or fp8_ds_mla, not '%s'", value);
        } else if (!strcmp(arg, "--iters")) {
            uint64_t n;
            if (!smla_cli_parse_uint(value, strlen(value), 1, MAX_ITERS, &n))
                return bad_option("--iters must be an integer in [1, " NUMBER_TEXT(MAX_ITERS)
                                  "], not '%s'", value);
            o->iters = (int)n;
        } else if (!strcmp(arg, "--json")) {
            o->json = value;
        } else {
            return bad_option("unknown option '%s'", arg);
        }
    }
    if (o->staging && !staging_defaults(o))
        return 2;
    if (o->num_presets == 0) /* with --heads, the engine ones */
        for (int p = 0; p < smla_bench_num_presets(); p++)
            if (smla_bench_preset_is_prefill(p) && !(o->heads && shapes_preset(p)))
                o->presets[o->num_presets++] = p;
    for (int i = 0; o->heads && i < o->num_presets; i++)
        if (shapes_preset(o->presets[i]))
            return bad_option("--heads applies to the engine presets, not %s", smla_bench_preset_name(o->presets[i]));
    if (o->num_caps == 0)
        o->caps[o->num_caps++] = SMLA_SEGMENT_CAP_DEFAULT;
    if (o->num_splits == 0)
        o->splits[o->num_splits++] = SMLA_SPLIT_AUTO;
    return -1;
}

/* The cases of preset `preset` under the options (--q, --kv, --batch, --heads). */
static int preset_cases(const bench_options *o, int preset, smla_bench_case *cases)
{
    const int n = smla_bench_preset_cases(preset, o->q_dtype, o->kv_format, o->batches, o->num_batches, cases);
    for (int c = 0; o->heads && c < n; c++) {
        const size_t len = strlen(cases[c].name);
        cases[c].heads = o->heads;
        snprintf(cases[c].name + len, sizeof cases[c].name - len, " h%d", (int)o->heads);
    }
    return n;
}

static void list_cases(const bench_options *o)
{
    smla_bench_case cases[SMLA_BENCH_MAX_CASES];
    printf("%-34s %-4s %-10s %6s %5s %7s %7s %6s\n", "case", "q", "kv", "reqs", "heads",
           "topk", "tokens", "prefix");
    for (int i = 0; i < o->num_presets; i++) {
        const int n = preset_cases(o, o->presets[i], cases);
        for (int c = 0; c < n; c++) {
            const smla_bench_case *k = &cases[c];
            const int rows = k->kind == SMLA_BENCH_RANDOM_ROWS;
            printf("%-34s %-4s %-10s %6d %5d %7d %7d %6d\n", k->name, smla_query_dtype_name(k->q_dtype),
                   smla_kv_format_name(k->kv_format), rows ? 0 : k->num_requests, k->heads,
                   k->topk, rows ? k->tokens : k->num_requests * k->query_len,
                   rows ? 0 : k->prefix_len);
        }
    }
    printf("runs of each case: cap");
    for (int i = 0; i < o->num_caps; i++) {
        char cap[16] = "default";
        if (o->caps[i] != SMLA_SEGMENT_CAP_DEFAULT)
            smla_bench_cap_text(o->caps[i], cap, sizeof cap);
        printf("%s%s", i ? "," : " ", cap);
    }
    printf(" x split");
    for (int i = 0; i < o->num_splits; i++)
        printf("%s%s", i ? "," : " ", smla_bench_split_name(o->splits[i]));
    printf("%s\n", o->staging ? "; each staging (gather to BF16 + BF16 prefill) vs direct" : "");
}

#ifdef SMLA_WITH_CUDA

#include <cuda_runtime.h>

typedef struct bench_run {
    smla_context *ctx;
    const smla_device_workload *device;
} bench_run;

static smla_status timed_call(void *user, int iteration, smla_tool_error *error)
{
    const bench_run *b = user;
    return smla_device_workload_run(b->ctx, b->device, iteration % b->device->num_copies,
                                    error);
}

/* Copies to rotate among: enough to span twice the L2 cache, as memory allows. */
static int rotation_copies(const smla_workload *w)
{
    int device = 0, l2 = 0;
    size_t free_bytes = 0, total = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess ||
        cudaMemGetInfo(&free_bytes, &total) != cudaSuccess || w->total_bytes == 0)
        return 1;
    size_t copies = (2 * (size_t)l2 + w->total_bytes - 1) / w->total_bytes;
    const size_t fit = free_bytes / 2 / w->total_bytes;
    copies = copies < fit ? copies : fit;
    copies = copies < SMLA_MAX_DEVICE_COPIES ? copies : SMLA_MAX_DEVICE_COPIES;
    return copies > 1 ? (int)copies : 1;
}

typedef struct case_result {
    double time_us;
    int copies;
    int32_t cap;      /* applied; -1 without a plan */
    int32_t segments;
    smla_split_mode split;
} case_result;

static void print_header(void)
{
    printf("%-34s %-4s %-10s %6s %5s %8s %5s %4s %5s %6s %10s %8s %7s\n", "case", "q", "kv",
           "tokens", "heads", "entries", "cap", "segs", "split", "copies", "time_us", "TFLOP/s",
           "GB/s");
}

static void print_row(const smla_bench_case *c, const smla_workload *w, const case_result *r)
{
    char cap[16], segments[16] = "-"; /* no plan */
    smla_bench_cap_text(r->cap, cap, sizeof cap);
    if (r->segments >= 0)
        snprintf(segments, sizeof segments, "%d", r->segments);
    printf("%-34s %-4s %-10s %6d %5d %8.1f %5s %4s %5s %6d %10.1f %8.1f %7.0f\n", c->name,
           smla_query_dtype_name(c->q_dtype), smla_kv_format_name(c->kv_format), w->num_tokens,
           c->heads, (double)w->active_entries / w->num_tokens, cap, segments,
           smla_bench_split_name(r->split), r->copies, r->time_us,
           w->flops / r->time_us * 1e-6, w->kv_bytes / r->time_us * 1e-3);
    fflush(stdout);
}

static cJSON *json_row(const smla_bench_case *c, const smla_workload *w, const case_result *r,
                       const char *failure)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "q", smla_query_dtype_name(c->q_dtype));
    cJSON_AddStringToObject(o, "kv", smla_kv_format_name(c->kv_format));
    cJSON_AddNumberToObject(o, "heads", c->heads);
    if (w) {
        cJSON_AddNumberToObject(o, "tokens", w->num_tokens);
        cJSON_AddNumberToObject(o, "entries_per_token",
                                (double)w->active_entries / w->num_tokens);
        cJSON_AddNumberToObject(o, "flops", w->flops);
        cJSON_AddNumberToObject(o, "kv_bytes", w->kv_bytes);
    }
    if (r)
        cJSON_AddStringToObject(o, "split", smla_bench_split_name(r->split));
    if (failure) {
        cJSON_AddStringToObject(o, "error", failure);
        return o;
    }
    cJSON_AddNumberToObject(o, "segment_cap", r->cap);
    cJSON_AddNumberToObject(o, "segments", r->segments);
    cJSON_AddNumberToObject(o, "copies", r->copies);
    cJSON_AddNumberToObject(o, "time_us", r->time_us);
    cJSON_AddNumberToObject(o, "tflops", w->flops / r->time_us * 1e-6);
    cJSON_AddNumberToObject(o, "kv_gbps", w->kv_bytes / r->time_us * 1e-3);
    return o;
}

static int report_failure(const smla_bench_case *c, const smla_workload *w, const case_result *r,
                          const char *message, cJSON *rows)
{
    printf("%-34s %-4s %-10s failed: %s\n", c->name, smla_query_dtype_name(c->q_dtype),
           smla_kv_format_name(c->kv_format), message);
    cJSON_AddItemToArray(rows, json_row(c, w, r, message));
    return 1;
}

/* Uploads the case with one cap and times it once per split mode; returns the number of
 * runs that failed. */
static int time_cap(smla_context *ctx, const bench_options *o, const smla_bench_case *c,
                    const smla_workload *w, int32_t cap, cJSON *rows)
{
    smla_tool_error error = {{0}};
    smla_device_workload device;
    case_result r;
    memset(&r, 0, sizeof r);
    r.copies = rotation_copies(w);
    if (smla_device_workload_make(ctx, w, r.copies, smla_bench_decode_threshold(c), cap,
                                  &device, &error) != SMLA_OK)
        return report_failure(c, w, NULL, error.message, rows) * o->num_splits;
    smla_plan_view view;
    r.cap = r.segments = -1;
    if (device.plan && smla_plan_get_view(device.plan, &view) == SMLA_OK) {
        r.cap = view.segment_cap;
        r.segments = view.num_segments;
    }
    int failed = 0;
    for (int i = 0; i < o->num_splits; i++) {
        r.split = o->splits[i];
        for (int k = 0; k < device.num_copies; k++)
            device.runs[k].split = r.split;
        bench_run run = {ctx, &device};
        if (smla_cuda_median_time(timed_call, &run, BENCH_WARMUP, o->iters, NULL, &r.time_us,
                                  &error) == SMLA_OK) {
            print_row(c, w, &r);
            cJSON_AddItemToArray(rows, json_row(c, w, &r, NULL));
        } else {
            failed += report_failure(c, w, &r, error.message, rows);
        }
    }
    smla_device_workload_free(&device);
    return failed;
}

/* Runs one case for every cap (one cap for a case without a plan) and split mode, timed
 * alone or, with --staging, against staging; returns the number of runs that failed. */
static int run_case(smla_context *ctx, const bench_options *o, const smla_bench_case *c,
                    cJSON *rows)
{
    smla_workload w;
    smla_tool_error error = {{0}};
    if (smla_bench_case_workload(c, BENCH_SEED, &w, &error) != SMLA_OK)
        return report_failure(c, NULL, NULL, error.message, rows);
    int failed = 0;
    const int caps = w.num_requests > 0 ? o->num_caps : 1;
    for (int i = 0; i < caps; i++) {
        if (!o->staging) {
            failed += time_cap(ctx, o, c, &w, o->caps[i], rows);
            continue;
        }
        for (int k = 0; k < o->num_splits; k++) {
            const smla_staging_run run = {o->caps[i], o->splits[k], BENCH_WARMUP, o->iters};
            failed += smla_bench_staging_case(ctx, c, &w, &run, rows);
        }
    }
    smla_workload_free(&w);
    return failed;
}

static int write_json(const char *path, cJSON *root)
{
    char *text = cJSON_Print(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(text);
    if (!ok)
        fprintf(stderr, "smla bench: cannot write %s\n", path);
    return ok;
}

static int run_bench(smla_context *ctx, const bench_options *o)
{
    char device[256];
    smla_device_name(device, sizeof device);
    printf("smla bench: %s; %d warm-up runs, median of %d; seed %d\n", device, BENCH_WARMUP,
           o->iters, BENCH_SEED);
    if (o->staging)
        smla_bench_staging_header();
    else
        print_header();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "device", device);
    cJSON_AddNumberToObject(root, "warmup", BENCH_WARMUP);
    cJSON_AddNumberToObject(root, "iters", o->iters);
    cJSON *rows = cJSON_AddArrayToObject(root, "cases");
    smla_bench_case cases[SMLA_BENCH_MAX_CASES];
    int failed = 0;
    for (int i = 0; i < o->num_presets; i++) {
        const int n = preset_cases(o, o->presets[i], cases);
        for (int c = 0; c < n; c++)
            failed += run_case(ctx, o, &cases[c], rows);
    }
    const int written = !o->json || write_json(o->json, root);
    cJSON_Delete(root);
    if (failed)
        printf("smla bench: %d run%s failed\n", failed, failed > 1 ? "s" : "");
    return failed || !written ? 1 : 0;
}

#endif

int smla_cmd_bench(int argc, char **argv)
{
    bench_options o;
    const int code = parse_options(argc, argv, &o);
    if (code >= 0)
        return code;
    if (o.list) {
        list_cases(&o);
        return 0;
    }
    smla_context *ctx = NULL;
    if (smla_context_create(&ctx) != SMLA_OK) {
        fprintf(stderr, "smla bench: cannot create a context\n");
        return 2;
    }
    int rc = 2;
    if (!smla_context_has_cuda(ctx))
        fprintf(stderr, "smla bench: needs a GPU: %s (smla bench --list prints the cases)\n",
#ifdef SMLA_WITH_CUDA
                "no usable GPU is present"
#else
                "this smla was built without CUDA"
#endif
        );
#ifdef SMLA_WITH_CUDA
    else
        rc = run_bench(ctx, &o);
#endif
    smla_context_destroy(ctx);
    return rc;
}
