/* smla check's command line (cmd_check.c), parsed the same way whether or not the CUDA
 * backend is built, so that bad options are reported as such everywhere. */
#ifndef SMLA_TOOLS_CHECK_OPTIONS_H
#define SMLA_TOOLS_CHECK_OPTIONS_H

#include <stdint.h>

#include "smla.h"

#define SMLA_CHECK_MAX_CASES 1000000        /* problems per configuration */
#define SMLA_CHECK_MAX_TOKEN_HEADS 1048576  /* tokens x heads of the largest problem */

typedef struct check_options {
    uint64_t seed;
    int cases;
    int token_heads; /* tokens x heads budget of one problem (the CPU reference's cost) */
    int verbose;
    int heads; /* only this head count (0: every one) */
    smla_dtype q_dtype; /* only this query type (SMLA_DTYPE_INVALID: both) */
} check_options;

/* argv[0] is the command's name. Returns -1 when the command should run with *o, else
 * its exit code: 0 after --help, 2 after a message on stderr for a bad argument. */
int smla_check_options_parse(int argc, char **argv, check_options *o);

#endif
