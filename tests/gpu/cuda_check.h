/* CUDA_CHECK for the GPU tests: a failed CUDA runtime call prints where and why, then
 * FAIL, and ends the test (nothing after it could be trusted). */
#ifndef SMLA_TESTS_GPU_CUDA_CHECK_H
#define SMLA_TESTS_GPU_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CUDA_CHECK(expr)                                                                \
    do {                                                                                \
        cudaError_t err_ = (expr);                                                      \
        if (err_ != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d: %s: %s\nFAIL\n", __FILE__, __LINE__, #expr,         \
                    cudaGetErrorString(err_));                                          \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#endif
