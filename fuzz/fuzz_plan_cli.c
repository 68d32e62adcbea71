/* Fuzzes `smla plan`'s command line: the input is its arguments, separated by NUL bytes.
 * Every outcome must be a parsed batch or exit code 2; a parsed batch must be consistent
 * (starts from 0, non-decreasing, seq_lens >= query lengths) and its plan, built within
 * the capacity the command sizes, must match the planner's model. Small batches also run
 * the whole command (its printing included). */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "input.h"
#include "plan_cli.h"
#include "plan_oracle.h"

#define MAX_ARGS 16
#define MAX_PLANNED (1 << 16) /* larger batches only cost time and memory */

static smla_context *ctx;

static void check_batch(const smla_plan_cli *cli)
{
    const smla_batch *b = &cli->batch;
    if (b->num_requests < 0 || b->query_start_loc[0] != 0)
        fuzz_fail("parsed batch: %d requests, first start %d", b->num_requests,
                  b->query_start_loc[0]);
    for (int32_t r = 0; r < b->num_requests; r++) {
        const int32_t q = b->query_start_loc[r + 1] - b->query_start_loc[r];
        if (q < 0 || b->seq_lens[r] < q)
            fuzz_fail("parsed batch: request %d has query length %d and seq_len %d", r, q,
                      b->seq_lens[r]);
    }
    if (cli->capacity.max_tokens < b->query_start_loc[b->num_requests] ||
        cli->capacity.max_requests < b->num_requests || cli->capacity.max_segments < 1)
        fuzz_fail("parsed batch: capacity (%d, %d, %d) too small", cli->capacity.max_tokens,
                  cli->capacity.max_requests, cli->capacity.max_segments);
}

static void plan_batch(const smla_plan_cli *cli)
{
    smla_plan *plan = NULL;
    if (smla_plan_create(ctx, &cli->capacity, SMLA_MEMORY_HOST, &plan) != SMLA_OK)
        fuzz_fail("smla_plan_create refused the command's capacity: %s",
                  smla_context_last_error(ctx));
    plan_snapshot before;
    plan_snapshot_take(plan, &before);
    const smla_status st = smla_plan_build(plan, &cli->batch, NULL);
    plan_oracle_check(ctx, &cli->capacity, &cli->batch, st, plan, &before);
    plan_snapshot_free(&before);
    smla_plan_destroy(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx && smla_context_create(&ctx) != SMLA_OK)
        abort();
    char *text = malloc(size + 1); /* NUL-terminated copy: the last argument ends too */
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGS + 1] = {"plan"};
    int argc = 1;
    for (char *p = text; p <= text + size && argc < MAX_ARGS; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;
    smla_plan_cli cli;
    const int rc = smla_plan_cli_parse(argc, argv, &cli);
    if (rc != 0 && rc != 2)
        fuzz_fail("smla_plan_cli_parse returned %d", rc);
    if (rc == 0 && !cli.help) {
        check_batch(&cli);
        if (cli.capacity.max_requests <= MAX_PLANNED && cli.capacity.max_segments <= MAX_PLANNED) {
            plan_batch(&cli);
            const int cmd_rc = smla_cmd_plan(argc, argv);
            if (cmd_rc != 0 && cmd_rc != 2)
                fuzz_fail("smla plan exited %d", cmd_rc);
        }
    }
    smla_plan_cli_free(&cli);
    free(text);
    return 0;
}
