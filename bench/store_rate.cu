// bench_store: how fast one SM writes a heads-on-M item's output (64 heads x 512 BF16 =
// 64 KB) to global memory, and what its threads wait for meanwhile (docs/perf/LOG.md, session 20:
// the stores of O are 4-11% of every heads-on-M case). In SM cycles per 64 KB, medians
// over the storing CTAs:
//   stg    256 threads store 16-byte chunks from registers, 16 each, as finish() does:
//          "issued" is until the last thread has issued its stores (a barrier after them),
//          what the consumers spend there
//   bulk   the 64 KB written to shared memory first ("staged", 256 threads), then one
//          thread issues one cp.async.bulk store (the copy engine): "issued" is its issue,
//          "read" until cp.async.bulk.wait_group.read (the shared memory may be reused),
//          "done" until wait_group 0 (the writes made)
// each with 1 CTA storing, every SM storing, and 1 CTA storing while every other SM
// gathers random 1 KB rows (loads into registers, as a busy GPU's other CTAs do).
// Destinations rotate over 256 MB, past L2, as a prefill's outputs do.
// Usage: bench_store [--reps N]  (default 200)
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "../src/cuda/common/sm90.cuh"
#include "bench_cli.h"
#include "cuda_check.h"

namespace {

using namespace smla;

constexpr int kThreads = 256, kBytes = 64 * 1024, kSlots = 4096; // 256 MB of destinations
constexpr int64_t kPoolRows = 1 << 17;                             // 128 MB of 1 KB rows

enum Method { kStg, kBulk };

__device__ __forceinline__ void bulk_store(void *gmem, const void *smem, uint32_t bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(gmem), "r"(smem_addr(smem)),
                 "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_done() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// CTAs below `storers` store `reps` times and add their cycles to out[4 cta + phase]
// (stg: issued; bulk: staged, issued, read, done); the others gather until all storers are
// done (`finished` counts them).
__global__ void __launch_bounds__(kThreads, 1) store_kernel(Method method, int storers, int reps, uint8_t *dst,
                                                            const uint8_t *pool, unsigned *finished,
                                                            unsigned long long *out, uint32_t *sink)
{
    extern __shared__ __align__(1024) uint8_t stage[];
    const int tid = threadIdx.x;
    if (int(blockIdx.x) >= storers) {
        uint32_t acc = 0, h = blockIdx.x * 2654435761u + tid;
        // Until the storers are done (bounded: a CTA that never became resident must not
        // hang the bench).
        for (int i = 0; i < (1 << 22) && *reinterpret_cast<volatile unsigned *>(finished) < unsigned(storers); i++) {
            h = h * 1664525u + 1013904223u;
            const uint4 v = reinterpret_cast<const uint4 *>(pool + int64_t(h % kPoolRows) * 1024)[tid % 64];
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
        if (acc == 0x12345678u)
            *sink = acc;
        return;
    }
    unsigned long long sums[4] = {};
    for (int r = 0; r < reps; r++) {
        uint8_t *to = dst + int64_t((blockIdx.x * 7919 + r * 131) % kSlots) * kBytes;
        const uint4 v = make_uint4(r, tid, blockIdx.x, 0);
        __syncthreads();
        const long long t0 = clock64();
        if (method == kStg) {
#pragma unroll
            for (int k = 0; k < 16; k++)
                reinterpret_cast<uint4 *>(to)[tid + kThreads * k] = v;
            __syncthreads();
            sums[0] += clock64() - t0;
            continue;
        }
#pragma unroll
        for (int k = 0; k < 16; k++)
            reinterpret_cast<uint4 *>(stage)[tid + kThreads * k] = v;
        fence_proxy_async(); // the generic proxy's writes, for the copy engine
        __syncthreads();
        const long long t1 = clock64();
        if (tid == 0) {
            bulk_store(to, stage, kBytes);
            const long long t2 = clock64();
            bulk_wait_read();
            const long long t3 = clock64();
            bulk_wait_done();
            sums[1] += t2 - t1;
            sums[2] += t3 - t1;
            sums[3] += clock64() - t1;
        }
        sums[0] += t1 - t0;
    }
    if (tid == 0) {
        for (int i = 0; i < 4; i++)
            out[4 * blockIdx.x + i] = sums[i] / reps;
        __threadfence();
        atomicAdd(finished, 1u);
    }
}

} // namespace

int main(int argc, char **argv)
{
    const int reps = count_arg(argc, argv, "--reps", 200, "bench_store");
    if (reps < 0)
        return 2;
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    uint8_t *dst, *pool;
    CUDA_CHECK(cudaMalloc(&dst, int64_t(kSlots) * kBytes));
    CUDA_CHECK(cudaMalloc(&pool, kPoolRows * 1024));
    CUDA_CHECK(cudaMemset(pool, 1, kPoolRows * 1024));
    unsigned *finished;
    unsigned long long *out;
    uint32_t *sink;
    CUDA_CHECK(cudaMalloc(&finished, sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&out, 4 * sizeof(unsigned long long) * sms));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(uint32_t)));
    // A CTA per SM: the stage (64 KB) and more shared memory than two CTAs could share.
    const int smem = 120 * 1024;
    CUDA_CHECK(cudaFuncSetAttribute(store_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    printf("bench_store: one SM writes 64 KB (a heads-on-M item's O); cycles, median over the storing CTAs\n");
    printf("%-6s %-22s %8s %8s %8s %8s\n", "method", "storing CTAs", "staged", "issued", "read", "done");
    for (Method m : {kStg, kBulk}) {
        const struct {
            const char *name;
            int ctas, storers;
        } cases[] = {{"1 alone", 1, 1}, {"all SMs", sms, sms}, {"1, the rest gather", sms, 1}};
        for (const auto &c : cases) {
            CUDA_CHECK(cudaMemset(finished, 0, sizeof(unsigned)));
            store_kernel<<<c.ctas, kThreads, smem>>>(m, c.storers, reps, dst, pool, finished, out, sink);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<unsigned long long> h(4 * c.storers);
            CUDA_CHECK(cudaMemcpy(h.data(), out, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost));
            std::vector<unsigned long long> col[4];
            for (int s = 0; s < c.storers; s++)
                for (int i = 0; i < 4; i++)
                    col[i].push_back(h[4 * s + i]);
            if (m == kStg)
                printf("%-6s %-22s %8s %8llu %8s %8s\n", "stg", c.name, "-", median(col[0]), "-", "-");
            else
                printf("%-6s %-22s %8llu %8llu %8llu %8llu\n", "bulk", c.name, median(col[0]), median(col[1]),
                       median(col[2]), median(col[3]));
        }
    }
    return 0;
}
