/* smla attend (scaffolding: replaced by the real command). */
#include <stdio.h>

#include "commands.h"

int smla_cmd_attend(int argc, char **argv)
{
    fprintf(stderr, "smla attend: not implemented yet\n");
    return 2;
}
