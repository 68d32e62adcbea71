/* smla bench (scaffolding: replaced by the real command). */
#include <stdio.h>

#include "commands.h"

int smla_cmd_bench(int argc, char **argv)
{
    fprintf(stderr, "smla bench: not implemented yet\n");
    return 2;
}
