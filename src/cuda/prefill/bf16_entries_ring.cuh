// SM90 sparse MLA attention for 8 and 16 heads over BF16 rows under BF16 queries: KV
// entries on wgmma's M and heads on N (as bf16_shared_tile.cuh), in 64-row tiles that flow
// through a ring of three stages. A CTA per SM walks the work items (token, head group,
// split) blockIdx.x, + gridDim.x, ...; the ring runs on from one item into the next:
//
//   WG 2 and WG 3, the producers (256 threads): look the next item up, hand it to the
//     consumers (two item slots), and put its tile i into stage g % 3 (g counts the CTA's
//     tiles) once the stage's last reader freed it, by 16-byte cp.async copies (thread c
//     copies chunk c % 64 of rows c / 64, + 4, ...) published on the stage's `full`
//     mbarrier as they land; the item's Q follows its first tile's copies, once both
//     consumers' last S of the item before is done. Row addresses come from slot ids
//     loaded two tiles ahead. Empty tokens' outputs are written here.
//   WG 0 takes an item's tiles 0, 2, 4, ..., WG 1 tiles 1, 3, 5, ...: each keeps its own
//     online softmax over all 512 output dims,
//       S^T[64 x HT] = K[64 x 512] . Q^T,   O^T[512 x HT] += V^T[512 x 64] . P^T
//     (8 M blocks of O^T, V^T read with wgmma's transposed-A mode), and frees the stage.
//     At the item's end WG 1 hands its running maxima, row sums and O^T (through an 8 KB
//     scratch, in rounds) to WG 0, which merges them and writes the output.
//
// Why: at 16 heads a row is 32 FLOP a gathered byte, so the rate is the gather's. The
// shared-tile kernel gathers a 128-row tile only between its computations, and a CTA per
// item pays the item's start (lookup, Q, first tile) and end with the SM idle; here 256
// threads issue copies all the time, up to three tiles ahead, across items.
//
// Every head is computed alike whatever kHT, the batch or its segmentation (a token's tiles
// and which WG takes each depend only on the token's entries and split).
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
namespace bf16ring {

constexpr int kRows = 64, kStages = 3, kThreads = 512, kProducerThreads = 256, kMaxHeads = 16;
constexpr int kTileBytes = kRows * 1024, kScratchBytes = 8192;
// Named barriers (0 is __syncthreads): the producers', each consumer WG's, both consumers'.
constexpr int kBarProducers = 1, kBarWg0 = 2, kBarConsumers = 4;
// S^T's K steps over this many accumulators (entries_on_m_mma.cuh): a chain of dependent
// m64n8k16 wgmmas waits out each one's latency (4 chains: +20% at 8 heads, session 37).
// The same at every head tile: the tile follows the batch, and a head's S must not.
constexpr int kSChains = 4;
// Registers a thread: the producers give theirs to the consumers' accumulators.
constexpr int kConsumerRegs = 168, kProducerRegs = 88;
static_assert(128 * 2 * (kConsumerRegs + kProducerRegs) <= 65536, "register file");

// An item handed from the producers to the consumers; w.ntiles == 0: no more items.
struct RingItem {
    int64_t t;
    int h0, split;
    WorkItem w;
};

template <int kHT> struct Layout {
    static constexpr int kTiles = 0;                                 // [stage][8 blocks][64 rows][128 B]
    static constexpr int kQ = kTiles + kStages * kTileBytes;         // [8 blocks][kHT][128 B]
    static constexpr int kP = kQ + kHT * 1024;                       // [wg][kHT rows of 64 entries]
    static constexpr int kScratch = kP + 2 * kHT * kRows * 2;        // WG 1's O^T on its way to WG 0
    static constexpr int kRowInfo = kScratch + kScratchBytes;        // [stage][64] tagged addresses
    static constexpr int kColMax = kRowInfo + kStages * kRows * 8;   // [wg][4 warps][kHT]
    static constexpr int kSums = kColMax + 2 * 4 * kHT * 4;          // [8 warps][kHT]
    static constexpr int kMax = kSums + 8 * kHT * 4;                 // [wg][kHT]
    static constexpr int kScale = kMax + 2 * kHT * 4;                // [kHT]
    static constexpr int kItems = kScale + kHT * 4;                  // [2] RingItem
    // full[3], empty[3], q_full, q_empty, item_full[2], item_empty[2]
    static constexpr int kBars = kItems + 2 * sizeof(RingItem);
    static constexpr int kBytes = kBars + (2 * kStages + 6) * 8 + 1024; // + alignment slack
};
static_assert(Layout<kMaxHeads>::kBytes <= 227 * 1024, "shared memory per CTA");
static_assert(sizeof(RingItem) % 8 == 0, "mbarriers after the items stay aligned");

struct Ring {
    uint8_t *tiles, *q, *p;
    float *scratch;
    uint64_t *rowinfo;
    float *colmax, *sums, *max, *scale;
    RingItem *items;
    uint64_t *full, *empty, *q_full, *q_empty, *item_full, *item_empty;
    template <int kHT> __device__ static Ring at(uint8_t *smem)
    {
        using L = Layout<kHT>;
        Ring r;
        r.tiles = smem + L::kTiles;
        r.q = smem + L::kQ;
        r.p = smem + L::kP;
        r.scratch = reinterpret_cast<float *>(smem + L::kScratch);
        r.rowinfo = reinterpret_cast<uint64_t *>(smem + L::kRowInfo);
        r.colmax = reinterpret_cast<float *>(smem + L::kColMax);
        r.sums = reinterpret_cast<float *>(smem + L::kSums);
        r.max = reinterpret_cast<float *>(smem + L::kMax);
        r.scale = reinterpret_cast<float *>(smem + L::kScale);
        r.items = reinterpret_cast<RingItem *>(smem + L::kItems);
        r.full = reinterpret_cast<uint64_t *>(smem + L::kBars);
        r.empty = r.full + kStages;
        r.q_full = r.empty + kStages;
        r.q_empty = r.q_full + 1;
        r.item_full = r.q_empty + 1;
        r.item_empty = r.item_full + 2;
        return r;
    }
    __device__ uint8_t *tile(int stage) const { return tiles + stage * kTileBytes; }
};

// Work item `item` of the launch: token, first head, split.
__device__ __forceinline__ void item_coords(const AttentionParams &p, int kHT, int64_t item, RingItem *it)
{
    const int groups = p.num_heads / kHT;
    const int64_t token_group = item / p.splits;
    it->t = token_group / groups;
    it->h0 = static_cast<int>(token_group % groups) * kHT;
    it->split = static_cast<int>(item % p.splits);
}

// ---- producers ------------------------------------------------------------------------

// The CTA's tile g: row addresses from the slot ids (threads ptid < 64), then every
// producer thread's 16 copies: chunk c = ptid % 64 of rows ptid / 64 + 4 k. An invalid
// row (address 0) is zero-filled from a valid address (Q).
__device__ inline void produce_tile(const AttentionParams &p, const Ring &r, int g, int ptid, EntrySlot slot)
{
    const int stage = g % kStages;
    mbar_wait(&r.empty[stage], ((g / kStages) & 1) ^ 1);
    uint64_t *info = r.rowinfo + stage * kRows;
    if (ptid < kRows)
        info[ptid] = slot_row(p, slot);
    named_barrier(kBarProducers, kProducerThreads);
    const int c = ptid % 64, r0 = ptid / 64;
    // Rows r0 + 4k: row % 8 is r0 for even k and r0 + 4 for odd k (tile_offset's swizzle).
    uint8_t *block = r.tile(stage) + (c / 8) * (kRows * 128);
    uint8_t *const dst[2] = {block + (((c % 8) ^ r0) << 4), block + (((c % 8) ^ r0 ^ 4) << 4)};
#pragma unroll
    for (int k0 = 0; k0 < 16; k0 += 4) {
        uint64_t a[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            a[j] = info[r0 + 4 * (k0 + j)];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int row = r0 + 4 * (k0 + j);
            const void *src = a[j] ? reinterpret_cast<const void *>(a[j] + 16 * c) : p.q;
            cp_async16(dst[j % 2] + row * 128, src, a[j] ? 16 : 0);
        }
    }
    mbar_arrive_cp_async(&r.full[stage]); // when this thread's copies land
    if (ptid < kRows)
        mbar_arrive(&r.full[stage]); // the tile's row addresses are in shared memory
}

// The producers' walk: each item with tiles handed over (slot n % 2), its tiles, and its
// Q after the first tile's copies; then the end mark.
template <int kHT> __device__ inline void produce(const AttentionParams &p, const Ring &r, int ptid)
{
    const int64_t items = p.num_tokens * (p.num_heads / kHT) * p.splits;
    int g = 0, n = 0;
    for (int64_t item = blockIdx.x;; item += gridDim.x) {
        RingItem it;
        const bool more = item < items;
        if (more) {
            item_coords(p, kHT, item, &it);
            const ItemKind kind = item_kind(p, it.t, it.split, kRows, &it.w);
            if (kind == ItemKind::kEmptyToken)
                write_empty_token(p, it.t, it.h0, kHT, ptid, kProducerThreads);
            if (kind != ItemKind::kTiles)
                continue;
        } else {
            it.w.ntiles = 0;
        }
        if (ptid == 0) {
            mbar_wait(&r.item_empty[n % 2], ((n / 2) & 1) ^ 1);
            r.items[n % 2] = it;
            mbar_arrive(&r.item_full[n % 2]);
        }
        if (!more) {
            cp_async_wait<0>(); // no copy outlives its thread
            return;
        }
        // Slot ids two tiles ahead of their use (threads ptid < 64): a load's latency is
        // hidden behind the copies of the tiles between.
        const auto load_slot = [&](int i) {
            const int e = (it.w.first + i) * kRows + ptid;
            return ptid < kRows && i < it.w.ntiles && e < it.w.n ? entry_slot(p, it.t, e, it.w.n_swa)
                                                                 : EntrySlot{-1, true};
        };
        EntrySlot now = load_slot(0), next = load_slot(1);
        for (int i = 0; i < it.w.ntiles; i++) {
            const EntrySlot after = load_slot(i + 2);
            produce_tile(p, r, g + i, ptid, now);
            now = next;
            next = after;
            if (i == 0) { // Q, once the consumers' S of the item before is done
                mbar_wait(r.q_empty, (n & 1) ^ 1);
                copy_q_bf16<kHT>(r.q, p, it.t, it.h0, ptid, kProducerThreads);
                mbar_arrive_cp_async(r.q_full);
            }
        }
        g += it.w.ntiles;
        n++;
    }
}

// ---- consumers ------------------------------------------------------------------------

template <int kHT> struct Consumer {
    static constexpr int kSReg = kHT / 2; // S^T accumulators per thread
    static constexpr int kCols = kHT / 4; // distinct heads per thread

    float o[8][kSReg];
    float l[kCols], m[kCols];

    // This WG's tiles wg, wg + 2, ... of an item of ntiles tiles, the CTA's tiles g0, ...,
    // its n-th item (Q's phase). After its last S (or at once, without a tile) it frees Q.
    __device__ void run(const AttentionParams &p, const Ring &r, int ntiles, int g0, int n, int wg, int warp, int lane)
    {
#pragma unroll
        for (int mb = 0; mb < 8; mb++)
#pragma unroll
            for (int i = 0; i < kSReg; i++)
                o[mb][i] = 0.f;
#pragma unroll
        for (int c = 0; c < kCols; c++) {
            l[c] = 0.f;
            m[c] = -INFINITY;
        }
        if (wg >= ntiles) {
            // No tile: it frees Q at once and does not wait for it (the next item's Q may
            // land before it would look, and its wait would then mean a later phase).
            mbar_arrive(r.q_empty);
        } else {
            mbar_wait(r.q_full, n & 1);
            fence_proxy_async(); // Q landed through cp.async: visible to wgmma
        }
        float *colmax = r.colmax + wg * 4 * kHT;
        uint8_t *ps = r.p + wg * (kHT * kRows * 2);
        const int r_lo = warp * 16 + lane / 4;
        for (int i = wg; i < ntiles; i += 2) {
            const int g = g0 + i, stage = g % kStages;
            mbar_wait(&r.full[stage], (g / kStages) & 1);
            fence_proxy_async();
            const uint8_t *tile = r.tile(stage);
            const uint64_t *info = r.rowinfo + stage * kRows;
            const bool v_lo = info[r_lo] != 0, v_hi = info[r_lo + 8] != 0;
            float s[kSReg];
            score_entries_on_m<kHT, kRows, kSChains>(s, tile, r.q);
            if (i + 2 >= ntiles)
                mbar_arrive(r.q_empty); // this WG's last S of the item

            // Scores in log2 units, masked rows -inf; the tile's column maxima over the WG.
#pragma unroll
            for (int j = 0; j < kSReg; j++)
                s[j] = ((j % 4) >= 2 ? v_hi : v_lo) ? s[j] * p.scale_log2 : -INFINITY;
#pragma unroll
            for (int c = 0; c < kCols; c++) {
                const int j = col_reg(c);
                const float cmax = warp_column_max(s[j], s[j + 2]);
                if (lane < 4)
                    colmax[warp * kHT + acc_col(j, lane)] = cmax;
            }
            named_barrier(kBarWg0 + wg, 128);
            float alpha[kCols], m_use[kCols];
#pragma unroll
            for (int c = 0; c < kCols; c++) {
                const int col = acc_col(col_reg(c), lane);
                float tmax = colmax[col];
#pragma unroll
                for (int w = 1; w < 4; w++)
                    tmax = fmaxf(tmax, colmax[w * kHT + col]);
                const float m_new = fmaxf(m[c], tmax);
                alpha[c] = m_new == -INFINITY ? 1.f : fast_exp2(m[c] - m_new);
                m_use[c] = m_new == -INFINITY ? 0.f : m_new;
                m[c] = m_new;
            }

            // P = exp2(s - m); row sums; P^T to shared memory in the O^T operand layout.
#pragma unroll
            for (int c = 0; c < kCols; c++) {
                const int j = col_reg(c);
                const float p_lo = fast_exp2(s[j] - m_use[c]), p_hi = fast_exp2(s[j + 2] - m_use[c]);
                l[c] = l[c] * alpha[c] + p_lo + p_hi;
                s[j] = p_lo;
                s[j + 2] = p_hi;
            }
#pragma unroll
            for (int j = 0; j < kSReg; j++) {
                const int row = r_lo + ((j % 4) >= 2 ? 8 : 0);
                *reinterpret_cast<__nv_bfloat16 *>(ps + tile_offset(kHT, acc_col(j, lane), row * 2)) =
                    __float2bfloat16_rn(s[j]);
            }
            fence_proxy_async();
            named_barrier(kBarWg0 + wg, 128); // P whole; every thread read colmax
#pragma unroll
            for (int mb = 0; mb < 8; mb++)
#pragma unroll
                for (int j = 0; j < kSReg; j++)
                    o[mb][j] *= alpha[reg_col(j)];
            accumulate_entries_on_m<kHT, kRows, 8, 4>(o, tile, ps);
            mbar_arrive(&r.empty[stage]);
        }
    }
};

// Both consumer WGs, an item's tiles done: each rescales to the heads' common maxima, the
// row sums of all eight warps go to r.sums, WG 1's O^T goes to WG 0 through the scratch
// (kBlocks M blocks a round), and WG 0 adds it and writes the output (or the split's
// partial). The last barrier lets WG 1 go on once WG 0 has read r.max and r.sums.
template <int kHT>
__device__ inline void merge_and_store(const AttentionParams &p, const Ring &r, Consumer<kHT> &cs, const RingItem &it,
                                       int wg, int warp, int lane)
{
    constexpr int kCols = Consumer<kHT>::kCols, kSReg = Consumer<kHT>::kSReg;
    constexpr int kBlocks = kScratchBytes / (kSReg * 128 * 4);
    static_assert(kBlocks >= 1 && 8 % kBlocks == 0, "whole M blocks a round");
    const int ctid = warp * 32 + lane; // within the WG
    if (warp == 0 && lane < 4) {
#pragma unroll
        for (int c = 0; c < kCols; c++)
            r.max[wg * kHT + acc_col(col_reg(c), lane)] = cs.m[c];
    }
    named_barrier(kBarConsumers, 256);
    float f[kCols];
#pragma unroll
    for (int c = 0; c < kCols; c++) {
        const int col = acc_col(col_reg(c), lane);
        const float m_all = fmaxf(r.max[col], r.max[kHT + col]);
        f[c] = cs.m[c] == -INFINITY ? 0.f : fast_exp2(cs.m[c] - m_all);
        cs.l[c] *= f[c];
    }
    store_warp_row_sums<kCols, kHT>(cs.l, r.sums, wg * 4 + warp, lane);
#pragma unroll
    for (int mb = 0; mb < 8; mb++)
#pragma unroll
        for (int i = 0; i < kSReg; i++)
            cs.o[mb][i] *= f[reg_col(i)];
#pragma unroll
    for (int mb0 = 0; mb0 < 8; mb0 += kBlocks) {
        if (wg == 1) {
#pragma unroll
            for (int b = 0; b < kBlocks; b++)
#pragma unroll
                for (int i = 0; i < kSReg; i++)
                    r.scratch[(b * kSReg + i) * 128 + ctid] = cs.o[mb0 + b][i];
        }
        named_barrier(kBarConsumers, 256);
        if (wg == 0) {
#pragma unroll
            for (int b = 0; b < kBlocks; b++)
#pragma unroll
                for (int i = 0; i < kSReg; i++)
                    cs.o[mb0 + b][i] += r.scratch[(b * kSReg + i) * 128 + ctid];
        }
        named_barrier(kBarConsumers, 256);
    }
    if (wg == 0 && ctid < kHT)
        finish_head(p, it.t, it.h0, ctid, it.split, it.w.split, fmaxf(r.max[ctid], r.max[kHT + ctid]), r.sums, 8,
                    kHT, 1.f, r.scale);
    named_barrier(kBarConsumers, 256);
    if (wg == 1)
        return;
    uint16_t *out = p.out + it.t * p.out_token_stride + int64_t(it.h0) * 512;
#pragma unroll
    for (int mb = 0; mb < 8; mb++)
#pragma unroll
        for (int i = 0; i < kSReg; i++) {
            const int col = acc_col(i, lane);
            const uint16_t b = __bfloat16_as_ushort(__float2bfloat16_rn(cs.o[mb][i] * r.scale[col]));
            if (it.w.split)
                p.partial_o[partial_index(p, it.t, it.h0 + col, it.split) * 512 +
                            entries_on_m_out_dim(mb, i, warp, lane)] = b;
            else
                out[col * 512 + entries_on_m_out_dim(mb, i, warp, lane)] = b;
        }
}

template <int kHT>
__global__ void __launch_bounds__(kThreads, 1) kernel(const __grid_constant__ AttentionParams p)
{
    static_assert(kHT == 8 || kHT == kMaxHeads, "8 or 16 heads a CTA");
    grid_wait_then_allow_next();
    extern __shared__ uint8_t smem_raw[];
    const Ring r = Ring::at<kHT>(align_smem_1024(smem_raw));
    const int tid = threadIdx.x;
    if (tid < kStages) {
        mbar_init(&r.full[tid], kProducerThreads + kRows);
        mbar_init(&r.empty[tid], 128);
    }
    if (tid < 2) {
        mbar_init(&r.item_full[tid], 1);
        mbar_init(&r.item_empty[tid], 256);
    }
    if (tid == 0) {
        mbar_init(r.q_full, kProducerThreads);
        mbar_init(r.q_empty, 256);
    }
    mbar_init_fence();
    __syncthreads();
    const int wg = warp_uniform(tid / 128), warp = (tid % 128) / 32, lane = tid % 32;
    if (wg >= 2) {
        regs_decrease<kProducerRegs>();
        produce<kHT>(p, r, tid - 256);
        return;
    }
    regs_increase<kConsumerRegs>();
    Consumer<kHT> cs;
    for (int g = 0, n = 0;; n++) {
        mbar_wait(&r.item_full[n % 2], (n / 2) & 1);
        const RingItem it = r.items[n % 2];
        mbar_arrive(&r.item_empty[n % 2]);
        if (it.w.ntiles == 0)
            return;
        cs.run(p, r, it.w.ntiles, g, n, wg, warp, lane);
        merge_and_store<kHT>(p, r, cs, it, wg, warp, lane);
        g += it.w.ntiles;
    }
}

} // namespace bf16ring
} // namespace smla
