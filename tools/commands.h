/* The smla CLI's subcommands. Each returns the process exit code: 0 success, 1 a failed
 * check, 2 bad arguments or input. */
#ifndef SMLA_TOOLS_COMMANDS_H
#define SMLA_TOOLS_COMMANDS_H

int smla_cmd_demo(int argc, char **argv);
int smla_cmd_plan(int argc, char **argv);
int smla_cmd_attend(int argc, char **argv);
int smla_cmd_check(int argc, char **argv);
int smla_cmd_bench(int argc, char **argv);

#endif
