// SM90 sparse MLA attention, BF16 path for 64-head groups (64 and 128 heads): one CTA
// computes one token for 64 heads, 64 KV entries (a tile) at a time, with two
// warpgroups (WGs) sharing each tile and a two-stage gather (the next tile is copied
// while this one computes).
//
// Heads are on wgmma's M side, as in dense attention, so a head's softmax lives in the
// four lanes that hold its row: no shared-memory max exchange inside a WG.
//   S[64 x 32]    = Q[64 x 512] . K_w^T   WG w scores its 32 of the tile's 64 entries
//   O[64 x 256]  += P[64 x 64] . V_w       WG w owns output dims 256w .. 256w+255; V_w is
//                                          read with wgmma's transposed-B mode
// The WGs exchange their 64 row maxima once per tile and share P through shared memory.
// Each head's arithmetic is fixed (it never depends on the batch or the segmentation),
// and every token of a 64- or 128-head problem takes this kernel, whatever the batch.
#pragma once
#include <cstdint>

#include "../common/sm90.cuh"
#include "../common/softmax.cuh"
#include "../common/token_entries.cuh"
#include "../common/wgmma_ops.cuh"
#include "bf16_gather.cuh"
#include "params.cuh"

namespace smla {
namespace bf16m {

constexpr int kRows = 64;   // KV entries per tile
constexpr int kHeads = 64;  // heads per CTA: wgmma's M
constexpr int kThreads = 256;
constexpr int kStages = 2;

struct Layout {
    static constexpr int kTileBytes = kRows * 1024;
    static constexpr int kTileOff = 0;
    static constexpr int kQOff = kStages * kTileBytes;                 // [64 heads][512] BF16
    static constexpr int kPOff = kQOff + kHeads * 1024;                // [64 heads][64 entries] BF16
    static constexpr int kRowInfoOff = kPOff + kHeads * kRows * 2;     // 3 x 64 row addresses
    static constexpr int kScaleRowOff = kRowInfoOff + 3 * kRows * 8;   // 3 x 64 scale-row addresses
    static constexpr int kScaleOff = kScaleRowOff + 3 * kRows * 8;     // [stage][64 rows][8] UE8M0
    static constexpr int kMaxOff = kScaleOff + kStages * kRows * 8;    // [2 WGs][64 heads] tile max
    static constexpr int kSumOff = kMaxOff + 2 * kHeads * 4;           // [2 WGs][64 heads] row sums
    static constexpr int kRunOff = kSumOff + 2 * kHeads * 4;           // final max [64]
    static constexpr int kAlphaOff = kRunOff + kHeads * 4;             // final scale [64]
    static constexpr int kBytes = kAlphaOff + kHeads * 4 + 1024;       // + alignment slack
};
static_assert(Layout::kBytes <= 227 * 1024, "shared memory per CTA");

using Gather = Bf16Gather<kRows, kThreads>;

// Tiles [first, first + ntiles) of token t (all of them unless split), heads h0..h0+63.
__device__ inline void run(const AttentionParams &p, uint8_t *smem_raw, int64_t t, int h0, int split)
{
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
    WorkItem w;
    if (!work_item(p, t, h0, kHeads, split, kRows, tid, kThreads, &w))
        return;
    const int n = w.n, n_swa = w.n_swa, first = w.first, ntiles = w.ntiles;
    const bool split_token = w.split;

    uint8_t *smem = align_smem_1024(smem_raw);
    uint8_t *tiles = smem + Layout::kTileOff;
    uint8_t *qs = smem + Layout::kQOff;
    uint8_t *ps = smem + Layout::kPOff;
    uint64_t *rowinfo = reinterpret_cast<uint64_t *>(smem + Layout::kRowInfoOff);
    uint64_t *scalerows = reinterpret_cast<uint64_t *>(smem + Layout::kScaleRowOff);
    uint8_t *scales = smem + Layout::kScaleOff;
    float *tile_max = reinterpret_cast<float *>(smem + Layout::kMaxOff);
    float *sums = reinterpret_cast<float *>(smem + Layout::kSumOff);
    float *mfinal = reinterpret_cast<float *>(smem + Layout::kRunOff);
    float *alpha_s = reinterpret_cast<float *>(smem + Layout::kAlphaOff);
    const void *dummy = p.q; // any valid global address for zero-filling copies
    const bool raw_rows = Gather::has_raw_rows(p);
    Gather::first_rows(p, t, w, rowinfo, scalerows, tid);
    __syncthreads();
    Gather::load_q<kHeads>(qs, p, t, h0);
    Gather::load_tile(tiles, scales, rowinfo, scalerows, dummy);
    cp_async_commit();

    // This thread's accumulator rows (heads) are r0 = 16 warp + lane / 4 and r0 + 8.
    const int r0 = warp * 16 + lane / 4;
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; i++)
        o[i] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

    const uint64_t desc_q = desc_sw128(qs, 0), desc_p = desc_sw128(ps, 0);
    for (int it = 0; it < ntiles; it++) {
        const int stage = it % kStages;
        uint8_t *tile = tiles + stage * Layout::kTileBytes;
        const uint64_t *info = rowinfo + (it % 3) * kRows;
        cp_async_wait<0>();
        fence_proxy_async();
        __syncthreads(); // tile `it` landed; iteration it-1 is finished everywhere
        if (it + 1 < ntiles) {
            const int next = (it + 1) % kStages;
            Gather::load_tile(tiles + next * Layout::kTileBytes, scales + next * kRows * 8,
                              rowinfo + ((it + 1) % 3) * kRows, scalerows + ((it + 1) % 3) * kRows, dummy);
            cp_async_commit();
        }
        // The slot ids of tile it+2 are loaded now; their addresses are stored at the end.
        const int e_next = (first + it + 2) * kRows + tid;
        const bool has_next = tid < kRows && it + 2 < ntiles && e_next < n;
        const EntrySlot next_slot = has_next ? entry_slot(p, t, e_next, n_swa) : EntrySlot{-1, true};
        if (raw_rows) {
            Gather::dequant_tile(tile, scales + stage * kRows * 8, info);
            fence_proxy_async();
            __syncthreads();
        }

        // S = Q . K_w^T over K = 512 in steps of 16; K_w is rows 32w .. 32w+31 of the tile.
        float s[16];
        {
            const uint64_t desc_k = desc_sw128(tile + wg * 32 * 128, 0);
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < 32; ks++) {
                const uint32_t off = (ks / 4) * (kRows * 128) + (ks % 4) * 32;
                WgmmaBf16SS<32>::run(s, desc_q + ((ks / 4) * (kHeads * 128) + (ks % 4) * 32) / 16, desc_k + off / 16,
                                     ks > 0);
            }
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(s);
        }

        // Scores in log2 units, masked entries -inf; this WG's max of rows r0, r0 + 8.
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int i = 0; i < 16; i++) {
            const bool valid = info[wg * 32 + acc_col(i, lane)] != 0;
            s[i] = valid ? s[i] * p.scale_log2 : -INFINITY;
            mx[(i % 4) / 2] = fmaxf(mx[(i % 4) / 2], s[i]);
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        }
        if (lane % 4 == 0) {
            tile_max[wg * kHeads + r0] = mx[0];
            tile_max[wg * kHeads + r0 + 8] = mx[1];
        }
        __syncthreads();

        // Both WGs derive the same running max from the same two values, in the same order.
        float alpha[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = r0 + 8 * r;
            const float m_new = fmaxf(m_run[r], fmaxf(tile_max[row], tile_max[kHeads + row]));
            alpha[r] = m_new == -INFINITY ? 1.f : fast_exp2(m_run[r] - m_new);
            m_run[r] = m_new;
        }
        // P = exp2(s - m), this WG's part of the row sums, P to shared memory as BF16
        // ([64 heads][64 entries], the A operand of P.V).
        float rs[2] = {0.f, 0.f};
#pragma unroll
        for (int i = 0; i < 16; i += 2) {
            const int r = (i % 4) / 2;
            const float m_use = m_run[r] == -INFINITY ? 0.f : m_run[r];
            const float p0 = fast_exp2(s[i] - m_use), p1 = fast_exp2(s[i + 1] - m_use);
            rs[r] += p0 + p1;
            const __nv_bfloat162 b = __floats2bfloat162_rn(p0, p1);
            *reinterpret_cast<__nv_bfloat162 *>(ps + tile_offset(kHeads, r0 + 8 * r, (wg * 32 + acc_col(i, lane)) * 2)) = b;
        }
#pragma unroll
        for (int r = 0; r < 2; r++)
            l[r] = l[r] * alpha[r] + rs[r];
        fence_proxy_async();
        __syncthreads();

        // Once the running max settles, alpha is 1 for every row of the warp.
        if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
            for (int i = 0; i < 128; i++)
                o[i] *= alpha[(i % 4) / 2];
        }
        // O += P . V_w: K = 64 entries in steps of 16; V_w is dims 256w.. of the tile, whose
        // 64-dim blocks are kRows * 128 bytes apart (the LBO of an MN-major operand).
        {
            const uint64_t desc_v = desc_sw128(tile + 4 * wg * (kRows * 128), kRows * 128);
            wgmma_fence();
#pragma unroll
            for (int step = 0; step < 4; step++)
                WgmmaBf16SSTransB<256>::run(o, desc_p + (step * 32) / 16, desc_v + (step * 16 * 128) / 16, 1);
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(o);
        }

        if (tid < kRows && it + 2 < ntiles)
            rowinfo[((it + 2) % 3) * kRows + tid] = slot_row(p, next_slot, &scalerows[((it + 2) % 3) * kRows + tid]);
    }

    // Row sums over the quad and the two WGs; final scale; LSE.
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
    if (lane % 4 == 0) {
        sums[wg * kHeads + r0] = l[0];
        sums[wg * kHeads + r0 + 8] = l[1];
        if (wg == 0) {
            mfinal[r0] = m_run[0];
            mfinal[r0 + 8] = m_run[1];
        }
    }
    __syncthreads();
    if (tid < kHeads)
        finish_head(p, t, h0, tid, split, split_token, mfinal[tid], sums, 2, kHeads, 1.f, alpha_s);
    __syncthreads();

    // Output (BF16) or, for a split, the partial sum (FP32): registers i, i+1 are two
    // neighbouring dims of one head.
    const float f[2] = {alpha_s[r0], alpha_s[r0 + 8]};
#pragma unroll
    for (int i = 0; i < 128; i += 2) {
        const int r = (i % 4) / 2, head = r0 + 8 * r, d = 256 * wg + acc_col(i, lane);
        const float v0 = o[i] * f[r], v1 = o[i + 1] * f[r];
        if (split_token) {
            *reinterpret_cast<float2 *>(p.partial_o + partial_index(p, t, h0 + head, split) * 512 + d) = make_float2(v0, v1);
        } else {
            const __nv_bfloat162 b = __floats2bfloat162_rn(v0, v1);
            *reinterpret_cast<__nv_bfloat162 *>(p.out + t * p.out_token_stride + int64_t(h0 + head) * 512 + d) = b;
        }
    }
}

__global__ void __launch_bounds__(kThreads, 1) kernel(const __grid_constant__ AttentionParams p)
{
    extern __shared__ uint8_t smem[];
    const int groups = p.num_heads / kHeads;
    const int64_t token_group = blockIdx.x / p.splits;
    run(p, smem, token_group / groups, static_cast<int>(token_group % groups) * kHeads,
        static_cast<int>(blockIdx.x % p.splits));
}

} // namespace bf16m
} // namespace smla
