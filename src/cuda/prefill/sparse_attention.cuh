// SM90 sparse MLA attention: one CTA computes one token for kHT heads (8..64) over the
// token's active KV entries, 128 entries (a tile) at a time.
//
// KV entries are on wgmma's M side and heads on N, so 8-32 heads need no padding:
//   S^T[128 x HT] = K[128 x 512] . Q^T     each warpgroup (WG) takes 64 of the 128 rows
//   O^T[512 x HT] += V^T[512 x 128] . P^T  each WG owns 256 of the 512 output dims
// FP8 path (E4M3 q and cache): both products on FP8 wgmma. FP8 wgmma wants K-major
// operands, which V^T is not; its A fragments are therefore built in registers from the
// gathered rows with 4x4 byte transposes. The fragment rows are a permutation of the
// dims chosen so that each thread holds four consecutive dims (8-byte output stores), and
// the K order a permutation of the tile rows chosen so that those shared-memory reads are
// free of bank conflicts; P is written in the same K order. P is quantised as
// e4m3(p * 256): p <= 1, and the factor keeps p >= 2^-14 out of E4M3's subnormals.
// BF16 path (any other query/cache combination; E4M3 data is converted while gathered):
// V^T is read straight from shared memory with wgmma's transposed-A mode.
//
// Softmax: per head (a column), both WGs agree on the running max through shared memory
// every tile; row sums stay per thread and are reduced once at the end. Every head is
// computed independently of the others, so the result does not depend on kHT, on the
// other tokens of the batch or on how the batch is segmented.
#pragma once
#include <cstdint>

#include "../common/sm90.cuh"
#include "../common/token_entries.cuh"
#include "../common/wgmma_ops.cuh"
#include "params.cuh"

namespace smla {

constexpr int kTileRows = 128;
constexpr int kThreads = 256;
constexpr float kPScale = 256.0f; // FP8 path: P is stored as e4m3(p * kPScale)

template <bool kFp8, int kHT> struct PrefillConfig {
    static constexpr int kElem = kFp8 ? 1 : 2;                // bytes per value in smem
    static constexpr int kRowBytes = 512 * kElem;
    static constexpr int kStages = kFp8 ? 2 : 1;              // BF16 tiles are 128 KB
    static constexpr int kTileBytes = kTileRows * kRowBytes;
    static constexpr int kQBytes = kHT * kRowBytes;
    // P^T: BF16, or on the FP8 path two E4M3 planes (hi, lo) whose sum carries ~8 bits.
    static constexpr int kPPlaneBytes = kHT * kTileRows;
    static constexpr int kPBytes = kFp8 ? 2 * kPPlaneBytes : kHT * kTileRows * 2;
    static constexpr int kTileOff = 0;
    static constexpr int kQOff = kTileOff + kStages * kTileBytes;
    static constexpr int kPOff = kQOff + kQBytes;
    static constexpr int kRowInfoOff = kPOff + kPBytes;       // 3 x 128 row addresses
    static constexpr int kColMaxOff = kRowInfoOff + 3 * kTileRows * 8; // [8 warps][HT]
    static constexpr int kMaxOff = kColMaxOff + 8 * kHT * 4;   // running max [HT]
    static constexpr int kAlphaOff = kMaxOff + kHT * 4;        // rescale factor [HT]
    static constexpr int kSmemBytes = kAlphaOff + kHT * 4 + 1024; // + alignment slack
};

// Column (head) of accumulator register i in the wgmma layout, for this lane.
__device__ __forceinline__ int acc_col(int i, int lane) { return (i / 4) * 8 + (lane % 4) * 2 + (i % 2); }

// FP8 path: position in the O^T wgmma's K order of tile row r (see the header comment).
__device__ __forceinline__ int fp8_k_of_row(int r)
{
    const int step = r / 32, jj = r % 32, i = jj / 8, rr = jj % 8;
    return step * 32 + (rr & 1) * 16 + (rr / 2) * 4 + i;
}

template <bool kFp8, int kHT> struct SparseAttention {
    using Cfg = PrefillConfig<kFp8, kHT>;
    static constexpr int kSReg = kHT / 2;  // S^T accumulators per thread
    static constexpr int kCols = kHT / 4;  // distinct heads per thread

    // Issues the gather of one tile (rows whose info is 0 are zero-filled).
    static __device__ void load_tile(uint8_t *tile, const uint64_t *info, const void *dummy)
    {
        const int tid = threadIdx.x;
        if constexpr (kFp8) {
#pragma unroll
            for (int k = 0; k < 16; k++) {
                const int row = tid / 32 + 8 * k, c = tid % 32;
                const uint64_t a = info[row] & ~uint64_t(1); // every row is E4M3 here
                const void *src = a ? reinterpret_cast<const void *>(a + c * 16) : dummy;
                cp_async16(tile + tile_offset(kTileRows, row, c * 16), src, a ? 16 : 0);
            }
        } else {
#pragma unroll 8
            for (int k = 0; k < 32; k++) {
                const int row = tid / 64 + 4 * k, c = tid % 64;
                const uint64_t a = info[row];
                uint8_t *dst = tile + tile_offset(kTileRows, row, c * 16);
                if (a & 1) { // E4M3 row: 8 source bytes -> 16 bytes of BF16
                    const uint2 v = *reinterpret_cast<const uint2 *>((a & ~uint64_t(1)) + c * 8);
                    uint4 o;
                    o.x = e4m3x2_to_bf16x2(static_cast<uint16_t>(v.x));
                    o.y = e4m3x2_to_bf16x2(static_cast<uint16_t>(v.x >> 16));
                    o.z = e4m3x2_to_bf16x2(static_cast<uint16_t>(v.y));
                    o.w = e4m3x2_to_bf16x2(static_cast<uint16_t>(v.y >> 16));
                    *reinterpret_cast<uint4 *>(dst) = o;
                } else {
                    const void *src = a ? reinterpret_cast<const void *>(a + c * 16) : dummy;
                    cp_async16(dst, src, a ? 16 : 0);
                }
            }
        }
    }

    // Q rows h0 .. h0+kHT-1 of token t, in the operand layout (converted when needed).
    static __device__ void load_q(uint8_t *qs, const AttentionParams &p, int64_t t, int h0, bool q_fp8)
    {
        const int tid = threadIdx.x;
        if (q_fp8) {
            const uint8_t *src = static_cast<const uint8_t *>(p.q) + t * p.q_token_stride + int64_t(h0) * 512;
            if constexpr (kFp8) {
                for (int c = tid; c < kHT * 32; c += kThreads)
                    cp_async16(qs + tile_offset(kHT, c / 32, (c % 32) * 16), src + (c / 32) * 512 + (c % 32) * 16, 16);
            } else {
                for (int c = tid; c < kHT * 64; c += kThreads) {
                    const uint2 v = *reinterpret_cast<const uint2 *>(src + (c / 64) * 512 + (c % 64) * 8);
                    uint4 o;
                    o.x = e4m3x2_to_bf16x2(static_cast<uint16_t>(v.x));
                    o.y = e4m3x2_to_bf16x2(static_cast<uint16_t>(v.x >> 16));
                    o.z = e4m3x2_to_bf16x2(static_cast<uint16_t>(v.y));
                    o.w = e4m3x2_to_bf16x2(static_cast<uint16_t>(v.y >> 16));
                    *reinterpret_cast<uint4 *>(qs + tile_offset(kHT, c / 64, (c % 64) * 16)) = o;
                }
            }
        } else { // BF16 queries only reach the BF16 path
            const uint8_t *src = static_cast<const uint8_t *>(p.q) + (t * p.q_token_stride + int64_t(h0) * 512) * 2;
            for (int c = tid; c < kHT * 64; c += kThreads)
                cp_async16(qs + tile_offset(kHT, c / 64, (c % 64) * 16), src + (c / 64) * 1024 + (c % 64) * 16, 16);
        }
    }

    // S^T for this WG's 64 rows of the tile: s = K[64 x 512] . Q^T.
    // FP8 wgmma keeps only about 14 bits of the running sum it accumulates into, which
    // over 16 steps costs ~1e-2 in the logits; so each K step of 32 gets fresh
    // accumulators and the steps are summed in FP32 (two buffers, one step in flight).
    static __device__ void score(float (&s)[kSReg], const uint8_t *tile, const uint8_t *qs, int wg)
    {
        constexpr int kSteps = kFp8 ? 16 : 32; // K = 512 in steps of 32 bytes
        const uint64_t a0 = desc_sw128(tile + wg * (64 * 128), 0), b0 = desc_sw128(qs, 0);
        auto desc_a = [&](int ks) { return a0 + ((ks / 4) * (kTileRows * 128) + (ks % 4) * 32) / 16; };
        auto desc_b = [&](int ks) { return b0 + ((ks / 4) * (kHT * 128) + (ks % 4) * 32) / 16; };
        if constexpr (kFp8) {
            float part[2][kSReg];
#pragma unroll
            for (int ks = 0; ks < kSteps; ks++) {
                wgmma_fence();
                WgmmaFp8SS<kHT>::run(part[ks % 2], desc_a(ks), desc_b(ks), 0);
                wgmma_commit();
                if (ks == 0)
                    continue;
                wgmma_wait<1>();
                fence_regs(part[(ks - 1) % 2]);
#pragma unroll
                for (int i = 0; i < kSReg; i++)
                    s[i] = ks == 1 ? part[0][i] : s[i] + part[(ks - 1) % 2][i];
            }
            wgmma_wait<0>();
            fence_regs(part[(kSteps - 1) % 2]);
#pragma unroll
            for (int i = 0; i < kSReg; i++)
                s[i] += part[(kSteps - 1) % 2][i];
        } else {
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < kSteps; ks++)
                WgmmaBf16SS<kHT>::run(s, desc_a(ks), desc_b(ks), ks > 0);
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(s);
        }
    }

    // O^T[this WG's 256 dims] += V^T . P^T over the tile.
    static __device__ void accumulate(float (&o)[4][kSReg], const uint8_t *tile, const uint8_t *ps, int wg)
    {
        const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
        if constexpr (kFp8) {
            const int g = lane / 4, q = lane % 4;
            uint4 frag[2][4]; // [buffer][M-tile of the pair, half]
            wgmma_fence();
#pragma unroll
            for (int step = 0; step < 4; step++) {
#pragma unroll
                for (int pair = 0; pair < 2; pair++) {
                    const int d0 = (2 * wg + pair) * 128 + warp * 32 + g * 4;
                    uint32_t lo[4], hi[4], tlo[4], thi[4];
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        const int r0 = step * 32 + 2 * q + 8 * i;
                        lo[i] = *reinterpret_cast<const uint32_t *>(tile + tile_offset(kTileRows, r0, d0));
                        hi[i] = *reinterpret_cast<const uint32_t *>(tile + tile_offset(kTileRows, r0 + 1, d0));
                    }
                    transpose4x4_bytes(lo, tlo);
                    transpose4x4_bytes(hi, thi);
                    uint4 &fa = frag[step % 2][2 * pair], &fb = frag[step % 2][2 * pair + 1];
                    fa = make_uint4(tlo[0], tlo[1], thi[0], thi[1]);
                    fb = make_uint4(tlo[2], tlo[3], thi[2], thi[3]);
                }
                const uint64_t b_hi = desc_sw128(ps + step * 32, 0);
                const uint64_t b_lo = desc_sw128(ps + Cfg::kPPlaneBytes + step * 32, 0);
#pragma unroll
                for (int m = 0; m < 4; m++) {
                    WgmmaFp8RS<kHT>::run(o[m], frag[step % 2][m], b_hi, 1);
                    WgmmaFp8RS<kHT>::run(o[m], frag[step % 2][m], b_lo, 1);
                }
                wgmma_commit();
                // The buffer written next step was read by the group before this one.
                wgmma_wait<1>();
#pragma unroll
                for (int m = 0; m < 4; m++)
                    asm volatile("" ::"r"(frag[(step + 1) % 2][m].x), "r"(frag[(step + 1) % 2][m].y),
                                 "r"(frag[(step + 1) % 2][m].z), "r"(frag[(step + 1) % 2][m].w));
            }
            wgmma_wait<0>();
#pragma unroll
            for (int m = 0; m < 4; m++) {
                asm volatile("" ::"r"(frag[1][m].x), "r"(frag[1][m].y), "r"(frag[1][m].z), "r"(frag[1][m].w));
                fence_regs(o[m]);
            }
        } else {
            const uint64_t a0 = desc_sw128(tile + 4 * wg * (kTileRows * 128), kTileRows * 128), b0 = desc_sw128(ps, 0);
            wgmma_fence();
#pragma unroll
            for (int step = 0; step < 8; step++) { // K = 128 rows in steps of 16
                const uint64_t b = b0 + ((step / 4) * (kHT * 128) + (step % 4) * 32) / 16;
#pragma unroll
                for (int m = 0; m < 4; m++)
                    WgmmaBf16SSTransA<kHT>::run(o[m], a0 + (m * (kTileRows * 128) + step * 2048) / 16, b, 1);
            }
            wgmma_commit();
            wgmma_wait<0>();
#pragma unroll
            for (int m = 0; m < 4; m++)
                fence_regs(o[m]);
        }
    }

    // Output dim of accumulator register i of M-tile m (this WG's), and whether the
    // thread's dims for a head are 4 consecutive values (FP8) or 2 separate ones (BF16).
    static __device__ __forceinline__ int out_dim(int m, int i, int wg)
    {
        const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4;
        const int half = (i % 4) / 2; // row g or g + 8 of the warp's 16
        if constexpr (kFp8)
            return (2 * wg + m / 2) * 128 + warp * 32 + g * 4 + (m % 2) * 2 + half;
        else
            return (4 * wg + m) * 64 + warp * 16 + g + half * 8;
    }

    static __device__ void run(const AttentionParams &p, uint8_t *smem_raw)
    {
        const int n_ht = p.num_heads / kHT;
        const int64_t t = blockIdx.x / n_ht;
        const int h0 = static_cast<int>(blockIdx.x % n_ht) * kHT;
        const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
        int n_swa, n_ext;
        if (!token_entries(p, t, &n_swa, &n_ext))
            return; // padding row: nothing is written
        const int n = n_swa + n_ext;
        uint16_t *out = p.out + t * p.out_token_stride + int64_t(h0) * 512;
        if (n == 0) {
            for (int i = tid; i < kHT * 64; i += kThreads)
                reinterpret_cast<uint4 *>(out + (i / 64) * 512)[i % 64] = make_uint4(0, 0, 0, 0);
            if (p.lse && tid < kHT)
                p.lse[t * p.lse_token_stride + h0 + tid] = -INFINITY;
            return;
        }
        const int ntiles = (n + kTileRows - 1) / kTileRows;

        uint8_t *smem = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
        uint8_t *tiles = smem + Cfg::kTileOff;
        uint8_t *qs = smem + Cfg::kQOff;
        uint8_t *ps = smem + Cfg::kPOff;
        uint64_t *rowinfo = reinterpret_cast<uint64_t *>(smem + Cfg::kRowInfoOff);
        float *colmax = reinterpret_cast<float *>(smem + Cfg::kColMaxOff);
        float *mrun = reinterpret_cast<float *>(smem + Cfg::kMaxOff);
        float *alpha_s = reinterpret_cast<float *>(smem + Cfg::kAlphaOff);
        const void *dummy = p.q; // any valid global address for zero-filling copies

        // Row addresses of tiles 0 and 1; the running max starts at -inf.
        if (tid < kTileRows) {
            for (int i = 0; i < 2 && i < ntiles; i++) {
                const int e = i * kTileRows + tid;
                rowinfo[i * kTileRows + tid] = e < n ? entry_row(p, t, e, n_swa) : 0;
            }
        }
        if (tid < kHT)
            mrun[tid] = -INFINITY;
        __syncthreads();
        load_q(qs, p, t, h0, p.q_is_fp8);
        load_tile(tiles, rowinfo, dummy);
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
            uint8_t *tile = tiles + (it % Cfg::kStages) * Cfg::kTileBytes;
            const uint64_t *info = rowinfo + (it % 3) * kTileRows;
            cp_async_wait<0>();
            fence_proxy_async();
            __syncthreads(); // tile `it` landed everywhere; iteration it-1 is finished
            if (Cfg::kStages == 2 && it + 1 < ntiles) {
                load_tile(tiles + ((it + 1) % 2) * Cfg::kTileBytes, rowinfo + ((it + 1) % 3) * kTileRows, dummy);
                cp_async_commit();
            }
            // The row addresses of tile it+2 are fetched now and stored at the end.
            const int e_next = (it + 2) * kTileRows + tid;
            uint64_t next_info = 0;
            if (tid < kTileRows && it + 2 < ntiles && e_next < n)
                next_info = entry_row(p, t, e_next, n_swa);

            float s[kSReg];
            score(s, tile, qs, wg);

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
                const int i = (c / 2) * 4 + (c % 2);
                float m = fmaxf(s[i], s[i + 2]);
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 4));
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 8));
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 16));
                cmax[c] = m;
            }
            if (lane < 4) {
#pragma unroll
                for (int c = 0; c < kCols; c++)
                    colmax[(wg * 4 + warp) * kHT + acc_col((c / 2) * 4 + (c % 2), lane)] = cmax[c];
            }
            __syncthreads();
            if (tid < kHT) {
                float m = colmax[tid];
                for (int w = 1; w < 8; w++)
                    m = fmaxf(m, colmax[w * kHT + tid]);
                const float m_old = mrun[tid];
                const float m_new = fmaxf(m_old, m);
                alpha_s[tid] = m_new == -INFINITY ? 1.f : exp2f(m_old - m_new);
                mrun[tid] = m_new;
            }
            __syncthreads();

            // P = exp2(s - m); row sums; P^T to shared memory in the O^T operand layout.
#pragma unroll
            for (int c = 0; c < kCols; c++) {
                const int i = (c / 2) * 4 + (c % 2), col = acc_col(i, lane);
                const float m_new = mrun[col];
                const float m_use = m_new == -INFINITY ? 0.f : m_new;
                const float p_lo = exp2f(s[i] - m_use), p_hi = exp2f(s[i + 2] - m_use);
                l[c] = l[c] * alpha_s[col] + p_lo + p_hi;
                s[i] = p_lo;
                s[i + 2] = p_hi;
            }
#pragma unroll
            for (int i = 0; i < kSReg; i++) {
                const int col = acc_col(i, lane), r = r_lo + ((i % 4) >= 2 ? 8 : 0);
                if constexpr (kFp8) {
                    // One E4M3 keeps 3 mantissa bits, which leaves ~2% in the output of a
                    // flat softmax; hi + lo keeps the error near 2^-8.
                    const float v = s[i] * kPScale;
                    const uint8_t hi = static_cast<uint8_t>(f32x2_to_e4m3x2(v, 0.f) & 0xFF);
                    const uint8_t lo = static_cast<uint8_t>(f32x2_to_e4m3x2(v - e4m3_to_float(hi), 0.f) & 0xFF);
                    const uint32_t at = swizzle128(col, fp8_k_of_row(r));
                    ps[at] = hi;
                    ps[Cfg::kPPlaneBytes + at] = lo;
                } else {
                    const __nv_bfloat16 v = __float2bfloat16_rn(s[i]);
                    *reinterpret_cast<__nv_bfloat16 *>(ps + tile_offset(kHT, col, r * 2)) = v;
                }
            }
            fence_proxy_async();
            __syncthreads();

#pragma unroll
            for (int m = 0; m < 4; m++)
#pragma unroll
                for (int i = 0; i < kSReg; i++)
                    o[m][i] *= alpha_s[acc_col(i, lane)];
            accumulate(o, tile, ps, wg);

            if (tid < kTileRows && it + 2 < ntiles)
                rowinfo[((it + 2) % 3) * kTileRows + tid] = next_info;
            if (Cfg::kStages == 1 && it + 1 < ntiles) {
                __syncthreads(); // everyone is done reading the single stage
                load_tile(tiles, rowinfo + ((it + 1) % 3) * kTileRows, dummy);
                cp_async_commit();
            }
        }

        // Row sums: reduce over the lanes and warps holding each column.
#pragma unroll
        for (int c = 0; c < kCols; c++) {
            float v = l[c];
            v += __shfl_xor_sync(0xffffffffu, v, 4);
            v += __shfl_xor_sync(0xffffffffu, v, 8);
            v += __shfl_xor_sync(0xffffffffu, v, 16);
            l[c] = v;
        }
        __syncthreads(); // colmax is free again
        if (lane < 4) {
#pragma unroll
            for (int c = 0; c < kCols; c++)
                colmax[(wg * 4 + warp) * kHT + acc_col((c / 2) * 4 + (c % 2), lane)] = l[c];
        }
        __syncthreads();
        if (tid < kHT) { // final scale per head, reusing alpha_s; lse
            float sum = 0.f;
            for (int w = 0; w < 8; w++)
                sum += colmax[w * kHT + tid];
            const float m = mrun[tid];
            float scale = 0.f;
            float sink = p.sinks ? p.sinks[h0 + tid] * 1.4426950408889634f : -INFINITY;
            if (sum > 0.f && sink != INFINITY) {
                const float mf = fmaxf(m, sink);
                const float denom = sum * exp2f(m - mf) + (sink == -INFINITY ? 0.f : exp2f(sink - mf));
                scale = p.bmm2_scale * exp2f(m - mf) / denom / (kFp8 ? kPScale : 1.f);
            }
            alpha_s[tid] = scale;
            if (p.lse)
                p.lse[t * p.lse_token_stride + h0 + tid] = sum > 0.f ? (m + log2f(sum)) * 0.6931471805599453f : -INFINITY;
        }
        __syncthreads();

        // Output: BF16, 4 consecutive dims per head (FP8 path) or 2 separate ones.
#pragma unroll
        for (int m = 0; m < 4; m++) {
#pragma unroll
            for (int i = 0; i < kSReg; i++) {
                const int col = acc_col(i, lane);
                const float v = o[m][i] * alpha_s[col];
                if constexpr (kFp8) {
                    // Registers i (row g) of M-tiles 2k and 2k+1 and rows g+8 hold dims d0..d0+3.
                    if (m % 2 == 0 && (i % 4) < 2) {
                        const float v1 = o[m][i + 2] * alpha_s[col];
                        const float v2 = o[m + 1][i] * alpha_s[col];
                        const float v3 = o[m + 1][i + 2] * alpha_s[col];
                        __nv_bfloat162 a = __floats2bfloat162_rn(v, v1), b = __floats2bfloat162_rn(v2, v3);
                        uint2 w;
                        w.x = *reinterpret_cast<uint32_t *>(&a);
                        w.y = *reinterpret_cast<uint32_t *>(&b);
                        *reinterpret_cast<uint2 *>(out + col * 512 + out_dim(m, i, wg)) = w;
                    }
                } else {
                    out[col * 512 + out_dim(m, i, wg)] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
                }
            }
        }
    }
};

static_assert(PrefillConfig<false, 64>::kSmemBytes <= 227 * 1024 && PrefillConfig<true, 32>::kSmemBytes <= 227 * 1024,
              "shared memory per CTA");

template <bool kFp8, int kHT>
__global__ void __launch_bounds__(kThreads, 1) sparse_attention_kernel(const __grid_constant__ AttentionParams p)
{
    extern __shared__ uint8_t smem[];
    SparseAttention<kFp8, kHT>::run(p, smem);
}

} // namespace smla
