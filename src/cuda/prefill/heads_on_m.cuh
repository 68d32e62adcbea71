// What the two heads-on-M kernels (bf16m: BF16 wgmma, fp8m: FP8 wgmma) share: a CTA
// computes one token for 64 heads (wgmma's M) over tiles of 64 KV entries; consumer WGs 0
// and 1 take alternate tiles and agree on one running max per pair of tiles, each owning
// half of the output dims. This is their softmax: the scores of a tile (an m64n64
// accumulator, rows r0 and r0 + 8 of this thread), the max hand-off and the epilogue.
#pragma once
#include <cstdint>

#include "../common/sm90.cuh"
#include "../common/softmax.cuh"
#include "../common/timeline.cuh"
#include "../common/token_entries.cuh"
#include "params.cuh"

namespace smla {
namespace heads_on_m {

constexpr int kRows = 64;     // KV entries per tile
constexpr int kHeads = 64;    // heads per CTA: wgmma's M
constexpr int kThreads = 384; // two consumer WGs and the producer WG

// Registers: a CTA of `threads` starts with 65536 / threads each, rounded down to a
// multiple of 8 (168 for 384), and setmaxnreg only moves them between warpgroups: the two
// consumer WGs can grow to C and the producer WGs shrink to P in all (the sum over them)
// only when 2 x 128 C + 128 P fits in that. More blocks setmaxnreg.inc forever.
constexpr bool registers_fit(int consumer, int producers, int threads = kThreads)
{
    return 2 * 128 * consumer + 128 * producers <= threads * (65536 / threads / 8 * 8);
}

// Named barriers (0 is __syncthreads): the consumer WGs' hand-offs within a pair.
// kMax0Ready / kMax1Ready: bf16m's two-step max hand-off (WG 0 proposes, WG 1 settles);
// fp8m's exchange_max uses kMax0Ready alone, synced by both WGs. kP0Ready + w: WG w's P
// of the pair is in shared memory. kWiden0 + w: bf16m's WG w widened a half of its tile.
enum Barrier { kMax0Ready = 1, kMax1Ready, kP0Ready, kP1Ready, kConsumers, kProducer, kWiden0, kWiden1 };

// Scores in log2 units, invalid entries -inf; the max of rows r0, r0 + 8 over the tile.
// valid: bit e set when entry e of the tile holds a row.
__device__ __forceinline__ void mask_and_max(float (&s)[32], uint64_t valid, int lane, float scale_log2,
                                             float (&mx)[2])
{
    // This thread's columns are 2 (lane % 4) + {0, 1} + 8j: one shift, then constant bits.
    const uint64_t bits = valid >> (2 * (lane % 4));
    mx[0] = mx[1] = -INFINITY;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        const bool v = (bits >> (acc_col(i, 0))) & 1; // acc_col(i, lane) - 2 (lane % 4)
        s[i] = v ? s[i] * scale_log2 : -INFINITY;
        mx[(i % 4) / 2] = fmaxf(mx[(i % 4) / 2], s[i]);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
}

// P = exp2(s - m) in place; returns the row sums of this tile.
__device__ __forceinline__ void exponentiate(float (&s)[32], const float (&m)[2], float (&rs)[2])
{
    rs[0] = rs[1] = 0.f;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        const int r = (i % 4) / 2;
        s[i] = fast_exp2(s[i] - (m[r] == -INFINITY ? 0.f : m[r]));
        rs[r] += s[i];
    }
}

// Factor that moves values at max `from` to max `to` (1 while both are -inf).
__device__ __forceinline__ float move_factor(float from, float to) { return to == -INFINITY ? 1.f : fast_exp2(from - to); }

__device__ __forceinline__ void rescale(float (&o)[128], const float (&f)[2])
{
    if (__any_sync(0xffffffffu, f[0] != 1.f || f[1] != 1.f)) {
#pragma unroll
        for (int i = 0; i < 128; i++)
            o[i] *= f[(i % 4) / 2];
    }
}

// A max of rows r0, r0 + 8 for the other WG (one lane per row pair writes it).
__device__ __forceinline__ void publish_max(float *handoff, int r0, int lane, const float (&m)[2])
{
    if (lane % 4 == 0) {
        handoff[r0] = m[0];
        handoff[r0 + 8] = m[1];
    }
}

// bf16m's running max of a pair, agreed in three steps (m: this WG's max for the pair, f:
// the factor from m_run to m). Each step moves the max only when a tile passes it by more
// than `lag` (log2 units; P then reaches 2^lag), so most pairs leave O and l as they are.
// WG 0 first: m_run, or its tile's max past the lag, handed to WG 1.
__device__ __forceinline__ void propose_max(const float (&m_run)[2], const float (&mx)[2], float (&m)[2],
                                            float (&f)[2], float *to_wg1, int r0, int lane, float lag)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        m[r] = mx[r] > m_run[r] + lag ? mx[r] : m_run[r];
        f[r] = move_factor(m_run[r], m[r]);
    }
    publish_max(to_wg1, r0, lane, m);
    named_arrive(kMax0Ready, 256);
}

// WG 1: the pair's final max m, WG 0's value, or its own tile's past the lag, handed
// back; f moves O and l from m_run to it.
__device__ __forceinline__ void final_max(const float (&m_run)[2], const float (&mx)[2], float (&m)[2], float (&f)[2],
                                          const float *from_wg0, float *to_wg0, int r0, int lane, float lag)
{
    named_barrier(kMax0Ready, 256);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const float m0 = from_wg0[r0 + 8 * r];
        m[r] = mx[r] > m0 + lag ? mx[r] : m0;
        f[r] = move_factor(m_run[r], m[r]);
    }
    publish_max(to_wg0, r0, lane, m);
    named_arrive(kMax1Ready, 256);
}

// After a tile's P at the pair's final max m (bf16m's WG 1, both of fp8m's): l and m_run
// at m.
__device__ __forceinline__ void settle_max(const float (&m)[2], const float (&f)[2], const float (&rs)[2],
                                           float (&l)[2], float (&m_run)[2])
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] = l[r] * f[r] + rs[r];
        m_run[r] = m[r];
    }
}

// WG 0, after its tile's P at m: the final max from WG 1, with g the factor that moves
// P, O and l from m to it (l takes this tile's row sums rs and both factors).
__device__ __forceinline__ void take_final_max(const float (&m)[2], const float (&f)[2], const float (&rs)[2],
                                               float (&l)[2], float (&m_run)[2], float (&g)[2], const float *from_wg1,
                                               int r0)
{
    named_barrier(kMax1Ready, 256);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const float m_final = from_wg1[r0 + 8 * r];
        g[r] = m[r] == -INFINITY ? 1.f : fast_exp2(m[r] - m_final);
        l[r] = (l[r] * f[r] + rs[r]) * g[r];
        m_run[r] = m_final;
    }
}

// fp8m's max exchange, in one step: each WG hands the other its tile's row maxima mx, and
// after one barrier both take the pair's max m and f, the factor that moves O and l from
// m_run to m. P, O and l are computed once, at m; neither WG rescales its P for the other.
// (bf16m measured 4-6% slower with it: its WG 0 no longer started P . V on its own tile
// before WG 1's max.) m moves only when the pair's tiles pass m_run by more than `lag`
// (log2 units): P then reaches 2^lag, which the caller's P format must hold, and most
// pairs need no rescale of O and l.
__device__ __forceinline__ void exchange_max(const float (&m_run)[2], const float (&mx)[2], float (&m)[2],
                                             float (&f)[2], float *to_other, const float *from_other, int r0,
                                             int lane, float lag)
{
    publish_max(to_other, r0, lane, mx);
    named_barrier(kMax0Ready, 256);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const float tiles = fmaxf(mx[r], from_other[r0 + 8 * r]);
        m[r] = tiles > m_run[r] + lag ? tiles : m_run[r];
        f[r] = move_factor(m_run[r], m[r]);
    }
}

// The slot ids of pair k's two tiles, one entry per producer thread tid < 64 (the others
// and entries past the work item get none).
__device__ __forceinline__ void pair_slots(const AttentionParams &p, const WorkItem &w, int64_t t, int k, int tid,
                                           EntrySlot (&slots)[2])
{
#pragma unroll
    for (int b = 0; b < 2; b++) {
        const int tile = 2 * k + b, e = (w.first + tile) * kRows + tid;
        slots[b] = tid < kRows && tile < w.ntiles && e < w.n ? entry_slot(p, t, e, w.n_swa) : EntrySlot{-1, false};
    }
}

// Both kernels' first steps: the grid wait and the next launch's permission, between the
// timeline's first two marks.
__device__ __forceinline__ void begin_kernel()
{
    if (threadIdx.x == 0)
        timeline::start();
    grid_wait_then_allow_next();
    if (threadIdx.x == 0)
        timeline::mark(timeline::kGridWaited);
}

// A work item: token, first head and split (items: tokens x 64-head groups x splits).
// kPadded (bf16m at 16 or 32 heads, launch.cu): one group of 64 heads, the problem's
// first, the others reading zeros and writing nothing.
struct CtaWork {
    int64_t t;
    int h0, split;
};
template <bool kPadded> __host__ __device__ __forceinline__ int head_groups(const AttentionParams &p)
{
    return kPadded ? 1 : p.num_heads / kHeads;
}
// The heads of a group that the problem has.
template <bool kPadded> __host__ __device__ __forceinline__ int heads_in_group(const AttentionParams &p)
{
    return kPadded ? p.num_heads : kHeads;
}
template <bool kPadded = false> __host__ __device__ __forceinline__ int64_t num_items(const AttentionParams &p)
{
    return p.num_tokens * head_groups<kPadded>(p) * p.splits;
}
template <bool kPadded = false> __device__ __forceinline__ CtaWork item_work(const AttentionParams &p, int64_t item)
{
    const int groups = head_groups<kPadded>(p);
    const int64_t token_group = item / p.splits;
    return CtaWork{token_group / groups, static_cast<int>(token_group % groups) * kHeads,
                   static_cast<int>(item % p.splits)};
}
// This CTA's item when the grid has one CTA per item.
template <bool kPadded = false> __device__ __forceinline__ CtaWork cta_work(const AttentionParams &p)
{
    return item_work<kPadded>(p, blockIdx.x);
}

// A work item as a walking CTA's producer hands it to the consumers (ntiles 0: there are
// no more).
struct ItemInfo {
    int64_t t;
    int h0, split;
    WorkItem w;
};

// A walking CTA's producer WG (fp8m's and bf16m's kWalk) over its items: blockIdx.x, then
// gridDim.x apart. Each item with work is staged in items[2] (the producer has no
// registers to spare for it), then handed to the consumers as item j in slot j % 2 with
// its Q, loaded once the consumers' last S of item j - 1 is done (q_free). Smem: the
// kernel's view of its shared memory (items, item_ready, q_free); load_q(item): the
// kernel's Q copies by the producer's 128 threads.
template <class Smem, bool kPadded = false> struct ItemWalk {
    const AttentionParams &p;
    const Smem &sh;
    int tid;
    int64_t items, item; // the launch's items; the next one to look at
    int j;               // items handed over

    __device__ ItemWalk(const AttentionParams &p_, const Smem &sh_, int tid_)
        : p(p_), sh(sh_), tid(tid_), items(num_items<kPadded>(p_)), item(blockIdx.x), j(0)
    {
    }
    __device__ ItemInfo &staged() const { return sh.items[2]; }
    // The item the consumers take now (the last one handed over).
    __device__ const ItemInfo &current() const { return sh.items[(j - 1) % 2]; }
    // The next item with work from `item` on, staged; false when there is none.
    __device__ bool next_item()
    {
        for (; item < items; item += gridDim.x) {
            const CtaWork c = item_work<kPadded>(p, item);
            WorkItem w;
            if (work_item(p, c.t, Lookup::kChain, c.h0, heads_in_group<kPadded>(p), c.split, kRows, tid, 128, &w)) {
                if (tid == 0)
                    staged() = ItemInfo{c.t, c.h0, c.split, w};
                named_barrier(kProducer, 128);
                item += gridDim.x;
                return true;
            }
        }
        return false;
    }
    // The staged item (or the end) to the consumers as item j.
    template <class LoadQ> __device__ void hand_over(bool end, LoadQ load_q)
    {
        const int slot = j % 2;
        if (j > 0)
            mbar_wait(sh.q_free, (j - 1) & 1);
        if (!end)
            load_q(staged());
        if (tid == 0) {
            sh.items[slot] = staged();
            if (end)
                sh.items[slot].w.ntiles = 0;
        }
        mbar_arrive_cp_async(&sh.item_ready[slot]); // when this thread's Q copies land
        mbar_arrive(&sh.item_ready[slot]);
        named_barrier(kProducer, 128); // items[slot] written, for the producer too
        j++;
    }
    // The first item handed over; false when the CTA has none (the end handed over).
    template <class LoadQ> __device__ bool start(LoadQ load_q)
    {
        if (!next_item()) {
            hand_over(true, load_q);
            return false;
        }
        hand_over(false, load_q);
        return true;
    }
};

// The slot ids of the pair after pair k of item `cur` (of `pairs`), into `next`: its pair
// k + 1, or, after its last, the staged next item's first (has_next: a walking producer);
// false when there is none.
__device__ __forceinline__ bool next_pair_slots(const AttentionParams &p, const ItemInfo &cur, int k, int pairs,
                                                bool has_next, const ItemInfo &staged, int tid,
                                                EntrySlot (&next)[2])
{
    if (k + 1 < pairs)
        pair_slots(p, cur.w, cur.t, k + 1, tid, next);
    else if (has_next)
        pair_slots(p, staged.w, staged.t, 0, tid, next);
    return k + 1 < pairs || has_next;
}

// The wgmmas read their register operands (A fragments) asynchronously: this keeps the
// compiler from reusing those registers before the wait that ends them.
template <int N> __device__ __forceinline__ void keep_until_done(const uint4 (&a)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" ::"r"(a[i].x), "r"(a[i].y), "r"(a[i].z), "r"(a[i].w));
}

// The CTA's share of token t (heads h0..h0+63, split `split`); false when there is none.
// The consumer threads (tid < 256) write an empty token's output; all threads agree.
template <bool kPadded = false>
__device__ __forceinline__ bool cta_work_item(const AttentionParams &p, int64_t t, int h0, int split, int tid,
                                              WorkItem *w)
{
    return work_item(p, t, Lookup::kOneTrip, h0, heads_in_group<kPadded>(p), split, kRows,
                     tid < 256 ? tid : kHeads * 64, 256, w);
}

// The consumers' Q copies landed and visible to wgmma, in both consumer WGs.
__device__ __forceinline__ void q_landed()
{
    cp_async_commit();
    cp_async_wait<0>();
    fence_proxy_async();
    named_barrier(kConsumers, 256);
}

// The shared memory both kernels lay out the same way after their tiles: the max hand-offs
// ([WG][pair % 2][64]), the row sums ([2 WGs][64]), the final max and output scale ([64]
// each) and the row masks ([buf][64 bits]). Each kernel's view of its shared memory
// derives from it.
struct HandoffSmem {
    static constexpr int kMaxOff = 0, kSumOff = kMaxOff + 2 * 2 * kHeads * 4, kFinalOff = kSumOff + 2 * kHeads * 4,
                         kValidOff = kFinalOff + 2 * kHeads * 4, kBytes = kValidOff + 2 * 8;
    float *max_handoff, *sums, *mfinal, *scale;
    uint32_t *valid; // [buf * 2 + w]: bit r set when row 32w + r holds an entry

    __device__ explicit HandoffSmem(uint8_t *at)
        : max_handoff(reinterpret_cast<float *>(at + kMaxOff)), sums(reinterpret_cast<float *>(at + kSumOff)),
          mfinal(reinterpret_cast<float *>(at + kFinalOff)), scale(mfinal + kHeads),
          valid(reinterpret_cast<uint32_t *>(at + kValidOff))
    {
    }
    // The max WG `wg` hands to the other in pair k: its own array, one per pair parity,
    // so no slot is rewritten before the pair after next.
    __device__ float *handoff(int wg, int k) const { return max_handoff + (wg * 2 + (k & 1)) * kHeads; }
    __device__ uint64_t valid_rows(int buf) const { return *reinterpret_cast<const uint64_t *>(valid + buf * 2); }
};

// One exchange of quad_transpose with lane ^ kMask: a lane whose `first` is set sends
// its words i0, i1 and takes its partner's into them; the partner does so with j0, j1.
template <int kMask>
__device__ __forceinline__ void quad_exchange(uint32_t (&w)[4], bool first, int i0, int i1, int j0, int j1)
{
    uint32_t s0 = first ? w[i0] : w[j0], s1 = first ? w[i1] : w[j1];
    s0 = __shfl_xor_sync(0xffffffffu, s0, kMask);
    s1 = __shfl_xor_sync(0xffffffffu, s1, kMask);
    w[i0] = first ? s0 : w[i0];
    w[i1] = first ? s1 : w[i1];
    w[j0] = first ? w[j0] : s0;
    w[j1] = first ? w[j1] : s1;
}
// Four BF16x2 words per lane of a quad (lane q: columns 2q, 2q + 1 of four 8-column
// blocks, w[b] of block b) transposed across the quad: lane q then holds block q's 8
// columns in order (w[k] from lane k), 16 contiguous bytes. Lanes q and q ^ 2 swap the
// off-diagonal 2 x 2 blocks, then lanes q and q ^ 1 the off-diagonal words of each
// (tests/model/quad_transpose.py).
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4], int lane)
{
    quad_exchange<2>(w, lane & 2, 0, 1, 2, 3);
    quad_exchange<1>(w, lane & 1, 0, 2, 1, 3);
}

// Row sums over the quad and both WGs; final scale or partials; WG wg's 256 dims (tid:
// 0..255 over both consumer WGs). p_scale: the factor P carries (1 for BF16). O goes out
// from registers: each quad transposes its rows' words so that a lane stores 16
// contiguous bytes (a warp's store: 8 rows x 64 bytes, whole sectors). No shared memory
// holds O, so the tiles are free once the last P . V has read them: a walking CTA's
// producer refills them during the epilogue. (Staged through shared memory, O held a
// buffer through its copy-out, and fp8m's next item waited for its V^T: v81, +2-4% on FP8
// prefill. Stored straight from the accumulators' layout, 64 scattered 4-byte stores a
// thread took as long as about two pairs of tiles, v6.1.)
template <bool kPadded = false>
__device__ inline void finish(const AttentionParams &p, const HandoffSmem &sh, float (&o)[128],
                              const float (&m_run)[2], float (&l)[2], int64_t t, int h0, int split,
                              bool split_token, int wg, int tid, int lane, int r0, float p_scale)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
    if (lane % 4 == 0) {
        sh.sums[wg * kHeads + r0] = l[0];
        sh.sums[wg * kHeads + r0 + 8] = l[1];
        if (wg == 0) {
            sh.mfinal[r0] = m_run[0];
            sh.mfinal[r0 + 8] = m_run[1];
        }
    }
    named_barrier(kConsumers, 256);
    if (tid == 0)
        timeline::mark(timeline::kEpilogueSums);
    const int heads = heads_in_group<kPadded>(p); // kPadded: the other heads write nothing
    if (tid < heads)
        finish_head(p, t, h0, tid, split, split_token, sh.mfinal[tid], sh.sums, 2, kHeads, p_scale, sh.scale);
    named_barrier(kConsumers, 256);
    if (tid == 0)
        timeline::mark(timeline::kEpilogueScales);
    const float f[2] = {sh.scale[r0], sh.scale[r0 + 8]};
    // Head r0 + 8r's row: the 64 heads' rows are contiguous in `out`; a split token's
    // partial rows are splits x 512 values apart.
    uint16_t *base;
    int64_t head_stride;
    if (split_token) {
        base = p.partial_o + partial_index(p, t, h0, split) * 512;
        head_stride = int64_t(p.splits) * 512;
    } else {
        base = p.out + t * p.out_token_stride + int64_t(h0) * 512;
        head_stride = 512;
    }
    base += 256 * wg + 8 * (lane % 4);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        uint16_t *row = base + (r0 + 8 * r) * head_stride;
#pragma unroll
        for (int g = 0; g < 8; g++) { // 8-column blocks 4g .. 4g + 3 (accumulators 16g ..)
            uint32_t w[4];
#pragma unroll
            for (int b = 0; b < 4; b++) {
                const int i = 16 * g + 4 * b + 2 * r;
                const __nv_bfloat162 v = __floats2bfloat162_rn(o[i] * f[r], o[i + 1] * f[r]);
                w[b] = *reinterpret_cast<const uint32_t *>(&v);
            }
            quad_transpose(w, lane); // a quad's four lanes hold one head: all store or none
            if (!kPadded || r0 + 8 * r < heads)
                *reinterpret_cast<uint4 *>(row + 32 * g) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
    if (tid == 0)
        timeline::mark(timeline::kEpilogueStored);
}

} // namespace heads_on_m
} // namespace smla
