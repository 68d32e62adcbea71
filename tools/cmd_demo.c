/* smla demo (scaffolding: replaced by the real command). */
#include <stdio.h>

#include "commands.h"

int smla_cmd_demo(int argc, char **argv)
{
    fprintf(stderr, "smla demo: not implemented yet\n");
    return 2;
}
