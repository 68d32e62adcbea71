/* Timing for smla demo and smla bench: the host wall clock, medians, and CUDA-event
 * timing of a call on a stream (built with CUDA only). */
#ifndef SMLA_TOOLS_BENCH_TIMER_H
#define SMLA_TOOLS_BENCH_TIMER_H

#include "smla.h"
#include "tool_error.h"

double smla_wall_seconds(void);                 /* monotonic clock */
double smla_median(double *values, int count);  /* sorts values; count >= 1 */

#ifdef SMLA_WITH_CUDA
/* One timed call; iteration counts from 0 over the warm-up and the timed runs (callers
 * rotate among copies of their inputs with it). */
typedef smla_status (*smla_timed_call)(void *user, int iteration, smla_tool_error *error);

/* Runs call warmup times, then iters (>= 1) times, each between two CUDA events recorded
 * on stream (a cudaStream_t); *median_us is the median of the iters event times. */
smla_status smla_cuda_median_time(smla_timed_call call, void *user, int warmup, int iters,
                                  void *stream, double *median_us, smla_tool_error *error);
#endif

#endif
