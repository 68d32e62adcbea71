#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <math.h>
#include <time.h>

int smla_test_failures = 0;

static void *checked(void *p, size_t bytes)
{
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

void *smla_test_alloc(size_t bytes) { return checked(malloc(bytes ? bytes : 1), bytes); }
void *smla_test_zalloc(size_t bytes) { return checked(calloc(bytes ? bytes : 1, 1), bytes); }

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
