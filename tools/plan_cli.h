/* smla plan's command line, parsed into the batch it describes (cmd_plan.c); also the
 * entry point of the command-line fuzzer (fuzz/fuzz_plan_cli.c). */
#ifndef SMLA_TOOLS_PLAN_CLI_H
#define SMLA_TOOLS_PLAN_CLI_H

#include "smla.h"

typedef struct smla_plan_cli {
    int help;                     /* --help was given: nothing below is set */
    smla_batch batch;             /* host query starts and seq_lens (prefix + query) */
    smla_plan_capacity capacity;  /* enough for the batch */
    int32_t *query_start_loc;     /* owned, [num_requests + 1] */
    int32_t *seq_lens;            /* owned, [num_requests] */
} smla_plan_cli;

/* argv[0] is the command's name. Returns 0, or the exit code 2 after a message on stderr
 * for a bad argument. smla_plan_cli_free is safe after either. */
int smla_plan_cli_parse(int argc, char **argv, smla_plan_cli *cli);
void smla_plan_cli_free(smla_plan_cli *cli);

#endif
