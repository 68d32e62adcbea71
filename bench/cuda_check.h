/* CUDA_CHECK for the CUDA benchmarks: a failed CUDA runtime call prints where and why and
 * ends the benchmark (its numbers could not be trusted). */
#ifndef SMLA_BENCH_CUDA_CHECK_H
#define SMLA_BENCH_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CUDA_CHECK(expr)                                                                                 \
    do {                                                                                                 \
        cudaError_t err_ = (expr);                                                                       \
        if (err_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(err_));     \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

#endif
