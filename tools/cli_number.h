/* The CLI's integer options, parsed one way by every command: decimal digits only (no
 * sign, space, base prefix or trailing character), range-checked without overflow, so
 * that no value wraps (`smla check --cases 3000000000` is refused, not read as a
 * negative int). */
#ifndef SMLA_TOOLS_CLI_NUMBER_H
#define SMLA_TOOLS_CLI_NUMBER_H

#include <stddef.h>
#include <stdint.h>

/* Parses the len bytes at text as an integer in [min, max]. Returns 1 and sets *value,
 * or 0 (value untouched) for anything else. */
int smla_cli_parse_uint(const char *text, size_t len, uint64_t min, uint64_t max,
                        uint64_t *value);

#endif
