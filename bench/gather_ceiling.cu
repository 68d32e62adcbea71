// bench_gather: how fast this GPU gathers KV rows chosen at random, the operation every
// smla kernel starts with, and how that depends on the way it is done. Prints one line
// per (pool, row size, method) with the achieved TB/s; `scripts/gpu-check.sh full` runs it.
//
// Methods:
//   ldg       loads into registers (16 bytes per lane, a warp per row), many warps per SM:
//             the ceiling the DESIGN quotes (9-10 TB/s from L2, 4.4 from HBM)
//   cpasync D one CTA of 256 threads per SM gathers D KB with cp.async, waits, repeats:
//             what smla's kernels do with D KB in flight per SM (D = 32 .. 192)
//   pipe D    the same with two halves of D KB: the next half is issued before the wait
//             for the previous one, so D KB stay in flight
// Usage: bench_gather [--iters N]  (default 10; median of N after 2 warm-ups)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

namespace {

#define CHECK(x)                                                                                         \
    do {                                                                                                 \
        cudaError_t err_ = (x);                                                                          \
        if (err_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "bench_gather: %s: %s\n", #x, cudaGetErrorString(err_));                     \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem) : "memory");
}

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

// One CTA per SM; each round gathers `batch_rows` rows into shared memory. With `pipelined`
// the buffer is two halves and a half is reissued as soon as the one before it landed.
__global__ void gather_cpasync(const uint8_t *pool, const int32_t *rows, int64_t n, int row_bytes, int batch_rows,
                               bool pipelined)
{
    extern __shared__ __align__(16) uint8_t buf[];
    const int chunks = row_bytes / 16;
    const int half_rows = pipelined ? batch_rows / 2 : batch_rows;
    const int64_t stride = int64_t(gridDim.x) * half_rows;
    int parity = 0;
    for (int64_t first = int64_t(blockIdx.x) * half_rows; first < n; first += stride) {
        uint8_t *dst = buf + (pipelined ? parity * half_rows * row_bytes : 0);
        for (int k = threadIdx.x; k < half_rows * chunks; k += blockDim.x) {
            const int64_t i = first + k / chunks;
            if (i < n)
                cp_async16(dst + int64_t(k) * 16, pool + int64_t(rows[i]) * row_bytes + (k % chunks) * 16);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        if (pipelined)
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        else
            asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        __syncthreads();
        parity ^= 1;
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

struct Case {
    const char *method;
    int kb; // shared memory per CTA (cp.async methods)
};

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
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("bench_gather: %s, %d SMs, L2 %d MB; random rows, median of %d runs\n", prop.name,
           prop.multiProcessorCount, prop.l2CacheSize >> 20, iters);
    printf("%-10s %-6s %-10s %10s %8s\n", "pool", "row B", "method", "time_us", "TB/s");

    const int64_t n = 1 << 22; // rows gathered per run: 2-4 GB
    std::vector<int32_t> host_rows(n);
    uint32_t *sink;
    int32_t *rows;
    CHECK(cudaMalloc(&sink, 4));
    CHECK(cudaMalloc(&rows, n * sizeof(int32_t)));
    const Case cases[] = {{"ldg", 0},      {"cpasync", 32}, {"cpasync", 64}, {"cpasync", 128}, {"cpasync", 192},
                          {"pipe", 64},    {"pipe", 128},   {"pipe", 192}};
    const int64_t pool_mb[] = {8, 512};
    const int row_sizes[] = {512, 1024};
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (int64_t mb : pool_mb) {
        uint8_t *pool;
        CHECK(cudaMalloc(&pool, mb << 20));
        CHECK(cudaMemset(pool, 1, mb << 20));
        for (int row_bytes : row_sizes) {
            const int64_t pool_rows = (mb << 20) / row_bytes;
            for (int64_t i = 0; i < n; i++) {
                seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                host_rows[i] = static_cast<int32_t>(seed % pool_rows);
            }
            CHECK(cudaMemcpy(rows, host_rows.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice));
            for (const Case &c : cases) {
                const bool ldg = !strcmp(c.method, "ldg"), pipelined = !strcmp(c.method, "pipe");
                const int smem = c.kb << 10, batch_rows = smem / row_bytes;
                if (!ldg)
                    CHECK(cudaFuncSetAttribute(gather_cpasync, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
                std::vector<float> times;
                for (int it = 0; it < iters + 2; it++) {
                    CHECK(cudaEventRecord(start));
                    if (ldg)
                        gather_ldg<<<prop.multiProcessorCount * 8, 256>>>(pool, rows, n, row_bytes, sink);
                    else
                        gather_cpasync<<<prop.multiProcessorCount, 256, smem>>>(pool, rows, n, row_bytes, batch_rows,
                                                                                pipelined);
                    CHECK(cudaEventRecord(stop));
                    CHECK(cudaEventSynchronize(stop));
                    CHECK(cudaGetLastError());
                    float ms;
                    CHECK(cudaEventElapsedTime(&ms, start, stop));
                    if (it >= 2)
                        times.push_back(ms);
                }
                std::sort(times.begin(), times.end());
                const float ms = times[times.size() / 2];
                char method[32];
                snprintf(method, sizeof method, ldg ? "%s" : "%s %d", c.method, c.kb);
                printf("%-10s %-6d %-10s %10.1f %8.2f\n", mb == 8 ? "8 MB (L2)" : "512 MB", row_bytes, method,
                       ms * 1e3, double(n) * row_bytes / (ms * 1e-3) / 1e12);
            }
        }
        CHECK(cudaFree(pool));
    }
    return 0;
}
