// SM90 sparse MLA attention, FP8 path for 64-head groups (64 and 128 heads, E4M3 queries
// over `fp8` caches): bf16m's structure (bf16_heads_on_m.cuh) on FP8 wgmma. One CTA
// computes one token for 64 heads, 64 KV entries (a tile) at a time:
//
//   WG 2, the gather WG: copies a tile's E4M3 rows with cp.async (K: [64 entries][512 B],
//     the B operand of S).
//   WG 3, the transpose WG: writes them transposed (V^T: [512 dims][64 entries]): FP8
//     wgmma reads only K-major operands, so P . V needs the entries contiguous. (One
//     producer WG doing both bound the pair at the sum of the two: v141, PERF.)
//   WG 0 takes the even tiles, WG 1 the odd ones, two at a time: S = Q . K^T for its own
//     tile (m64n64k32), then O_half += P . V_half over both tiles of the pair (m64n128k32),
//     WG 0 owning output dims 0-255, WG 1 dims 256-511: its own P from registers, the
//     other WG's from shared memory. The max exchange is bf16m's (heads_on_m.cuh).
//
// Precision (DESIGN section 8: FP8 queries within 3e-2 of out and 1e-2 of the LSE): FP8
// wgmma keeps only ~14 bits of a running sum, so S chains kChain K steps (128 dims) in
// the tensor core before each FP32 add (one K step per add: v11 measured 1.1e-3 of LSE
// for two); P is one E4M3 plane of 256 p (~2.6e-2 of out on random V: the plane's 3
// mantissa bits, scripts/p_plane_error.py).
//
// P's K order: the A fragment of an m64nNk32 E4M3 wgmma gives a thread bytes 4q..4q+3 and
// 16+4q..16+4q+3 of its rows (q = lane % 4), while its S accumulators hold entries
// 8j + 2q + {0, 1}. Instead of moving bytes between lanes, the K order of P and V^T is a
// permutation of the entries: K position 32st + 16hf + 4q + b holds entry
// 32st + 16hf + 8(b / 2) + 2q + b % 2 (st: K step, hf: half of it, b: byte).
//
// Two launch forms (kWalk), with the same arithmetic per item. kWalk = false: a CTA per
// work item; all its threads look the item up, the consumers load Q. kWalk = true, for
// launches with many items and no split token (prefill): a CTA per SM walks the items
// (blockIdx.x, + gridDim.x, ...); the gather WG looks each up, loads its Q once the
// consumers' last S of the item before is done, and copies its first pair of tiles while
// they finish that item's last pair and epilogue (which keeps O in registers, so the last
// pair's V^T is freed as any other's). Walking costs decode batches (one or two items per
// CTA) 1-5% (docs/perf/LOG.md, v21), hence the two forms rather than a runtime branch, whose code
// cost registers (v21b).
//
// Every 64- or 128-head FP8 problem takes this kernel, whatever the batch, and each head's
// arithmetic is fixed, so outputs do not depend on the batch or the segmentation.
#pragma once
#include <cstdint>

#include "../common/sm90.cuh"
#include "../common/softmax.cuh"
#include "../common/timeline.cuh"
#include "../common/token_entries.cuh"
#include "../common/wgmma_ops.cuh"
#include "heads_on_m.cuh"
#include "params.cuh"

namespace smla {
namespace fp8m {

using namespace heads_on_m;
// Two consumer WGs, the gather WG and the transpose WG (heads_on_m's kThreads is bf16m's
// three WGs).
constexpr int kThreads = 512;
constexpr int kConsumerRegs = 208, kGatherRegs = 48, kTransposeRegs = 40;
static_assert(registers_fit(kConsumerRegs, kGatherRegs + kTransposeRegs, kThreads), "register file");

// The timeline's sums (timeline.cuh), cycles over a CTA's pairs: the transpose WG's
// first thread waiting for K to land, for a free V^T half, transposing (fence and
// arrivals included); the gather WG's waiting for a free K buffer (S done and K
// transposed) and refilling one (rows, barrier, copies); WG 0 waiting for K halves in S, in S as a whole (waits included) and waiting
// for V^T halves; from S to its P stored (mask, max exchange, softmax, O's rescale); from
// there to the pair's end (P . V: waits for V^T and the other WG's P included).
enum Sum {
    kSumKLanded, kSumVFree, kSumTranspose, kSumKFree, kSumRefill, kSumKReady, kSumScore, kSumVReady,
    kSumSoftmax, kSumPv
};
constexpr float kPScale = 256.0f; // keeps p >= 2^-14 out of E4M3's subnormals
// How far a pair's tiles may pass the running max before it moves (exchange_max):
// 2^0.8 x kPScale = 445.7 <= 448, E4M3's largest value.
constexpr float kMaxLag = 0.8f;

struct Layout {
    static constexpr int kQOff = 0;                           // [64 heads][512] E4M3, 128 B column blocks
    static constexpr int kKBytes = kRows * 512;               // [64 entries][512], 128 B column blocks
    static constexpr int kKOff = kQOff + kHeads * 512;        // 2 buffers
    static constexpr int kVBytes = 512 * kRows;               // [512 dims][64 entries], 64 B swizzle
    static constexpr int kVHalfBytes = kVBytes / 2;           // 256 dims: one consumer WG's
    static constexpr int kVOff = kKOff + 2 * kKBytes;         // 2 buffers
    static constexpr int kPPlane = kHeads * kRows;            // [64 heads][64 entries], 64 B swizzle
    static constexpr int kPOff = kVOff + 2 * kVBytes;         // [buf]
    static constexpr int kRowOff = kPOff + 2 * kPPlane;       // [buf][64] row addresses
    static constexpr int kItemOff = kRowOff + 2 * kRows * 8;  // ItemInfo [slot], then the gather WG's next
    static constexpr int kHandoffOff = kItemOff + 3 * 64;       // HandoffSmem
    static constexpr int kBarOff = kHandoffOff + HandoffSmem::kBytes; // mbarriers
    // k_ready [buf][half] (K copies landed, row addresses written), v_ready [buf][half]
    // (transposed), k_free [buf] (S and the row mask read), v_free [buf][half] (P . V over
    // that half done), item_ready [slot] (the item's ItemInfo written and its Q landed),
    // q_free (the consumers' last S of the item done), k_read [buf] (both halves of K
    // transposed)
    static constexpr int kBars = 4 + 4 + 2 + 4 + 2 + 1 + 2;
    static constexpr int kBytes = kBarOff + kBars * 8 + 1024; // + alignment slack
};
static_assert(Layout::kBytes <= 227 * 1024, "shared memory per CTA");
static_assert(sizeof(ItemInfo) <= 64, "item slot");

struct Shared : HandoffSmem {
    uint8_t *q, *k_tiles, *v_tiles, *p;
    uint64_t *rows;
    ItemInfo *items; // [slot], then the gather WG's next item
    uint64_t *k_ready, *v_ready, *k_free, *v_free, *item_ready, *q_free, *k_read;

    __device__ explicit Shared(uint8_t *smem)
        : HandoffSmem(smem + Layout::kHandoffOff), q(smem + Layout::kQOff), k_tiles(smem + Layout::kKOff),
          v_tiles(smem + Layout::kVOff), p(smem + Layout::kPOff),
          rows(reinterpret_cast<uint64_t *>(smem + Layout::kRowOff)),
          items(reinterpret_cast<ItemInfo *>(smem + Layout::kItemOff)),
          k_ready(reinterpret_cast<uint64_t *>(smem + Layout::kBarOff)), v_ready(k_ready + 4), k_free(v_ready + 4),
          v_free(k_free + 2), item_ready(v_free + 4), q_free(item_ready + 2), k_read(q_free + 1)
    {
    }
    __device__ uint8_t *k(int buf) const { return k_tiles + buf * Layout::kKBytes; }
    __device__ uint8_t *v(int buf) const { return v_tiles + buf * Layout::kVBytes; }
    __device__ uint8_t *p_plane(int buf) const { return p + buf * Layout::kPPlane; }
};

// ---- gather and transpose WGs --------------------------------------------------------

// One half (256 dims) of K buffer `buf` by the 128 gather threads: thread (g = tid / 8,
// i = tid % 8) copies the 16-byte chunks 16 half + i and 16 half + i + 8 of rows g,
// g + 16, g + 32, g + 48 (one swizzle for all: row % 8 = g % 8). Invalid rows are
// zero-filled. The four row addresses are loaded before the first copy (one shared-memory
// round trip, not one per row: a copy's asm keeps later loads behind it).
__device__ __forceinline__ void copy_k_half(const AttentionParams &p, const Shared &sh, int buf, int half, int tid)
{
    const int g = tid / 8, i = tid % 8;
    uint8_t *dst = sh.k(buf) + 2 * half * (kRows * 128) + swizzle128(g, 16 * i);
    uint64_t rows[4];
#pragma unroll
    for (int jr = 0; jr < 4; jr++)
        rows[jr] = sh.rows[buf * kRows + g + 16 * jr];
#pragma unroll
    for (int jr = 0; jr < 4; jr++) {
        const uint64_t a = rows[jr];
        // An invalid row reads nothing (size 0) from a valid address: Q.
        const uint8_t *src = (a ? reinterpret_cast<const uint8_t *>(a) : static_cast<const uint8_t *>(p.q)) +
                             256 * half + 16 * i;
#pragma unroll
        for (int m = 0; m < 2; m++)
            cp_async16(dst + jr * 16 * 128 + m * (kRows * 128), src + 128 * m, a ? 16 : 0);
    }
}

// One half (256 dims) of buffer `buf` transposed from K to V^T by the 128 transpose
// threads. A unit is one entry quad (the 4 entries at K positions 32st + 16hf + 4q + 0..3)
// times one 16-byte chunk (16 dims): four 16-byte loads, four 4x4 byte transposes, and
// sixteen 4-byte stores, one per dim row. Lane bits: q (0-1), the chunk's low bit (2),
// hf (3), st (4), so the loads of a quarter warp fall on 8 distinct bank groups and the
// stores of a warp on 32 distinct banks.
__device__ inline void transpose_half(const Shared &sh, int buf, int half, int tid)
{
    const int warp = tid / 32, lane = tid % 32;
    const int q = lane % 4, cbit = (lane / 4) % 2, hf = (lane / 8) % 2, st = lane / 16;
    const int base_row = 32 * st + 16 * hf + 2 * q; // the quad: base_row + {0, 1, 8, 9}
    const int c7 = 2 * warp + cbit;                  // chunk % 8 (chunk = 16 half + 8 it + c7)
    const uint8_t *k_tile = sh.k(buf);
    // Row base_row + o, chunk c: (2 half + it) * 8 KB + row * 128 + ((c7 ^ row % 8) << 4).
    const uint8_t *rd[2];
#pragma unroll
    for (int b = 0; b < 2; b++)
        rd[b] = k_tile + 2 * half * (kRows * 128) + base_row * 128 + ((c7 ^ ((2 * q + b) & 7)) << 4);
    // Dim row d = 256 half + 16 (8 it + c7) + 4 wd + j, K byte 32 st + 16 hf + 4q: the
    // 64 B swizzle XORs chunk 2st + hf with (d >> 1) & 3 = (2 wd + j / 2) & 3.
    // Store k of a word group writes dim j = k ^ cbit, so the two lane halves that share
    // the other bank bits fall on opposite halves of the banks (d % 2 differs).
    uint8_t *v_tile = sh.v(buf) + (256 * half + 16 * c7) * 64 + 4 * q;
    uint8_t *v_row[2] = {v_tile + cbit * 64, v_tile - cbit * 64}; // for even, odd k
    const uint32_t sel_lo = cbit ? 0x4051 : 0x5140, sel_hi = cbit ? 0x6273 : 0x7362;
    uint32_t wr[4];
#pragma unroll
    for (int x = 0; x < 4; x++)
        wr[x] = static_cast<uint32_t>(((2 * st + hf) ^ x) << 4);
#pragma unroll
    for (int it = 0; it < 2; it++) {
        uint4 in[4];
        const int roff[4] = {0, 1, 8, 9};
#pragma unroll
        for (int r = 0; r < 4; r++)
            in[r] = *reinterpret_cast<const uint4 *>(rd[roff[r] & 1] + it * (kRows * 128) + roff[r] * 128);
#pragma unroll
        for (int wd = 0; wd < 4; wd++) {
            const uint32_t w[4] = {(&in[0].x)[wd], (&in[1].x)[wd], (&in[2].x)[wd], (&in[3].x)[wd]};
            uint32_t t[4]; // t[k]: dim k ^ cbit of the group
            transpose4x4_bytes(w, t, sel_lo, sel_hi);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int d = it * 128 + 4 * wd + k; // dim row offset from the thread's base (for cbit 0)
                *reinterpret_cast<uint32_t *>(v_row[k % 2] + d * 64 + wr[(2 * wd + k / 2) & 3]) = t[k];
            }
        }
    }
}

// The order of a pair's four V^T halves: the order in which the consumers free them in
// the pair before and need them in this one (WG 0's own, WG 1's own, WG 0's other,
// WG 1's other).
__device__ constexpr int transpose_buf(int x) { return x == 0 || x == 3 ? 0 : 1; }
__device__ constexpr int transpose_half_of(int x) { return x == 0 || x == 2 ? 0 : 1; }

// Q of heads h0..h0+63 of token t by kBy threads: [64 heads][512] E4M3, 128 B column
// blocks.
template <int kBy> __device__ inline void load_q(const Shared &sh, const AttentionParams &p, int64_t t, int h0, int tid)
{
    const uint8_t *src = static_cast<const uint8_t *>(p.q) + t * p.q_token_stride + int64_t(h0) * 512;
#pragma unroll 4
    for (int c = tid; c < kHeads * 32; c += kBy)
        cp_async16(sh.q + tile_offset(kHeads, c / 32, (c % 32) * 16), src + (c / 32) * 512 + (c % 32) * 16, 16);
}

// The gather WG. It walks the CTA's work items, skips those without work (writing an
// empty token's output on the way) and hands each to the consumers with its Q. Per pair
// of tiles, once each buffer's S is done and the transpose WG has read its K, the next
// pair's rows and K copies, which run while the consumers finish this pair. Pairs run on
// across items (gk counts them for the barrier phases). Slot ids are loaded a pair ahead.
// Without kWalk: the one item `single`, no hand-over.
template <bool kWalk> __device__ void gather(const AttentionParams &p, const Shared &sh, int tid, const ItemInfo &single)
{
    ItemWalk<Shared> walk(p, sh, tid);
    const ItemInfo &staged = walk.staged();
    const auto load_item_q = [&](const ItemInfo &it) { load_q<128>(sh, p, it.t, it.h0, tid); };
    // Rows and K of buffer b from slot ids `slot`; the K halves are published as they land.
    auto fill = [&](int b, EntrySlot slot) {
        if (tid < kRows) { // warps 0 and 1
            const uint64_t row = slot_row(p, slot) & ~kRowTags; // every row is E4M3 here
            sh.rows[b * kRows + tid] = row;
            const uint32_t bits = __ballot_sync(0xffffffffu, row != 0);
            if (tid % 32 == 0)
                sh.valid[b * 2 + tid / 32] = bits;
        }
        named_barrier(kProducer, 128);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            copy_k_half(p, sh, b, h, tid);
            mbar_arrive_cp_async(&sh.k_ready[b * 2 + h]); // when this thread's copies land
            mbar_arrive(&sh.k_ready[b * 2 + h]);          // its row addresses are in shared memory
        }
    };
    if constexpr (kWalk) {
        if (!walk.start(load_item_q))
            return;
    }
    EntrySlot next[2];
    const ItemInfo &first = kWalk ? sh.items[0] : single;
    pair_slots(p, first.w, first.t, 0, tid, next);
    if (tid == 0)
        timeline::mark(timeline::kProducerSlots);
    fill(0, next[0]);
    fill(1, next[1]);
    if (tid == 0)
        timeline::mark(timeline::kProducerFilled);
    bool has_next = kWalk && walk.next_item(); // while the first copies are in flight
    int gk = 0;
    uint64_t sums[timeline::kSums] = {}; // timeline builds only: kSumKFree, kSumRefill
    for (;;) {
        const ItemInfo &cur = kWalk ? walk.current() : single;
        const int pairs = (cur.w.ntiles + 1) / 2;
        for (int k = 0; k < pairs; k++, gk++) {
            const bool more = k + 1 < pairs;
            const bool another = next_pair_slots(p, cur, k, pairs, has_next, staged, tid, next);
            if (kWalk && !more) // the item's last pair: the next item (or the end)
                walk.hand_over(!has_next, load_item_q);
            if (another) {
#pragma unroll
                for (int b = 0; b < 2; b++) {
                    const uint64_t t0 = timeline::now();
                    mbar_wait(&sh.k_free[b], gk & 1);
                    mbar_wait(&sh.k_read[b], gk & 1);
                    const uint64_t t1 = timeline::now();
                    fill(b, next[b]);
                    sums[kSumKFree] += t1 - t0;
                    sums[kSumRefill] += timeline::now() - t1;
                }
            }
        }
        if (!has_next)
            break;
        has_next = walk.next_item(); // while the item's first copies are in flight
    }
    if (tid == 0)
        timeline::set_sums(sums, kSumKFree, kSumRefill);
    cp_async_wait<0>(); // no copy outlives its thread
}

// The transpose WG: each V^T half once its K landed and its owner finished the previous
// pair's P . V there; k_read tells the gather WG once both halves of a K buffer are read.
// It follows the items as the consumers do (kWalk: the hand-overs; else `single`).
template <bool kWalk> __device__ void transpose_all(const Shared &sh, int tid, const ItemInfo &single)
{
    int gk = 0;
    uint64_t sums[timeline::kSums] = {}; // timeline builds only: kSumKLanded .. kSumTranspose
    for (int j = 0;; j++) {
        int ntiles = single.w.ntiles;
        if constexpr (kWalk) {
            mbar_wait(&sh.item_ready[j % 2], (j / 2) & 1);
            ntiles = sh.items[j % 2].w.ntiles;
        } else if (j > 0) {
            break;
        }
        if (ntiles == 0)
            break;
        for (int k = 0; k < (ntiles + 1) / 2; k++, gk++) {
#pragma unroll
            for (int x = 0; x < 4; x++) {
                const int b = transpose_buf(x), h = transpose_half_of(x);
                const uint64_t t0 = timeline::now();
                mbar_wait(&sh.k_ready[b * 2 + h], gk & 1);
                const uint64_t t1 = timeline::now();
                mbar_wait(&sh.v_free[b * 2 + h], (gk & 1) ^ 1);
                const uint64_t t2 = timeline::now();
                transpose_half(sh, b, h, tid);
                fence_proxy_async();
                mbar_arrive(&sh.v_ready[b * 2 + h]);
                if (x >= 2) // buffer 1's halves are read at x = 1, 2; buffer 0's at x = 0, 3
                    mbar_arrive(&sh.k_read[b]);
                sums[kSumKLanded] += t1 - t0;
                sums[kSumVFree] += t2 - t1;
                sums[kSumTranspose] += timeline::now() - t2;
                if (tid == 0 && gk == 0 && x == 0)
                    timeline::mark(timeline::kFirstTransposed);
            }
        }
    }
    if (tid == 0)
        timeline::set_sums(sums, kSumKLanded, kSumTranspose);
}

// ---- consumers ------------------------------------------------------------------------

// P as E4M3 A fragments of the two K steps of P . V, from the S accumulators (m64n64
// layout; see the header comment for the K order): register r of step st holds row
// r0 + 8 (r % 2), entries 32st + 16 (r / 2) + 2q + {0, 1, 8, 9}, i.e. accumulators
// 16st + 8 (r / 2) + 2 (r % 2) + {0, 1, 4, 5}.
__device__ __forceinline__ void p_fragments(const float (&s)[32], uint4 (&pa)[2])
{
#pragma unroll
    for (int st = 0; st < 2; st++) {
        uint32_t w[4];
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int i = 16 * st + 8 * (r / 2) + 2 * (r % 2);
            w[r] = static_cast<uint32_t>(f32x2_to_e4m3x2(s[i] * kPScale, s[i + 1] * kPScale)) |
                   (static_cast<uint32_t>(f32x2_to_e4m3x2(s[i + 4] * kPScale, s[i + 5] * kPScale)) << 16);
        }
        pa[st] = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

struct Consumer {
    const AttentionParams &p;
    const Shared &sh;
    int wg, tid, lane, r0; // r0: this thread's first accumulator row (head); r0 + 8 the other

    // S = Q . K^T over buffer `buf` (this WG's tile), all 512 dims, in m64n64 chains of
    // kChain K steps accumulated in the tensor core: the first into S itself, each later
    // one into fresh accumulators added in FP32 once it is done (registers: O, S and one
    // set of 32; the other WG's chains fill the tensor core meanwhile).
    static constexpr int kChain = 4, kChains = 16 / kChain;
    // kwait (timeline builds): + the time waiting for the K halves.
    __device__ void score(float (&s)[32], int buf, int k, uint64_t &kwait) const
    {
        const SmemDesc desc_q = desc_sw128(sh.q, 0), desc_k = desc_sw128(sh.k(buf), 0);
        float part[32];
#pragma unroll
        for (int c = 0; c < kChains; c++) {
            float(&dst)[32] = c == 0 ? s : part;
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < kChain; j++) {
                const int ks = kChain * c + j;
                if (ks % 8 == 0) { // each half of K (8 steps) as it lands
                    const uint64_t t0 = timeline::now();
                    mbar_wait(&sh.k_ready[buf * 2 + ks / 8], k & 1);
                    kwait += timeline::now() - t0;
                    fence_proxy_async();
                }
                const uint32_t off = k_step_units(ks, kRows); // Q, K: 64 rows each
                WgmmaFp8SS<64>::run(dst, desc_q + off, desc_k + off, j > 0);
            }
            wgmma_commit();
            if (c > 0) {
                wgmma_wait<0>();
                fence_regs(s);
                fence_regs(part);
#pragma unroll
                for (int i = 0; i < 32; i++)
                    s[i] += part[i];
            }
        }
        if (kChains == 1) {
            wgmma_wait<0>();
            fence_regs(s);
        }
    }

    // P of buffer `buf` in shared memory ([64 heads][64 K positions], 64 B swizzle), the
    // A operand of the other WG.
    __device__ void store_p(const uint4 (&pa)[2], int buf) const
    {
        const int q = lane % 4, x = (r0 >> 1) & 3; // (row >> 1) & 3, the same for r0 + 8
#pragma unroll
        for (int st = 0; st < 2; st++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const uint32_t at = (r0 + 8 * (r % 2)) * 64 + (((2 * st + r / 2) ^ x) << 4) + 4 * q;
                *reinterpret_cast<uint32_t *>(sh.p_plane(buf) + at) = (&pa[st].x)[r];
            }
        fence_proxy_async();
    }

    // O += P . V over buffer `buf`, this WG's 256 dims as two m64n128 halves (a 512-thread
    // CTA leaves ptxas 128 registers for one instruction): P from registers or from the
    // other WG's plane in shared memory. V^T's dims are 64-byte rows, 128 of them 8 KB.
    __device__ void accumulate_own(float (&o)[128], const uint4 (&pa)[2], int buf) const
    {
        const SmemDesc desc_v = desc_sw64(sh.v(buf) + wg * Layout::kVHalfBytes);
        wgmma_fence();
#pragma unroll
        for (int st = 0; st < 2; st++)
#pragma unroll
            for (int n = 0; n < 2; n++)
                WgmmaFp8RS<128>::run(o + 64 * n, pa[st], desc_v + (n * 128 * 64 + st * 32) / 16, 1);
        wgmma_commit();
    }
    __device__ void accumulate_other(float (&o)[128], int buf) const
    {
        const SmemDesc desc_v = desc_sw64(sh.v(buf) + wg * Layout::kVHalfBytes);
        const SmemDesc desc_p = desc_sw64(sh.p_plane(buf));
        wgmma_fence();
#pragma unroll
        for (int st = 0; st < 2; st++)
#pragma unroll
            for (int n = 0; n < 2; n++)
                WgmmaFp8SS<128>::run(o + 64 * n, desc_p + (st * 32) / 16, desc_v + (n * 128 * 64 + st * 32) / 16, 1);
        wgmma_commit();
    }

    // One item; k0: the pairs of the CTA's items before it (the barrier phases and max
    // hand-offs run on across items).
    // sums (timeline builds): + kSumKReady, kSumScore, kSumVReady, kSumSoftmax, kSumPv.
    template <bool kWalk>
    __device__ void run_item(const ItemInfo &it, int k0, uint64_t (&sums)[timeline::kSums]) const
    {
        float o[128];
#pragma unroll
        for (int i = 0; i < 128; i++)
            o[i] = 0.f;
        float m_run[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
        const int end = k0 + (it.w.ntiles + 1) / 2;
        const int own = wg, other = 1 - wg; // buffers
        for (int k = k0; k < end; k++) {
            float s[32], mx[2], m[2], rs[2], f[2];
            uint4 pa[2];
            const bool last = k + 1 == end;
            if (tid == 0 && last)
                timeline::mark(timeline::kLastPairStart);
            const uint64_t t0 = timeline::now();
            score(s, own, k, sums[kSumKReady]);
            const uint64_t t_scored = timeline::now();
            sums[kSumScore] += t_scored - t0;
            if (tid == 0 && k == 0)
                timeline::mark(timeline::kFirstScored);
            mask_and_max(s, sh.valid_rows(own), lane, p.scale_log2, mx);
            mbar_arrive(&sh.k_free[own]); // S and the row mask read: K and rows may be refilled
            if (kWalk && last)
                mbar_arrive(sh.q_free); // the item's last S: the next item's Q may load
            exchange_max(m_run, mx, m, f, sh.handoff(wg, k), sh.handoff(other, k), r0, lane, kMaxLag);
            exponentiate(s, m, rs);
            settle_max(m, f, rs, l, m_run);
            rescale(o, f);
            p_fragments(s, pa);
            // P for the other WG first: its P . V over this tile waits for it.
            store_p(pa, own);
            named_arrive(kP0Ready + wg, 256);
            const uint64_t t1 = timeline::now();
            sums[kSumSoftmax] += t1 - t_scored;
            mbar_wait(&sh.v_ready[own * 2 + wg], k & 1);
            sums[kSumVReady] += timeline::now() - t1;
            accumulate_own(o, pa, own);
            named_barrier(kP0Ready + other, 256);
            const uint64_t t2 = timeline::now();
            mbar_wait(&sh.v_ready[other * 2 + wg], k & 1);
            sums[kSumVReady] += timeline::now() - t2;
            accumulate_other(o, other);
            wgmma_wait<1>();
            fence_regs(o);
            keep_until_done(pa);
            mbar_arrive(&sh.v_free[own * 2 + wg]);
            wgmma_wait<0>();
            fence_regs(o);
            mbar_arrive(&sh.v_free[other * 2 + wg]);
            sums[kSumPv] += timeline::now() - t1;
            if (tid == 0 && k == 0)
                timeline::mark(timeline::kFirstPairDone);
        }
        if (tid == 0)
            timeline::mark(timeline::kLoopDone);
        finish(p, sh, o, m_run, l, it.t, it.h0, it.split, it.w.split, wg, tid, lane, r0, kPScale);
    }

    // kWalk: the items the gather WG hands over, until it says there are no more; else
    // the CTA's one item, `single`, whose Q the consumers loaded.
    template <bool kWalk> __device__ void run(const ItemInfo &single) const
    {
        int k0 = 0;
        uint64_t sums[timeline::kSums] = {}; // timeline builds only: kSumKReady .. kSumPv
        if constexpr (!kWalk) {
            run_item<false>(single, 0, sums);
            k0 = (single.w.ntiles + 1) / 2;
        } else {
            for (int j = 0;; j++) {
                const int slot = j % 2;
                mbar_wait(&sh.item_ready[slot], (j / 2) & 1);
                const ItemInfo it = sh.items[slot];
                if (it.w.ntiles == 0)
                    break;
                fence_proxy_async(); // Q landed through cp.async: visible to wgmma
                if (tid == 0 && j == 0)
                    timeline::mark(timeline::kQLanded);
                run_item<true>(it, k0, sums);
                k0 += (it.w.ntiles + 1) / 2;
            }
        }
        if (tid == 0) {
            timeline::mark(timeline::kFinished);
            timeline::set(timeline::kPairs, k0);
            timeline::set_sums(sums, kSumKReady, kSumPv);
            timeline::end();
        }
    }
};

// The CTA's work item(s) (see produce).
template <bool kWalk> __device__ inline void run(const AttentionParams &p, uint8_t *smem_raw)
{
    const int tid = threadIdx.x, wg = warp_uniform(tid / 128);
    ItemInfo single{};
    if constexpr (!kWalk) {
        const CtaWork c = cta_work(p);
        if (!cta_work_item(p, c.t, c.h0, c.split, tid, &single.w))
            return;
        single.t = c.t;
        single.h0 = c.h0;
        single.split = c.split;
    }
    const Shared sh(align_smem_1024(smem_raw));
    if (tid == 0) {
        for (int i = 0; i < 4; i++) {
            mbar_init(&sh.k_ready[i], 256); // the gather WG's 128 copy completions and 128 row arrivals
            mbar_init(&sh.v_ready[i], 128); // the transpose WG
            mbar_init(&sh.v_free[i], 128);  // the consumer WG owning that half
        }
        for (int i = 0; i < 2; i++) {
            mbar_init(&sh.k_free[i], 128);     // the consumer WG scoring that buffer
            mbar_init(&sh.item_ready[i], 256); // the gather WG's 128 Q copy completions and 128 arrivals
            mbar_init(&sh.k_read[i], 128);     // the transpose WG
        }
        mbar_init(sh.q_free, 256); // both consumer WGs
        mbar_init_fence();
    }
    __syncthreads();
    if (tid == 0)
        timeline::mark(timeline::kItemFound);
    if (wg == 2) {
        regs_decrease<kGatherRegs>();
        gather<kWalk>(p, sh, tid - 256, single);
        return;
    }
    if (wg == 3) {
        regs_decrease<kTransposeRegs>();
        transpose_all<kWalk>(sh, tid - 384, single);
        return;
    }
    regs_increase<kConsumerRegs>();
    if constexpr (!kWalk) {
        load_q<256>(sh, p, single.t, single.h0, tid);
        q_landed();
        if (tid == 0)
            timeline::mark(timeline::kQLanded);
    }
    const int lane = tid % 32;
    const Consumer c{p, sh, wg, tid, lane, ((tid % 128) / 32) * 16 + lane / 4};
    c.run<kWalk>(single);
}

template <bool kWalk> __global__ void __launch_bounds__(kThreads, 1) kernel(const __grid_constant__ AttentionParams p)
{
    begin_kernel();
    extern __shared__ uint8_t smem[];
    run<kWalk>(p, smem);
}

} // namespace fp8m
} // namespace smla
