/* A small seeded RNG for the tools (problem generators): xoshiro256**. */
#ifndef SMLA_TOOLS_RNG_H
#define SMLA_TOOLS_RNG_H

#include <stdint.h>

typedef struct smla_tool_rng {
    uint64_t s[4];
} smla_tool_rng;

void smla_tool_rng_seed(smla_tool_rng *rng, uint64_t seed);
uint64_t smla_tool_rng_next(smla_tool_rng *rng);
double smla_tool_rng_uniform(smla_tool_rng *rng);                    /* [0, 1) */
double smla_tool_rng_normal(smla_tool_rng *rng);                     /* N(0, 1) */
int64_t smla_tool_rng_range(smla_tool_rng *rng, int64_t lo, int64_t hi); /* [lo, hi] */

#endif
