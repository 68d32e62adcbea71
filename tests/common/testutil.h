/* Small helpers for the C tests: checks that report file:line, a seeded RNG whose seed
 * is fresh each run (printed, and fixed by SMLA_TEST_SEED to reproduce a failure). */
#ifndef SMLA_TESTUTIL_H
#define SMLA_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rng.h"
#include "smla.h"

extern int smla_test_failures;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            smla_test_failures++;                                                   \
        }                                                                           \
    } while (0)

#define CHECK_STATUS(expr, expected)                                                  \
    do {                                                                              \
        smla_status st_ = (expr);                                                     \
        if (st_ != (expected)) {                                                      \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__, \
                    __LINE__, #expr, (int)st_, smla_status_string(st_), (int)(expected), \
                    smla_status_string(expected));                                    \
            smla_test_failures++;                                                     \
        }                                                                             \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                          \
    do {                                                                               \
        double a_ = (a), b_ = (b);                                                     \
        if (!(fabs(a_ - b_) <= (tol))) {                                               \
            fprintf(stderr, "%s:%d: |%s - %s| = |%.9g - %.9g| > %g\n", __FILE__, __LINE__, \
                    #a, #b, a_, b_, (double)(tol));                                    \
            smla_test_failures++;                                                      \
        }                                                                              \
    } while (0)

/* malloc / calloc of exactly `bytes` (1 for 0, so that ASan still sees overreads of
 * sized buffers); out of memory ends the test with a message instead of a crash. */
void *smla_test_alloc(size_t bytes);
void *smla_test_zalloc(size_t bytes);

/* Ends a test: prints the verdict, returns the process exit code. */
int smla_test_finish(const char *name);

/* The tools' RNG (tools/rng.h) under the tests' names. */
typedef smla_tool_rng smla_rng;

/* Seeds from SMLA_TEST_SEED if set, else from the clock; prints the seed. */
uint64_t smla_test_seed(const char *name);
static inline void smla_rng_seed(smla_rng *rng, uint64_t seed) { smla_tool_rng_seed(rng, seed); }
static inline uint64_t smla_rng_next(smla_rng *rng) { return smla_tool_rng_next(rng); }
static inline double smla_rng_uniform(smla_rng *rng) { return smla_tool_rng_uniform(rng); } /* [0, 1) */
static inline double smla_rng_normal(smla_rng *rng) { return smla_tool_rng_normal(rng); }   /* N(0, 1) */
static inline int64_t smla_rng_range(smla_rng *rng, int64_t lo, int64_t hi) /* [lo, hi] */
{
    return smla_tool_rng_range(rng, lo, hi);
}

#endif
