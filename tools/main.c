/* smla: the command-line tool. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "smla.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"demo", smla_cmd_demo, "run a DeepSeek-V4.1-Flash-shaped batch and check it"},
    {"plan", smla_cmd_plan, "print the batch plan of a batch as JSON"},
    {"attend", smla_cmd_attend, "run one problem from a safetensors file"},
    {"check", smla_cmd_check, "random problems on the GPU against the CPU reference"},
    {"bench", smla_cmd_bench, "benchmark presets"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: smla <command> [options]   (smla <command> --help)\n"
               "       smla --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("smla %s\n", smla_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "smla: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
