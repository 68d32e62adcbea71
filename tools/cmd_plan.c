/* smla plan (scaffolding: replaced by the real command). */
#include <stdio.h>

#include "commands.h"

int smla_cmd_plan(int argc, char **argv)
{
    fprintf(stderr, "smla plan: not implemented yet\n");
    return 2;
}
