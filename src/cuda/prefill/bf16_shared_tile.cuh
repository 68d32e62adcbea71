// SM90 sparse MLA attention, BF16 path for 8-32 heads (BF16 queries or caches; E4M3 data
// is gathered raw and widened to BF16 in shared memory): one CTA computes one token for
// kHT heads, 128 KV entries (a tile) at a time, with two warpgroups (WGs) sharing each
// tile.
//
// KV entries are on wgmma's M side and heads on N, so 8-32 heads need no padding:
//   S^T[128 x HT] = K[128 x 512] . Q^T     each WG takes 64 of the 128 rows
//   O^T[512 x HT] += V^T[512 x 128] . P^T  each WG owns 256 of the 512 output dims; V^T
//                                          is read with wgmma's transposed-A mode
// Softmax: per head (a column), both WGs agree on the running max through shared memory
// every tile; row sums stay per thread and are reduced once at the end. Every head is
// computed independently of the others, so the result does not depend on kHT, on the
// other tokens of the batch or on how the batch is segmented. A 128-entry BF16 tile is
// 128 KB, so there is one stage: the gather of the next tile follows the current one.
#pragma once
#include <cstdint>

#include "../common/sm90.cuh"
#include "../common/softmax.cuh"
#include "../common/token_entries.cuh"
#include "../common/wgmma_ops.cuh"
#include "bf16_gather.cuh"
#include "entries_on_m_mma.cuh"
#include "params.cuh"

namespace smla {

namespace bf16 {

constexpr int kTileRows = 128;
constexpr int kThreads = 256;

template <int kHT> struct Bf16Config {
    static constexpr int kTileBytes = kTileRows * 1024;
    static constexpr int kQBytes = kHT * 1024;
    static constexpr int kPBytes = kHT * kTileRows * 2;
    static constexpr int kTileOff = 0;
    static constexpr int kQOff = kTileOff + kTileBytes;
    static constexpr int kPOff = kQOff + kQBytes;
    static constexpr int kRowInfoOff = kPOff + kPBytes;       // 3 x 128 row addresses
    static constexpr int kScaleRowOff = kRowInfoOff + 3 * kTileRows * 8; // 3 x 128 scale rows
    static constexpr int kScaleOff = kScaleRowOff + 3 * kTileRows * 8;   // [128 rows][8] UE8M0
    static constexpr int kColMaxOff = kScaleOff + kTileRows * 8;          // [8 warps][HT]
    static constexpr int kMaxOff = kColMaxOff + 8 * kHT * 4;   // running max [HT]
    static constexpr int kAlphaOff = kMaxOff + kHT * 4;        // rescale factor [HT]
    static constexpr int kSmemBytes = kAlphaOff + kHT * 4 + 1024; // + alignment slack
};

template <int kHT> struct SharedTile {
    using Cfg = Bf16Config<kHT>;
    using Gather = Bf16Gather<kTileRows, kThreads>;
    static constexpr int kSReg = kHT / 2;  // S^T accumulators per thread
    static constexpr int kCols = kHT / 4;  // distinct heads per thread

    // Output dim of accumulator register i of M-tile m (this WG's). Warp and lane are read
    // from threadIdx again: taken from run's variables, held since its start, they changed
    // the tile loop's code (+200-400 instructions at 16 and 32 heads).
    static __device__ __forceinline__ int out_dim(int m, int i, int wg)
    {
        return entries_on_m_out_dim(4 * wg + m, i, (threadIdx.x % 128) / 32, threadIdx.x % 32);
    }

    // Tiles [first, first + ntiles) of token t (all of them unless split), heads h0..h0+kHT-1.
    static __device__ void run(const AttentionParams &p, uint8_t *smem_raw, int64_t t, int h0, int split)
    {
        const int tid = threadIdx.x, wg = warp_uniform(tid / 128), warp = (tid % 128) / 32, lane = tid % 32;
        WorkItem w;
        if (!work_item(p, t, Lookup::kOneTrip, h0, kHT, split, kTileRows, tid, kThreads, &w))
            return;
        const int n = w.n, n_swa = w.n_swa, first = w.first, ntiles = w.ntiles;
        const bool split_token = w.split;
        uint16_t *out = p.out + t * p.out_token_stride + int64_t(h0) * 512;

        uint8_t *smem = align_smem_1024(smem_raw);
        uint8_t *tiles = smem + Cfg::kTileOff;
        uint8_t *qs = smem + Cfg::kQOff;
        uint8_t *ps = smem + Cfg::kPOff;
        uint64_t *rowinfo = reinterpret_cast<uint64_t *>(smem + Cfg::kRowInfoOff);
        uint64_t *scalerows = reinterpret_cast<uint64_t *>(smem + Cfg::kScaleRowOff);
        uint8_t *scales = smem + Cfg::kScaleOff;
        float *colmax = reinterpret_cast<float *>(smem + Cfg::kColMaxOff);
        float *mrun = reinterpret_cast<float *>(smem + Cfg::kMaxOff);
        float *alpha_s = reinterpret_cast<float *>(smem + Cfg::kAlphaOff);
        const void *dummy = p.q; // any valid global address for zero-filling copies
        const bool raw_rows = has_raw_rows(p);

        // Row addresses of tiles 0 and 1; the running max starts at -inf.
        Gather::first_rows(p, t, w, rowinfo, scalerows, tid);
        if (tid < kHT)
            mrun[tid] = -INFINITY;
        __syncthreads();
        Gather::load_q<kHT>(qs, p, t, h0);
        Gather::load_tile(tiles, scales, rowinfo, scalerows, dummy);
        cp_async_commit();

        float o[4][kSReg];
#pragma unroll
        for (int m = 0; m < 4; m++)
#pragma unroll
            for (int i = 0; i < kSReg; i++)
                o[m][i] = 0.f;
        float l[kCols];
#pragma unroll
        for (int c = 0; c < kCols; c++)
            l[c] = 0.f;

        for (int it = 0; it < ntiles; it++) {
            uint8_t *tile = tiles;
            const uint64_t *info = rowinfo + (it % 3) * kTileRows;
            cp_async_wait<0>();
            fence_proxy_async();
            __syncthreads(); // tile `it` landed everywhere
            if (raw_rows) {
                Gather::dequant_tile(tile, scales, info);
                fence_proxy_async();
                __syncthreads();
            }
            // The slot ids of tile it+2 are loaded now; their addresses are stored at the end.
            const int e_next = (first + it + 2) * kTileRows + tid;
            const bool has_next = tid < kTileRows && it + 2 < ntiles && e_next < n;
            const EntrySlot next = has_next ? entry_slot(p, t, e_next, n_swa) : EntrySlot{-1, true};

            float s[kSReg];
            score_entries_on_m<kHT, kTileRows>(s, tile + wg * (64 * 128), qs); // the WG's 64 rows

            // Scores in log2 units; masked rows are -inf. Column max over this warp's rows.
            const int r_lo = wg * 64 + warp * 16 + lane / 4;
            const bool v_lo = info[r_lo] != 0, v_hi = info[r_lo + 8] != 0;
            float cmax[kCols];
#pragma unroll
            for (int i = 0; i < kSReg; i++) {
                const bool hi = (i % 4) >= 2;
                s[i] = (hi ? v_hi : v_lo) ? s[i] * p.scale_log2 : -INFINITY;
            }
#pragma unroll
            for (int c = 0; c < kCols; c++) {
                const int i = col_reg(c);
                cmax[c] = warp_column_max(s[i], s[i + 2]);
            }
            if (lane < 4) {
#pragma unroll
                for (int c = 0; c < kCols; c++)
                    colmax[(wg * 4 + warp) * kHT + acc_col(col_reg(c), lane)] = cmax[c];
            }
            __syncthreads();
            if (tid < kHT) {
                float m = colmax[tid];
                for (int w = 1; w < 8; w++)
                    m = fmaxf(m, colmax[w * kHT + tid]);
                const float m_old = mrun[tid];
                const float m_new = fmaxf(m_old, m);
                alpha_s[tid] = m_new == -INFINITY ? 1.f : fast_exp2(m_old - m_new);
                mrun[tid] = m_new;
            }
            __syncthreads();

            // P = exp2(s - m); row sums; P^T to shared memory in the O^T operand layout.
#pragma unroll
            for (int c = 0; c < kCols; c++) {
                const int i = col_reg(c), col = acc_col(i, lane);
                const float m_new = mrun[col];
                const float m_use = m_new == -INFINITY ? 0.f : m_new;
                const float p_lo = fast_exp2(s[i] - m_use), p_hi = fast_exp2(s[i + 2] - m_use);
                l[c] = l[c] * alpha_s[col] + p_lo + p_hi;
                s[i] = p_lo;
                s[i + 2] = p_hi;
            }
#pragma unroll
            for (int i = 0; i < kSReg; i++) {
                const int col = acc_col(i, lane), r = r_lo + ((i % 4) >= 2 ? 8 : 0);
                    const __nv_bfloat16 v = __float2bfloat16_rn(s[i]);
                    *reinterpret_cast<__nv_bfloat16 *>(ps + tile_offset(kHT, col, r * 2)) = v;
            }
            fence_proxy_async();
            __syncthreads();

#pragma unroll
            for (int m = 0; m < 4; m++)
#pragma unroll
                for (int i = 0; i < kSReg; i++)
                    o[m][i] *= alpha_s[acc_col(i, lane)];
            // O^T of the WG's 256 dims over the tile's 128 rows
            accumulate_entries_on_m<kHT, kTileRows, 4, 8>(o, tile + 4 * wg * (kTileRows * 128), ps);

            if (tid < kTileRows && it + 2 < ntiles)
                rowinfo[((it + 2) % 3) * kTileRows + tid] = slot_row(p, next, &scalerows[((it + 2) % 3) * kTileRows + tid]);
            if (it + 1 < ntiles) {
                __syncthreads(); // everyone is done reading the single stage
                Gather::load_tile(tiles, scales, rowinfo + ((it + 1) % 3) * kTileRows,
                                  scalerows + ((it + 1) % 3) * kTileRows, dummy);
                cp_async_commit();
            }
        }

        // Row sums over the lanes and warps holding each column; final scale; LSE.
        __syncthreads(); // colmax is free again
        store_warp_row_sums<kCols, kHT>(l, colmax, wg * 4 + warp, lane);
        __syncthreads();
        if (tid < kHT)
            finish_head(p, t, h0, tid, split, split_token, mrun[tid], colmax, 8, kHT, 1.f, alpha_s);
        __syncthreads();

        // Output or, for a split, the partial sum (both BF16): two dims (8 apart) per head
        // and M-tile.
#pragma unroll
        for (int m = 0; m < 4; m++)
#pragma unroll
            for (int i = 0; i < kSReg; i++) {
                const int col = acc_col(i, lane);
                const uint16_t v = __bfloat16_as_ushort(__float2bfloat16_rn(o[m][i] * alpha_s[col]));
                if (split_token)
                    p.partial_o[partial_index(p, t, h0 + col, split) * 512 + out_dim(m, i, wg)] = v;
                else
                    out[col * 512 + out_dim(m, i, wg)] = v;
            }
    }
};

static_assert(Bf16Config<32>::kSmemBytes <= 227 * 1024, "shared memory per CTA");

template <int kHT>
__global__ void __launch_bounds__(kThreads, 1) kernel(const __grid_constant__ AttentionParams p)
{
    grid_wait_then_allow_next();
    extern __shared__ uint8_t smem[];
    const int groups = p.num_heads / kHT;
    const int64_t token_group = blockIdx.x / p.splits;
    SharedTile<kHT>::run(p, smem, token_group / groups, static_cast<int>(token_group % groups) * kHT,
                         static_cast<int>(blockIdx.x % p.splits));
}

} // namespace bf16
} // namespace smla
