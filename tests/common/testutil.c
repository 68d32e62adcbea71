#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <math.h>
#include <time.h>

int smla_test_failures = 0;

int smla_test_finish(const char *name)
{
    if (smla_test_failures) {
        fprintf(stderr, "%s: %d check(s) FAILED\n", name, smla_test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

uint64_t smla_test_seed(const char *name)
{
    const char *env = getenv("SMLA_TEST_SEED");
    uint64_t seed;
    if (env && *env) {
        seed = strtoull(env, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
    }
    printf("%s: seed %llu (set SMLA_TEST_SEED to repeat)\n", name, (unsigned long long)seed);
    return seed;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void smla_rng_seed(smla_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t smla_rng_next(smla_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double smla_rng_uniform(smla_rng *rng)
{
    return (double)(smla_rng_next(rng) >> 11) * 0x1.0p-53;
}

double smla_rng_normal(smla_rng *rng)
{
    double u1 = smla_rng_uniform(rng), u2 = smla_rng_uniform(rng);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int64_t smla_rng_range(smla_rng *rng, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(span ? smla_rng_next(rng) % span : smla_rng_next(rng));
}
