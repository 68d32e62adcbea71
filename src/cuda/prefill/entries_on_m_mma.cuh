// The two products of the BF16 kernels with KV entries on wgmma's M and kHT heads on N
// (bf16_shared_tile.cuh, bf16_entries_ring.cuh), over a tile of kRows rows stored as
// 128-byte column blocks ([512 / 64 blocks][kRows rows][128 B], 128-byte swizzle):
//   S^T[64 x kHT] = K[64 rows x 512] . Q^T
//   O^T[kMBlocks x 64 dims x kHT] += V^T[those dims x kSteps x 16 rows] . P^T
#pragma once
#include <cstdint>

#include "../common/sm90.cuh"
#include "../common/wgmma_ops.cuh"

namespace smla {

// S^T for the 64 rows starting at `rows64` (inside a tile of kRows rows) against Q
// (kHT rows in the same layout). kChains > 1: the K steps go round-robin to that many
// accumulators, added at the end, so that a chain of dependent small-N wgmmas does not
// wait out each one's latency.
template <int kHT, int kRows, int kChains = 1>
__device__ __forceinline__ void score_entries_on_m(float (&s)[kHT / 2], const uint8_t *rows64, const uint8_t *q)
{
    const SmemDesc a0 = desc_sw128(rows64, 0), b0 = desc_sw128(q, 0);
    float part[kChains > 1 ? kChains - 1 : 1][kHT / 2];
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 32; ks++) { // K = 512 in steps of 16
        float *acc = ks % kChains == 0 ? s : part[ks % kChains - 1];
        WgmmaBf16SS<kHT>::run(acc, a0 + k_step_units(ks, kRows), b0 + k_step_units(ks, kHT), ks >= kChains);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(s);
#pragma unroll
    for (int c = 0; c + 1 < kChains; c++) {
        fence_regs(part[c]);
#pragma unroll
        for (int i = 0; i < kHT / 2; i++)
            s[i] += part[c][i];
    }
}

// O^T += V^T . P^T: kMBlocks 64-dim blocks from `blocks` (the first of them in the tile),
// over the tile's first kSteps x 16 rows, P^T (kHT rows of entries) at `ps`.
template <int kHT, int kRows, int kMBlocks, int kSteps>
__device__ __forceinline__ void accumulate_entries_on_m(float (&o)[kMBlocks][kHT / 2], const uint8_t *blocks,
                                                        const uint8_t *ps)
{
    const SmemDesc a0 = desc_sw128(blocks, kRows * 128), b0 = desc_sw128(ps, 0);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kSteps; step++) { // K = rows in steps of 16
        const uint64_t b = b0 + k_step_units(step, kHT);
#pragma unroll
        for (int m = 0; m < kMBlocks; m++)
            WgmmaBf16SSTransA<kHT>::run(o[m], a0 + (m * (kRows * 128) + step * 2048) / 16, b, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int m = 0; m < kMBlocks; m++)
        fence_regs(o[m]);
}

// The output dim of O^T accumulator register i of 64-dim block `block`, for lane `lane` of
// warp `warp` of the WG.
__device__ __forceinline__ int entries_on_m_out_dim(int block, int i, int warp, int lane)
{
    return block * 64 + warp * 16 + lane / 4 + ((i % 4) / 2) * 8;
}

} // namespace smla
