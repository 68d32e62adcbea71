/* The tools' random numbers (rng.h). */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void smla_tool_rng_seed(smla_tool_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&seed);
    rng->spare = 0.0;
    rng->has_spare = 0;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t smla_tool_rng_next(smla_tool_rng *rng)
{
    uint64_t *s = rng->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint32_t smla_tool_rng_below(smla_tool_rng *rng, uint64_t n)
{
    return (uint32_t)(((smla_tool_rng_next(rng) >> 32) * n) >> 32);
}

double smla_tool_rng_uniform(smla_tool_rng *rng)
{
    return (double)(smla_tool_rng_next(rng) >> 11) * 0x1.0p-53;
}

/* Two normals a pair of accepted uniforms and no trigonometry (the Box-Muller form, one
 * normal for a log, a sqrt and a cos, was half of `smla check`'s host time). */
double smla_tool_rng_normal(smla_tool_rng *rng)
{
    if (rng->has_spare) {
        rng->has_spare = 0;
        return rng->spare;
    }
    double u, v, r2;
    do {
        u = 2.0 * smla_tool_rng_uniform(rng) - 1.0;
        v = 2.0 * smla_tool_rng_uniform(rng) - 1.0;
        r2 = u * u + v * v;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = sqrt(-2.0 * log(r2) / r2);
    rng->spare = v * f;
    rng->has_spare = 1;
    return u * f;
}

int64_t smla_tool_rng_range(smla_tool_rng *rng, int64_t lo, int64_t hi)
{
    const uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    return (int64_t)((uint64_t)lo + (span ? smla_tool_rng_next(rng) % span : smla_tool_rng_next(rng)));
}
