// bench_widen: what bf16m's widening of raw rows costs, in SM cycles, with the kernel's
// own code (copy_half, widen_half): one half of a tile (64 fp8_ds_mla rows x 256 dims)
// gathered by a warpgroup (L: copies issued to landed), then widened to BF16 in place by
// 1, 2 or 3 warpgroups at once, each its own half (W). docs/perf/LOG.md (session 9) uses it to
// place the widening: ~2000 cycles a half on one warpgroup, whatever the code's order.
// Usage: bench_widen [--reps N]  (default 200; medians over the CTAs of N repetitions)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include "../src/cuda/prefill/bf16_heads_on_m.cuh"
#include "bench_cli.h"
#include "cuda_check.h"

namespace {

using namespace smla;

constexpr int kThreads = heads_on_m::kThreads; // 3 warpgroups, as bf16m

// Per repetition: WG 2 publishes both buffers' row sets (slots taken at random from
// `slots`; not timed, as in the kernel, where they are written a pair ahead), copies the
// halves the widening WGs take and waits for them; then WGs 0 .. wgs-1 widen halves fill
// order 0 .. wgs-1 at once. out[cta] = {L, W} summed, L timed by WG 2 and W by WG 0
// (until every WG has widened). (Until session 10 W was timed by WG 2, whose 1- and 2-WG
// rows read ~83 cycles: not the widening.)
__global__ void __launch_bounds__(kThreads, 1) widen_kernel(const __grid_constant__ AttentionParams p,
                                                            const int32_t *slots, int nslots, int reps, int wgs,
                                                            unsigned long long *out)
{
    extern __shared__ uint8_t smem_raw[];
    const bf16m::Shared sh(align_smem_1024(smem_raw));
    const int tid = threadIdx.x, wg = tid / 128, t = tid % 128;
    unsigned long long gather = 0, widen = 0;
    for (int r = 0; r < reps; r++) {
        long long t0 = 0;
        if (wg == 2) {
            // Row u of buffer b: slot number base + 64 b.
            const int base = blockIdx.x * 7919 + r * 131 + t % heads_on_m::kRows;
            const EntrySlot rows[2] = {{slots[base % nslots], true},
                                       {slots[(base + heads_on_m::kRows) % nslots], true}};
            bf16m::publish_rows(p, sh, 0, rows, t);
            t0 = clock64();
            for (int f = 0; f < wgs; f++)
                bf16m::copy_half(p, sh, 0, bf16m::fill_buf(f), bf16m::fill_half(f), t);
            cp_async_commit();
            cp_async_wait<0>();
            named_barrier(heads_on_m::kProducer, 128);
            gather += clock64() - t0;
        }
        __syncthreads();
        const long long t1 = clock64();
        if (wg < wgs)
            bf16m::widen_half(sh, 0, bf16m::fill_buf(wg), bf16m::fill_half(wg), t);
        __syncthreads();
        widen += clock64() - t1;
    }
    // L from the producer WG's first thread, W from WG 0's (it widens in every row).
    if (tid == 2 * 128)
        out[2 * blockIdx.x] = gather;
    if (tid == 0)
        out[2 * blockIdx.x + 1] = widen;
}

} // namespace

int main(int argc, char **argv)
{
    const int reps = count_arg(argc, argv, "--reps", 200, "bench_widen");
    if (reps < 0)
        return 2;
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // An fp8_ds_mla pool of 4096 blocks of 64 slots (~153 MB, past L2): E4M3 bytes that
    // are never NaN, UE8M0 scales 2^-27 .. 2^2.
    const int block = 64, blocks = 4096;
    const int64_t block_stride = int64_t(block) * (SMLA_DS_MLA_DATA_BYTES + SMLA_DS_MLA_SCALE_BYTES);
    std::vector<uint8_t> host(size_t(blocks) * block_stride);
    std::mt19937 rng(1);
    for (int64_t b = 0; b < blocks; b++)
        for (int64_t i = 0; i < block_stride; i++) {
            const bool scale = i >= int64_t(block) * SMLA_DS_MLA_DATA_BYTES;
            host[b * block_stride + i] = scale ? uint8_t(100 + rng() % 30) : uint8_t(rng() % 0x7F);
        }
    uint8_t *pool;
    CUDA_CHECK(cudaMalloc(&pool, host.size()));
    CUDA_CHECK(cudaMemcpy(pool, host.data(), host.size(), cudaMemcpyHostToDevice));
    const int nslots = 1 << 16;
    std::vector<int32_t> hslots(nslots);
    for (auto &s : hslots)
        s = int32_t(rng() % (uint32_t(blocks) * block));
    int32_t *slots;
    CUDA_CHECK(cudaMalloc(&slots, nslots * sizeof(int32_t)));
    CUDA_CHECK(cudaMemcpy(slots, hslots.data(), nslots * sizeof(int32_t), cudaMemcpyHostToDevice));
    unsigned long long *out;
    CUDA_CHECK(cudaMalloc(&out, 2 * sizeof(unsigned long long) * sms));

    AttentionParams p;
    memset(&p, 0, sizeof p);
    p.swa = PoolParams{pool, int64_t(blocks) * block, block_stride, block, SMLA_KV_FP8_DS_MLA};
    const int smem = bf16m::Layout::kBytes;
    CUDA_CHECK(cudaFuncSetAttribute(widen_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    printf("bench_widen: one half = 64 fp8_ds_mla rows x 256 dims; cycles per repetition, median over CTAs\n");
    printf("%6s %15s %18s %18s\n", "CTAs", "widening WGs", "gather L (1 WG)", "widen W (all WGs)");
    for (int ctas : {1, sms})
        for (int wgs = 1; wgs <= 3; wgs++) {
            widen_kernel<<<ctas, kThreads, smem>>>(p, slots, nslots, reps, wgs, out);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<unsigned long long> h(2 * ctas);
            CUDA_CHECK(cudaMemcpy(h.data(), out, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost));
            std::vector<unsigned long long> l, w;
            for (int c = 0; c < ctas; c++) {
                l.push_back(h[2 * c] / reps);
                w.push_back(h[2 * c + 1] / reps);
            }
            printf("%6d %15d %18llu %18llu\n", ctas, wgs, median(l), median(w));
        }
    return 0;
}
