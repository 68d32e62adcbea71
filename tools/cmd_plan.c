/* smla plan: build a host plan for a batch given on the command line and print it as one
 * JSON object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_number.h"
#include "commands.h"
#include "plan_cli.h"
#include "query_dtype.h"

typedef struct plan_args {
    const char *queries;   /* required comma list */
    const char *prefixes;  /* comma list, default all 0 */
    int32_t cap;           /* SMLA_SEGMENT_CAP_DEFAULT unless --cap */
    smla_dtype dtype;
    int32_t threshold;     /* 1 + speculative tokens */
} plan_args;

typedef struct int_list {
    int32_t *values;
    int32_t count;
} int_list;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: smla plan --queries Q0,Q1,... [--prefixes P0,P1,...] [--cap N]\n"
            "                 [--dtype fp8|bf16] [--spec-tokens K]\n"
            "Prints the batch plan as one JSON object. Request r has query length Qr and\n"
            "KV length Pr + Qr (prefixes default to 0). Decodes (Qr <= 1 + K) come first.\n"
            "--cap: prefill segment cap (default 1024 for fp8, off for bf16; 0 = off).\n"
            "--queries '' is an empty batch.\n");
}

/* A non-negative decimal int32: digits only, no sign, no spaces, no overflow. */
static int parse_count(const char *text, size_t len, int32_t *value)
{
    uint64_t v;
    if (!smla_cli_parse_uint(text, len, 0, INT32_MAX, &v))
        return 0;
    *value = (int32_t)v;
    return 1;
}

static int parse_list(const char *option, const char *text, int_list *list)
{
    list->count = 0;
    list->values = NULL;
    if (*text == '\0')
        return 1;
    size_t items = 1;
    for (const char *p = text; *p; p++)
        items += *p == ',';
    if (items > INT32_MAX) {
        fprintf(stderr, "smla plan: %s has too many entries\n", option);
        return 0;
    }
    list->values = malloc(items * sizeof *list->values);
    if (!list->values) {
        fprintf(stderr, "smla plan: out of memory\n");
        return 0;
    }
    const char *p = text;
    for (size_t i = 0; i < items; i++) {
        size_t len = strcspn(p, ",");
        if (!parse_count(p, len, &list->values[i])) {
            fprintf(stderr, "smla plan: %s entry %zu ('%.*s') is not an integer in "
                    "[0, 2147483647]\n", option, i, (int)len, p);
            return 0;
        }
        p += len + 1;
    }
    list->count = (int32_t)items;
    return 1;
}

static int parse_number(const char *option, const char *text, int32_t *value)
{
    if (parse_count(text, strlen(text), value))
        return 1;
    fprintf(stderr, "smla plan: %s '%s' is not an integer in [0, 2147483647]\n", option, text);
    return 0;
}

/* Returns 0 or the exit code of a bad argument; *help is set for --help. */
static int parse_args(int argc, char **argv, plan_args *a, int *help)
{
    a->queries = NULL;
    a->prefixes = "";
    a->cap = SMLA_SEGMENT_CAP_DEFAULT;
    a->dtype = SMLA_DTYPE_FP8_E4M3;
    a->threshold = 1;
    *help = 0;
    int has_prefixes = 0;
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            *help = 1;
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "smla plan: unknown option or missing value: '%s'\n", opt);
            return 2;
        }
        const char *val = argv[++i];
        int32_t k;
        if (!strcmp(opt, "--queries")) {
            a->queries = val;
        } else if (!strcmp(opt, "--prefixes")) {
            a->prefixes = val;
            has_prefixes = 1;
        } else if (!strcmp(opt, "--cap")) {
            if (!parse_number(opt, val, &a->cap))
                return 2;
        } else if (!strcmp(opt, "--dtype")) {
            a->dtype = smla_query_dtype_parse(val);
            if (a->dtype == SMLA_DTYPE_INVALID) {
                fprintf(stderr, "smla plan: --dtype must be fp8 or bf16, got '%s'\n", val);
                return 2;
            }
        } else if (!strcmp(opt, "--spec-tokens")) {
            if (!parse_number(opt, val, &k))
                return 2;
            if (k == INT32_MAX) {
                fprintf(stderr, "smla plan: --spec-tokens %d is too large\n", k);
                return 2;
            }
            a->threshold = 1 + k;
        } else {
            fprintf(stderr, "smla plan: unknown option '%s'\n", opt);
            return 2;
        }
    }
    if (!a->queries) {
        fprintf(stderr, "smla plan: --queries is required\n");
        return 2;
    }
    if (!has_prefixes)
        a->prefixes = NULL;
    return 0;
}

/* query_start_loc and seq_lens (prefix + query) of the batch, checked for int32 range. */
static int make_batch(const int_list *queries, const int_list *prefixes, int32_t *qsl,
                      int32_t *seq_lens)
{
    int64_t total = 0;
    qsl[0] = 0;
    for (int32_t r = 0; r < queries->count; r++) {
        int64_t q = queries->values[r];
        int64_t s = q + (prefixes->values ? prefixes->values[r] : 0);
        total += q;
        if (total > INT32_MAX || s > INT32_MAX) {
            fprintf(stderr, "smla plan: request %d: %s exceeds 2147483647\n", r,
                    total > INT32_MAX ? "the total query length" : "prefix + query length");
            return 0;
        }
        qsl[r + 1] = (int32_t)total;
        seq_lens[r] = (int32_t)s;
    }
    return 1;
}

/* Each request has at most ceil(Q / cap) <= Q / cap + 1 segments (1 without a cap):
 * enough capacity without sizing for a cap of 1 as the derived default does. */
static int32_t segments_bound(const plan_args *a, int32_t num_requests, int32_t tokens)
{
    int64_t cap = a->cap;
    if (cap == SMLA_SEGMENT_CAP_DEFAULT)
        cap = a->dtype == SMLA_DTYPE_FP8_E4M3 ? SMLA_DEFAULT_FP8_SEGMENT_CAP : 0;
    int64_t bound = num_requests + (cap > 0 ? tokens / cap : 0);
    return bound < 1 ? 1 : bound > INT32_MAX ? INT32_MAX : (int32_t)bound;
}

/* The batch of the parsed lists, and a capacity just large enough for it. */
static int make_cli_batch(const plan_args *a, const int_list *queries, const int_list *prefixes,
                          smla_plan_cli *cli)
{
    int32_t r = queries->count;
    cli->query_start_loc = malloc(((size_t)r + 1) * sizeof *cli->query_start_loc);
    cli->seq_lens = malloc(((size_t)r + 1) * sizeof *cli->seq_lens);
    if (!cli->query_start_loc || !cli->seq_lens) {
        fprintf(stderr, "smla plan: out of memory\n");
        return 0;
    }
    if (!make_batch(queries, prefixes, cli->query_start_loc, cli->seq_lens))
        return 0;
    const int32_t tokens = cli->query_start_loc[r];
    cli->capacity = (smla_plan_capacity){.max_tokens = tokens > 0 ? tokens : 1,
                                         .max_requests = r > 0 ? r : 1,
                                         .max_segments = segments_bound(a, r, tokens)};
    cli->batch = (smla_batch){.num_requests = r,
                              .query_start_loc = cli->query_start_loc,
                              .seq_lens = cli->seq_lens,
                              .decode_threshold = a->threshold,
                              .query_dtype = a->dtype,
                              .segment_cap = a->cap};
    return 1;
}

int smla_plan_cli_parse(int argc, char **argv, smla_plan_cli *cli)
{
    memset(cli, 0, sizeof *cli);
    plan_args a;
    int rc = parse_args(argc, argv, &a, &cli->help);
    if (cli->help)
        return 0;
    if (rc) {
        usage(stderr);
        return rc;
    }
    int_list queries = {0}, prefixes = {0};
    rc = 2;
    if (!parse_list("--queries", a.queries, &queries) ||
        (a.prefixes && !parse_list("--prefixes", a.prefixes, &prefixes)))
        goto done;
    if (a.prefixes && prefixes.count != queries.count) {
        fprintf(stderr, "smla plan: --queries has %d entries but --prefixes has %d\n",
                queries.count, prefixes.count);
        goto done;
    }
    if (make_cli_batch(&a, &queries, &prefixes, cli))
        rc = 0;
done:
    free(queries.values);
    free(prefixes.values);
    return rc;
}

void smla_plan_cli_free(smla_plan_cli *cli)
{
    free(cli->query_start_loc);
    free(cli->seq_lens);
    memset(cli, 0, sizeof *cli);
}

static void print_plan(const smla_plan_view *v)
{
    printf("{\"num_decodes\":%d,\"num_decode_tokens\":%d,\"num_prefill_tokens\":%d,"
           "\"max_segment_len\":%d,\"segments\":[",
           v->num_decodes, v->num_decode_tokens, v->num_prefill_tokens, v->max_segment_len);
    for (int32_t i = 0; i < v->num_segments; i++) {
        int32_t start = v->segment_query_starts[i];
        printf("%s{\"req\":%d,\"q_start\":%d,\"q_len\":%d,\"seq_len\":%d}", i ? "," : "",
               v->segment_requests[i], start, v->segment_query_starts[i + 1] - start,
               v->segment_seq_lens[i]);
    }
    printf("]}\n");
}

static int plan_and_print(const smla_plan_cli *cli)
{
    smla_context *ctx = NULL;
    smla_plan *plan = NULL;
    if (smla_context_create(&ctx) != SMLA_OK) {
        fprintf(stderr, "smla plan: cannot create a context\n");
        return 2;
    }
    smla_plan_view view;
    smla_status st = smla_plan_create(ctx, &cli->capacity, SMLA_MEMORY_HOST, &plan);
    if (st == SMLA_OK)
        st = smla_plan_build(plan, &cli->batch, NULL);
    if (st == SMLA_OK)
        st = smla_plan_get_view(plan, &view);
    if (st == SMLA_OK)
        print_plan(&view);
    else
        fprintf(stderr, "smla plan: %s: %s\n", smla_status_string(st),
                smla_context_last_error(ctx));
    smla_plan_destroy(plan);
    smla_context_destroy(ctx);
    return st == SMLA_OK ? 0 : 2;
}

int smla_cmd_plan(int argc, char **argv)
{
    smla_plan_cli cli;
    int rc = smla_plan_cli_parse(argc, argv, &cli);
    if (cli.help)
        usage(stdout);
    else if (rc == 0)
        rc = plan_and_print(&cli);
    smla_plan_cli_free(&cli);
    return rc;
}
