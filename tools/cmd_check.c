/* smla check (scaffolding: replaced by the real command). */
#include <stdio.h>

#include "commands.h"

int smla_cmd_check(int argc, char **argv)
{
    fprintf(stderr, "smla check: not implemented yet\n");
    return 2;
}
