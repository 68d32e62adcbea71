// bench_gather: how fast this GPU gathers KV rows chosen at random, the operation every
// smla kernel starts with, and how that depends on the way it is done. Prints one line
// per (pool, row size, method) with the achieved TB/s; `scripts/gpu-check.sh` runs it.
//
// Methods:
//   ldg          loads into registers (16 bytes per lane, a warp per row), many warps per
//                SM: the ceiling the DESIGN quotes (9-10 TB/s from L2, 4.4 from HBM)
//   cpasync T K  one CTA per SM, T threads issue 16-byte cp.async copies of 32-row batches
//                into a ring of stages holding K KB; a stage is reissued once its previous
//                copy landed, so K KB stay in flight
//   lines T K    the cpasync ring, but thread t copies 16-byte chunks t % 8 + 8 j of rows
//                t / 8, + T / 8, ...: a row's copies differ by constants, one LDGSTS each
//                with immediate offsets (cpasync spends ~8 instructions a copy on its
//                index arithmetic; the kernels' copy loops are written this way)
//   bulk K       the same ring, each row one cp.async.bulk copy (the copy engine) issued
//                by one thread and counted on the stage's mbarrier
// In the ring methods the row ids of a batch are loaded two batches ahead (held in a
// register for one batch, then stored): no copy waits on an index load.
// Usage: bench_gather [--iters N]  (default 10; median of N after 2 warm-ups)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "../src/cuda/common/sm90.cuh"
#include "cuda_check.h"

namespace {

using namespace smla;

// Every warp takes rows w, w + warps, ...; lane c loads 16-byte chunks c, c + 32, ...
__global__ void gather_ldg(const uint8_t *pool, const int32_t *rows, int64_t n, int row_bytes, uint32_t *sink)
{
    const int lane = threadIdx.x % 32;
    const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
    uint32_t acc = 0;
    for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < n; i += warps) {
        const uint4 *src = reinterpret_cast<const uint4 *>(pool + int64_t(rows[i]) * row_bytes);
        for (int c = lane; c < row_bytes / 16; c += 32) {
            const uint4 v = __ldcg(src + c);
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    }
    if (acc == 0x12345678u)
        *sink = acc; // keeps the loads
}

constexpr int kBatchRows = 32;
constexpr int kRingOff = 1024; // mbarriers and the two id buffers before the ring

enum class Copy { kChunks, kLines, kBulk };

// One CTA per SM: batches b = blockIdx.x, + gridDim.x, ... of 32 rows into a ring of
// kStages stages. Row bytes are a power of two (chunk index by shift); kLines: 128-byte
// lines a row (Copy::kLines).
template <Copy kCopy, int kStages, int kLines = 0>
__global__ void gather_ring(const uint8_t *pool, const int32_t *rows, int64_t n, int row_bytes, int chunk_shift)
{
    extern __shared__ __align__(128) uint8_t smem[];
    uint64_t *bars = reinterpret_cast<uint64_t *>(smem);
    int32_t *ids = reinterpret_cast<int32_t *>(smem + 8 * kStages); // [2][32]
    uint8_t *ring = smem + kRingOff;
    const int tid = threadIdx.x;
    const int64_t batches = n / kBatchRows;
    if (tid < kStages)
        mbar_init(&bars[tid], kBatchRows);
    mbar_init_fence();
    int64_t b = blockIdx.x;
    // Row ids of batch b + stride * n, by threads tid < 32 (0 past the end).
    auto ids_of = [&](int n) {
        const int64_t at = b + int64_t(gridDim.x) * n;
        return tid < kBatchRows && at < batches ? rows[at * kBatchRows + tid] : 0;
    };
    if (tid < kBatchRows)
        ids[tid] = ids_of(0);
    int32_t next = ids_of(1); // stored a batch later, so its load latency is hidden
    __syncthreads();
    for (int k = 0; b < batches; b += gridDim.x, k++) {
        const int stage = k % kStages;
        const int32_t after = ids_of(2);
        const int32_t *cur = ids + (k % 2) * kBatchRows;
        uint8_t *dst = ring + stage * kBatchRows * row_bytes;
        if constexpr (kCopy == Copy::kBulk) {
            if (tid < kBatchRows) {
                if (k >= kStages)
                    mbar_wait(&bars[stage], ((k / kStages) - 1) & 1); // the stage's last copy landed
                mbar_arrive_expect_tx(&bars[stage], row_bytes);
                bulk_copy_g2s(dst + tid * row_bytes, pool + int64_t(cur[tid]) * row_bytes, row_bytes, &bars[stage]);
            }
        } else {
            if constexpr (kCopy == Copy::kLines) {
                const int q = tid % 8;
                for (int row = tid / 8; row < kBatchRows; row += blockDim.x / 8) {
                    const uint8_t *src = pool + int64_t(cur[row]) * row_bytes + 16 * q;
#pragma unroll
                    for (int j = 0; j < kLines; j++)
                        cp_async16(dst + row * row_bytes + 16 * q + 128 * j, src + 128 * j, 16);
                }
            } else {
                const int chunks = kBatchRows << chunk_shift;
                for (int c = tid; c < chunks; c += blockDim.x) {
                    const int row = c >> chunk_shift, chunk = c & ((1 << chunk_shift) - 1);
                    cp_async16(dst + c * 16, pool + int64_t(cur[row]) * row_bytes + chunk * 16, 16);
                }
            }
            cp_async_commit();
            cp_async_wait<kStages - 1>(); // the stage issued next has landed
        }
        if (tid < kBatchRows)
            ids[((k + 1) % 2) * kBatchRows + tid] = next;
        next = after;
        __syncthreads();
    }
    if (kCopy == Copy::kBulk && tid < kBatchRows) { // drain: every stage's last phase
        const int issued = static_cast<int>((batches - blockIdx.x + gridDim.x - 1) / gridDim.x);
        for (int k = issued > kStages ? issued - kStages : 0; k < issued; k++)
            mbar_wait(&bars[k % kStages], (k / kStages) & 1);
    }
    cp_async_wait<0>();
}

struct Case {
    const char *method; // ldg, cpasync, lines, bulk
    int threads;        // per CTA (ring methods)
    int kb;             // KB in flight per SM (ring methods)
};

// The ring kernel for (method, stages, row bytes), its shared memory set up.
using RingKernel = void (*)(const uint8_t *, const int32_t *, int64_t, int, int);
template <int kStages> RingKernel ring_kernel_of(const char *method, int row_bytes)
{
    if (!strcmp(method, "bulk"))
        return gather_ring<Copy::kBulk, kStages>;
    if (!strcmp(method, "lines")) // 128-byte lines a row, as immediate offsets
        return row_bytes == 512 ? gather_ring<Copy::kLines, kStages, 4> : gather_ring<Copy::kLines, kStages, 8>;
    return gather_ring<Copy::kChunks, kStages>;
}
RingKernel ring_kernel(const char *method, int row_bytes, int stages, int smem)
{
    RingKernel k = nullptr;
    switch (stages) {
    case 2: k = ring_kernel_of<2>(method, row_bytes); break;
    case 4: k = ring_kernel_of<4>(method, row_bytes); break;
    case 8: k = ring_kernel_of<8>(method, row_bytes); break;
    default: fprintf(stderr, "bench_gather: no ring of %d stages\n", stages); exit(1);
    }
    CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return k;
}

} // namespace

int main(int argc, char **argv)
{
    int iters = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            iters = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_gather [--iters N]\n");
            return 2;
        }
    }
    int device_count = 0;
    if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
        fprintf(stderr, "bench_gather: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("bench_gather: %s, %d SMs, L2 %d MB; random rows, median of %d runs\n", prop.name,
           prop.multiProcessorCount, prop.l2CacheSize >> 20, iters);
    printf("%-10s %-6s %-18s %10s %8s\n", "pool", "row B", "method", "time_us", "TB/s");

    const int64_t n = 1 << 22; // rows gathered per run: 2-4 GB
    std::vector<int32_t> host_rows(n);
    uint32_t *sink;
    int32_t *rows;
    CUDA_CHECK(cudaMalloc(&sink, 4));
    CUDA_CHECK(cudaMalloc(&rows, n * sizeof(int32_t)));
    const Case cases[] = {{"ldg", 0, 0},        {"cpasync", 64, 64},  {"cpasync", 128, 64}, {"cpasync", 128, 128},
                          {"cpasync", 256, 64}, {"cpasync", 256, 128}, {"lines", 128, 64},  {"lines", 256, 64},
                          {"lines", 256, 128},  {"bulk", 32, 64},      {"bulk", 32, 128}};
    const int64_t pool_mb[] = {8, 512};
    const int row_sizes[] = {512, 1024};
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (int64_t mb : pool_mb) {
        uint8_t *pool;
        CUDA_CHECK(cudaMalloc(&pool, mb << 20));
        CUDA_CHECK(cudaMemset(pool, 1, mb << 20));
        for (int row_bytes : row_sizes) {
            const int64_t pool_rows = (mb << 20) / row_bytes;
            for (int64_t i = 0; i < n; i++) {
                seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                host_rows[i] = static_cast<int32_t>(seed % pool_rows);
            }
            CUDA_CHECK(cudaMemcpy(rows, host_rows.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice));
            for (const Case &c : cases) {
                const bool ldg = !strcmp(c.method, "ldg");
                const int stages = (c.kb << 10) / (kBatchRows * row_bytes), smem = kRingOff + (c.kb << 10);
                const int chunk_shift = row_bytes == 512 ? 5 : 6;
                const RingKernel ring = ldg ? nullptr : ring_kernel(c.method, row_bytes, stages, smem);
                std::vector<float> times;
                for (int it = 0; it < iters + 2; it++) {
                    CUDA_CHECK(cudaEventRecord(start));
                    if (ldg)
                        gather_ldg<<<prop.multiProcessorCount * 8, 256>>>(pool, rows, n, row_bytes, sink);
                    else
                        ring<<<prop.multiProcessorCount, c.threads, smem>>>(pool, rows, n, row_bytes, chunk_shift);
                    CUDA_CHECK(cudaEventRecord(stop));
                    CUDA_CHECK(cudaEventSynchronize(stop));
                    CUDA_CHECK(cudaGetLastError());
                    float ms;
                    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
                    if (it >= 2)
                        times.push_back(ms);
                }
                std::sort(times.begin(), times.end());
                const float ms = times[times.size() / 2];
                char method[32];
                if (ldg)
                    snprintf(method, sizeof method, "%s", c.method);
                else
                    snprintf(method, sizeof method, "%s %dt %dK", c.method, c.threads, c.kb);
                printf("%-10s %-6d %-18s %10.1f %8.2f\n", mb == 8 ? "8 MB (L2)" : "512 MB", row_bytes, method,
                       ms * 1e3, double(n) * row_bytes / (ms * 1e-3) / 1e12);
            }
        }
        CUDA_CHECK(cudaFree(pool));
    }
    return 0;
}
