/* smla check's command line (check_options.h). */
#include "check_options.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli_number.h"
#include "query_dtype.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: smla check [--cases N] [--seed S] [--token-heads N] [--heads N] [--q fp8|bf16]\n"
               "                  [--verbose]\n"
               "Random problems on the GPU against the CPU reference: heads 8..128, FP8 and BF16\n"
               "queries, fp8/bf16/mixed caches, with and without positions and plans, ragged sizes,\n"
               "invalid indices, empty rows, +-inf sinks, KV rows whose 64-value tiles differ in\n"
               "magnitude, flat and peaked logits (alternating: 2 or more cases give every\n"
               "configuration both); then bit-exactness checks. Each error is\n"
               "held to DESIGN section 8's limits; an FP8-query problem's quantisation floor (the\n"
               "reference over the decoded inputs against the one over the unquantised values) is\n"
               "printed beside it, and on peaked logits the error of out must not exceed it. Exit 0\n"
               "when everything passes, 1 on a failure, 2 on bad arguments or without a GPU.\n"
               "  --cases N        problems per configuration, 1 to %d (default 1)\n"
               "  --seed S         RNG seed, 0 to 2^64 - 1 (default: from the clock, printed)\n"
               "  --token-heads N  tokens x heads of the largest problem, 8 to %d (default 3072)\n"
               "  --heads N        only this head count: 8, 16, 32, 64 or 128 (default: all)\n"
               "  --q T            only this query type, fp8 or bf16 (default: both)\n",
            SMLA_CHECK_MAX_CASES, SMLA_CHECK_MAX_TOKEN_HEADS);
}

/* The value of an integer option; 0 after a message when it is not one in [min, max]. */
static int parse_value(const char *option, const char *text, uint64_t min, uint64_t max,
                       uint64_t *value)
{
    if (smla_cli_parse_uint(text, strlen(text), min, max, value))
        return 1;
    fprintf(stderr, "smla check: %s '%s' is not an integer in [%llu, %llu]\n", option, text,
            (unsigned long long)min, (unsigned long long)max);
    return 0;
}

static int is_head_count(uint64_t h)
{
    return h == 8 || h == 16 || h == 32 || h == 64 || h == 128;
}

int smla_check_options_parse(int argc, char **argv, check_options *o)
{
    *o = (check_options){(uint64_t)time(NULL) ^ ((uint64_t)clock() << 32), 1, 3072, 0, 0, SMLA_DTYPE_INVALID};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        uint64_t v = 0;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(arg, "--verbose")) {
            o->verbose = 1;
            continue;
        }
        const int known = !strcmp(arg, "--cases") || !strcmp(arg, "--seed") ||
                          !strcmp(arg, "--token-heads") || !strcmp(arg, "--heads") ||
                          !strcmp(arg, "--q");
        if (!known || i + 1 == argc) {
            fprintf(stderr, "smla check: %s '%s'\n", known ? "missing value after" : "unknown argument",
                    arg);
            usage(stderr);
            return 2;
        }
        const char *value = argv[++i];
        if (!strcmp(arg, "--cases")) {
            if (!parse_value(arg, value, 1, SMLA_CHECK_MAX_CASES, &v))
                return 2;
            o->cases = (int)v;
        } else if (!strcmp(arg, "--seed")) {
            if (!parse_value(arg, value, 0, UINT64_MAX, &o->seed))
                return 2;
        } else if (!strcmp(arg, "--token-heads")) {
            if (!parse_value(arg, value, 8, SMLA_CHECK_MAX_TOKEN_HEADS, &v))
                return 2;
            o->token_heads = (int)v;
        } else if (!strcmp(arg, "--q")) {
            o->q_dtype = smla_query_dtype_parse(value);
            if (o->q_dtype == SMLA_DTYPE_INVALID) {
                fprintf(stderr, "smla check: --q must be fp8 or bf16, not '%s'\n", value);
                return 2;
            }
        } else {
            if (!smla_cli_parse_uint(value, strlen(value), 8, 128, &v) || !is_head_count(v)) {
                fprintf(stderr, "smla check: --heads must be 8, 16, 32, 64 or 128, not '%s'\n",
                        value);
                return 2;
            }
            o->heads = (int)v;
        }
    }
    return -1;
}
