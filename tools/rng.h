/* The tools' random numbers (workloads of smla demo and smla bench): xoshiro256**
 * seeded through splitmix64, so a seed always gives the same workload. */
#ifndef SMLA_TOOLS_RNG_H
#define SMLA_TOOLS_RNG_H

#include <stdint.h>

typedef struct smla_tool_rng {
    uint64_t s[4];
    double spare; /* the second normal of the last pair drawn, when has_spare */
    int has_spare;
} smla_tool_rng;

void smla_tool_rng_seed(smla_tool_rng *rng, uint64_t seed);
uint64_t smla_tool_rng_next(smla_tool_rng *rng);
/* Uniform in [0, n) for 0 < n <= 2^32 (multiply-shift: bias below 2^-32). */
uint32_t smla_tool_rng_below(smla_tool_rng *rng, uint64_t n);
double smla_tool_rng_uniform(smla_tool_rng *rng); /* [0, 1) */
double smla_tool_rng_normal(smla_tool_rng *rng);  /* N(0, 1), Marsaglia's polar method */
/* Uniform in [lo, hi] (any int64 range). */
int64_t smla_tool_rng_range(smla_tool_rng *rng, int64_t lo, int64_t hi);

#endif
