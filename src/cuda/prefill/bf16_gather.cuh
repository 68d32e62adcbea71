// The gather of the BF16 kernels: a tile of kRows KV rows in the BF16 operand layout
// ([512 / 64 blocks][kRows rows][128 B], 128-byte swizzle) and the query heads, by
// kThreads threads. E4M3 and fp8_ds_mla data is widened to BF16 exactly.
#pragma once
#include <cstdint>

#include "smla.h"
#include "../common/sm90.cuh"
#include "../common/token_entries.cuh"
#include "params.cuh"

namespace smla {

// 16 E4M3 values widened to BF16, exactly: the first 8 in lo, the rest in hi.
__device__ __forceinline__ void widen_chunk(uint4 v, uint4 &lo, uint4 &hi)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    uint32_t o[8];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        o[2 * i] = e4m3x2_to_bf16x2<0>(w[i]);
        o[2 * i + 1] = e4m3x2_to_bf16x2<1>(w[i]);
    }
    lo = make_uint4(o[0], o[1], o[2], o[3]);
    hi = make_uint4(o[4], o[5], o[6], o[7]);
}
// The same times a UE8M0 `scale`, exactly unless a product leaves BF16's range.
__device__ __forceinline__ void widen_chunk(uint4 v, float scale, uint4 &lo, uint4 &hi)
{
    widen_chunk(v, lo, hi);
    lo = make_uint4(bf16x2_times(lo.x, scale), bf16x2_times(lo.y, scale), bf16x2_times(lo.z, scale),
                    bf16x2_times(lo.w, scale));
    hi = make_uint4(bf16x2_times(hi.x, scale), bf16x2_times(hi.y, scale), bf16x2_times(hi.z, scale),
                    bf16x2_times(hi.w, scale));
}
// Raw chunk j of `row` (read from BF16 chunk 2j of a tile of `rows` rows), widened to
// lo, hi, into BF16 chunks 2j and 2j + 1.
__device__ __forceinline__ void store_widened(uint8_t *tile, int rows, int row, int j, uint4 lo, uint4 hi)
{
    *reinterpret_cast<uint4 *>(tile + tile_offset(rows, row, 32 * j)) = lo;
    *reinterpret_cast<uint4 *>(tile + tile_offset(rows, row, 32 * j + 16)) = hi;
}

// Where raw rows land in a BF16 tile of `rows` rows: raw (E4M3) chunk j of the row at
// `data` at BF16 chunk 2j, to be widened in place; fp8_ds_mla RoPE chunk k at BF16 chunk
// 2 * 28 + k, where it is used.
__device__ __forceinline__ void copy_raw_chunk(uint8_t *tile, int rows, int row, uint64_t data, int j)
{
    cp_async16(tile + tile_offset(rows, row, 32 * j), reinterpret_cast<const void *>(data + 16 * j), 16);
}
__device__ __forceinline__ void copy_rope_chunk(uint8_t *tile, int rows, int row, uint64_t data, int k)
{
    cp_async16(tile + tile_offset(rows, row, 16 * (2 * kDsNopeChunks + k)),
               reinterpret_cast<const void *>(data + 16 * (kDsNopeChunks + k)), 16);
}

// Raw chunks j[i] of rows row[i] (tagged addresses in `info`) widened in place, scaled by
// their UE8M0 block scale (the row's 8 bytes in `scales`) for fp8_ds_mla; chunks that did
// not land raw are left alone. Every shared-memory load (tag, scale byte, data) of the kN
// chunks is issued before the first conversion, all unconditionally (in bounds whatever
// the row holds), so their latencies overlap instead of adding up chunk after chunk.
template <int kN>
__device__ __forceinline__ void widen_raw_chunks(uint8_t *tile, const uint8_t *scales, int rows, const uint64_t *info,
                                                 const int (&row)[kN], const int (&j)[kN])
{
    uint32_t tag[kN];
    uint8_t scale[kN];
    uint4 v[kN];
#pragma unroll
    for (int i = 0; i < kN; i++) {
        tag[i] = static_cast<uint32_t>(info[row[i]] & kRowTags);
        scale[i] = scales[8 * row[i] + j[i] / 4];
        v[i] = *reinterpret_cast<const uint4 *>(tile + tile_offset(rows, row[i], 32 * j[i]));
    }
#pragma unroll
    for (int i = 0; i < kN; i++) {
        const bool ds = tag[i] & kRowDsMla;
        if ((tag[i] & kRowE4M3) || (ds && j[i] < kDsNopeChunks)) {
            uint4 lo, hi;
            widen_chunk(v[i], ds ? ue8m0_to_float(scale[i]) : 1.f, lo, hi);
            store_widened(tile, rows, row[i], j[i], lo, hi);
        }
    }
}

// Whether any row can come raw (E4M3 or fp8_ds_mla): then BF16 tiles need widening.
__host__ __device__ inline bool has_raw_rows(const AttentionParams &p)
{
    return (p.swa.rows > 0 && p.swa.format != SMLA_KV_BF16) || (p.extra.rows > 0 && p.extra.format != SMLA_KV_BF16);
}

// BF16 Q rows h0 .. h0+kHT-1 of token t into the operand layout at qs by cp.async, by
// `threads` threads numbered tid; kPadded: rows from `heads` on read nothing from row 0
// (zero-filled: a padded head group). The caller publishes the copies.
template <int kHT, bool kPadded = false>
__device__ __forceinline__ void copy_q_bf16(uint8_t *qs, const AttentionParams &p, int64_t t, int h0, int tid,
                                            int threads, int heads = kHT)
{
    const uint8_t *src = static_cast<const uint8_t *>(p.q) + (t * p.q_token_stride + int64_t(h0) * 512) * 2;
    for (int c = tid; c < kHT * 64; c += threads) {
        const bool real = !kPadded || c / 64 < heads;
        cp_async16(qs + tile_offset(kHT, c / 64, (c % 64) * 16), src + (real ? c / 64 : 0) * 1024 + (c % 64) * 16,
                   real ? 16 : 0);
    }
}

template <int kRows, int kThreads> struct Bf16Gather {
    static_assert(kThreads % 64 == 0 && (kRows * 64) % kThreads == 0 && kRows % (kThreads / 32) == 0, "tile shape");

    // Row (and scale-row) addresses of the item's first two tiles, by threads tid < kRows.
    static __device__ void first_rows(const AttentionParams &p, int64_t t, const WorkItem &w, uint64_t *rowinfo,
                                      uint64_t *scalerows, int tid)
    {
        if (tid < kRows) {
            for (int i = 0; i < 2 && i < w.ntiles; i++) {
                const int e = (w.first + i) * kRows + tid;
                rowinfo[i * kRows + tid] = e < w.n ? entry_row(p, t, e, w.n_swa, &scalerows[i * kRows + tid]) : 0;
            }
        }
    }

    // Chunk c (of 64) of one tile row: `a` its tagged address (0: zero-filled), `scale_row`
    // its fp8_ds_mla scale row's address. See load_tile.
    static __device__ __forceinline__ void copy_row_chunk(uint8_t *tile, uint8_t *scales, int row, int c, uint64_t a,
                                                          uint64_t scale_row, const void *dummy)
    {
        const uint64_t data = a & ~kRowTags;
        if (a & kRowE4M3) {
            if (c < 32)
                copy_raw_chunk(tile, kRows, row, data, c);
        } else if (a & kRowDsMla) {
            if (c < kDsNopeChunks)
                copy_raw_chunk(tile, kRows, row, data, c);
            else if (c < kDsNopeChunks + kDsRopeChunks)
                copy_rope_chunk(tile, kRows, row, data, c - kDsNopeChunks);
            else if (c == kDsNopeChunks + kDsRopeChunks)
                cp_async8(scales + 8 * row, reinterpret_cast<const void *>(scale_row), 8);
        } else {
            const void *src = a ? reinterpret_cast<const void *>(data + 16 * c) : dummy;
            cp_async16(tile + tile_offset(kRows, row, 16 * c), src, a ? 16 : 0);
        }
    }

    // Issues the gather of one tile (rows whose info is 0 are zero-filled), all with
    // cp.async. BF16 rows land where they are used. E4M3 data (`fp8` rows, the NoPE part
    // of `fp8_ds_mla` rows) lands raw: its 16-byte chunk j (16 values) at the place of
    // the BF16 chunk 2j, to be widened in place by dequant_tile; the RoPE part of an
    // `fp8_ds_mla` row lands at BF16 chunks 56..63 and its 8 scale bytes in `scales`.
    // Row addresses are loaded kBatch rows at a time before their copies: a copy's asm
    // keeps a later load behind it, so a load per copy costs a shared-memory round trip.
    static __device__ void load_tile(uint8_t *tile, uint8_t *scales, const uint64_t *info,
                                     const uint64_t *scale_rows, const void *dummy)
    {
        constexpr int kPerThread = kRows * 64 / kThreads, kBatch = 4;
        static_assert(kPerThread % kBatch == 0, "whole batches");
        const int tid = threadIdx.x, c = tid % 64;
#pragma unroll 2
        for (int k0 = 0; k0 < kPerThread; k0 += kBatch) {
            uint64_t a[kBatch], scale_row[kBatch]; // scale_row: read for every row, used for fp8_ds_mla
#pragma unroll
            for (int i = 0; i < kBatch; i++) {
                const int row = tid / 64 + (kThreads / 64) * (k0 + i);
                a[i] = info[row];
                scale_row[i] = scale_rows[row];
            }
#pragma unroll
            for (int i = 0; i < kBatch; i++)
                copy_row_chunk(tile, scales, tid / 64 + (kThreads / 64) * (k0 + i), c, a[i], scale_row[i], dummy);
        }
    }

    // Widens the raw E4M3 chunks load_tile left in the tile to BF16 (times the block
    // scale for `fp8_ds_mla`), exactly. The owner of raw chunk j reads it, then writes
    // BF16 chunks 2j (where it was) and 2j + 1 (free): no thread reads another's output.
    // Within each 8-lane phase, four lanes take row r and four row r + 1, so the 16-byte
    // accesses fall on 8 distinct bank groups.
    static __device__ void dequant_tile(uint8_t *tile, const uint8_t *scales, const uint64_t *info)
    {
        constexpr int kIters = kRows / (kThreads / 32), kBatch = 4;
        static_assert(kIters % kBatch == 0, "whole batches");
        const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
#pragma unroll 1
        for (int k0 = 0; k0 < kIters; k0 += kBatch) {
            int row[kBatch], j[kBatch];
#pragma unroll
            for (int i = 0; i < kBatch; i++) {
                const int block = (k0 + i) * (kThreads / 32) + warp; // row pair block/2, chunk half block%2
                row[i] = (block / 2) * 2 + (lane / 4) % 2;
                j[i] = (block % 2) * 16 + (lane / 8) * 4 + lane % 4;
            }
            widen_raw_chunks(tile, scales, kRows, info, row, j);
        }
    }

    // Q rows h0 .. h0+kHT-1 of token t, in the operand layout (FP8 queries widened to
    // BF16: every thread's loads are issued before the first conversion, so their round
    // trips overlap); kPadded: rows from `heads` on are zeros (a padded head group).
    template <int kHT, bool kPadded = false>
    static __device__ void load_q(uint8_t *qs, const AttentionParams &p, int64_t t, int h0, int heads = kHT)
    {
        const int tid = threadIdx.x;
        if (p.q_is_fp8) {
            constexpr int kChunks = kHT * 32 / kThreads; // 16 E4M3 values each
            static_assert(kHT * 32 % kThreads == 0, "whole chunks per thread");
            const uint8_t *src = static_cast<const uint8_t *>(p.q) + t * p.q_token_stride + int64_t(h0) * 512;
            uint4 v[kChunks];
#pragma unroll
            for (int k = 0; k < kChunks; k++) {
                const int c = tid + k * kThreads;
                v[k] = !kPadded || c / 32 < heads
                           ? *reinterpret_cast<const uint4 *>(src + (c / 32) * 512 + (c % 32) * 16)
                           : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int k = 0; k < kChunks; k++) {
                const int c = tid + k * kThreads;
                uint4 lo, hi;
                widen_chunk(v[k], lo, hi);
                store_widened(qs, kHT, c / 32, c % 32, lo, hi);
            }
        } else {
            copy_q_bf16<kHT, kPadded>(qs, p, t, h0, tid, kThreads, heads);
        }
    }
};

} // namespace smla
