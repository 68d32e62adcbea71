// SM90 sparse MLA attention, BF16 path for 64-head groups (64 and 128 heads): one CTA
// computes one token for 64 heads (wgmma's M), 64 KV entries (a tile) at a time, with
// three warpgroups (WGs) specialised by role:
//
//   WG 2, the producer: copies rows with cp.async into two tile buffers (each in two
//     halves of 256 dims), every thread its fixed chunks of fixed rows, and publishes
//     each half as its copies land. E4M3 and fp8_ds_mla data lands raw.
//   WG 0 takes the even tiles (buffer 0), WG 1 the odd ones (buffer 1), two at a time:
//     with raw rows it first widens its own tile to BF16 in place (a half at a time, in
//     two steps, each step's S wgmmas running under the next step's widening);
//     S = Q . K^T for its own tile (m64n64k16, K = 512); then O_half += P . V_half over
//     BOTH tiles of the pair, WG 0 owning output dims 0-255, WG 1 dims 256-511 (m64n256k16,
//     V read transposed): its own P from registers, the other WG's P from shared memory.
//
// The two WGs agree on one running max per pair of tiles: WG 0 publishes max(m, its tile),
// WG 1 adds its tile's max and publishes the final value, WG 0 rescales. While one WG does
// its softmax the other's wgmmas run, and the gather runs ahead of both.
//
// Every head's arithmetic is fixed (pairs start at the token's first tile; a missing odd
// tile is all-invalid), so outputs do not depend on the batch or the segmentation; every
// 64- or 128-head problem on the BF16 path takes this kernel, whatever the batch.
//
// Two launch forms (kWalk), with the same arithmetic per item, as fp8m's: a CTA per work
// item, or, for launches over BF16 rows under BF16 queries with many items and no split
// token, a CTA per SM that walks the items (compiled without the widening): the producer
// hands the consumers item after item with its Q (loaded once both WGs' last S of the
// item before is done), pairs run on across items, and the producer fills the next item's
// first pair during the epilogue, which keeps O in registers
// (tests/model/bf16_heads_on_m_protocol.py models both forms).
#pragma once
#include <cstdint>

#include "../common/sm90.cuh"
#include "../common/softmax.cuh"
#include "../common/timeline.cuh"
#include "../common/token_entries.cuh"
#include "../common/wgmma_ops.cuh"
#include "bf16_gather.cuh"
#include "heads_on_m.cuh"
#include "params.cuh"

namespace smla {
namespace bf16m {

using namespace heads_on_m;
constexpr int kConsumerRegs = 224, kProducerRegs = 56;
// How far a tile may pass the running max before it moves (propose_max, final_max): BF16
// holds P up to 2^4 as precisely as below 1, and O and l are FP32 (fp8m's lag is bound by
// E4M3's range instead).
constexpr float kMaxLag = 4.f;
static_assert(registers_fit(kConsumerRegs, kProducerRegs), "register file");

// The timeline's sums (timeline.cuh), cycles over a CTA's pairs: WG 0's waits for its
// halves, its widening (fence and WG barrier included) and its wait for S; the producer's
// first thread waiting for a free half, issuing a half's copies and on the next pair's
// row sets (to the producer's barrier; off the refill's path); WG 1's waits for its
// halves and its widening. Then the rest of WG 0's pair, phase by phase (Consumer::run;
// with the three above, all of the pair but S's issue): from S's end to its own P . V
// issued (mask, max, softmax, O's rescale), its wait for WG 1's max, P moved to it and
// stored, the wait for its own P . V, O's second rescale and the wait for WG 1's P, the
// other tile's P . V (issue to completion); and WG 1's waits for WG 0's max and P.
enum Sum {
    kSumReadyWait, kSumWiden, kSumScoreWait, kSumFreeWait, kSumRows, kSumCopies, kSumWg1ReadyWait, kSumWg1Widen,
    kSumSoftmax, kSumMaxWait, kSumStoreP, kSumOwnPvWait, kSumOtherPWait, kSumOtherPv, kSumWg1MaxWait, kSumWg1PWait
};

struct Layout {
    static constexpr int kHalfBytes = kRows * 512;                    // 256 dims of 64 rows
    static constexpr int kTileBytes = 2 * kHalfBytes;
    static constexpr int kQOff = 0;                                   // [64 heads][512] BF16
    static constexpr int kTileOff = kQOff + kHeads * 1024;            // 2 buffers
    static constexpr int kPOff = kTileOff + 2 * kTileBytes;           // 2 x [64 heads][64] BF16
    static constexpr int kPBytes = kHeads * kRows * 2;
    static constexpr int kScaleOff = kPOff + 2 * kPBytes;             // [buf][half][64 rows][8]
    // The row sets, [pair parity][buf]: pair k + 1's are written while pair k runs.
    static constexpr int kRowOff = kScaleOff + 2 * 2 * kRows * 8;     // [set][64] row address + tags
    static constexpr int kScaleRowOff = kRowOff + 4 * kRows * 8;      // [set][64] fp8_ds_mla scale rows
    static constexpr int kValidOff = kScaleRowOff + 4 * kRows * 8;    // [set][2] valid bits
    static constexpr int kItemOff = kValidOff + 4 * 8;                // walking: ItemInfo [slot], then the next
    static constexpr int kHandoffOff = kItemOff + 3 * 64;             // HandoffSmem
    static constexpr int kBarOff = kHandoffOff + HandoffSmem::kBytes; // mbarriers
    // ready, free x [buf][half]; walking: item_ready [slot] (the item written and its Q
    // landed), q_free (both consumer WGs' last S of the item done)
    static constexpr int kBars = 2 * 4 + 2 + 1;
    static constexpr int kBytes = kBarOff + kBars * 8 + 1024; // + alignment slack
};
static_assert(Layout::kBytes <= 227 * 1024, "shared memory per CTA");
static_assert(sizeof(ItemInfo) <= 64, "item slot");

// (HandoffSmem's valid bits are fp8m's; bf16m keeps one set per pair parity.)
struct Shared : HandoffSmem {
    uint8_t *q, *tiles, *p, *scales;
    uint64_t *rows_, *scale_rows_addr_;
    uint32_t *valid_;
    ItemInfo *items;         // walking: [slot], then the producer's next item
    uint64_t *ready, *free_; // [buf * 2 + half]
    uint64_t *item_ready, *q_free;

    __device__ explicit Shared(uint8_t *smem)
        : HandoffSmem(smem + Layout::kHandoffOff), q(smem + Layout::kQOff), tiles(smem + Layout::kTileOff),
          p(smem + Layout::kPOff), scales(smem + Layout::kScaleOff),
          rows_(reinterpret_cast<uint64_t *>(smem + Layout::kRowOff)),
          scale_rows_addr_(reinterpret_cast<uint64_t *>(smem + Layout::kScaleRowOff)),
          valid_(reinterpret_cast<uint32_t *>(smem + Layout::kValidOff)),
          items(reinterpret_cast<ItemInfo *>(smem + Layout::kItemOff)),
          ready(reinterpret_cast<uint64_t *>(smem + Layout::kBarOff)), free_(ready + 4), item_ready(free_ + 4),
          q_free(item_ready + 2)
    {
    }
    __device__ uint8_t *tile(int buf) const { return tiles + buf * Layout::kTileBytes; }
    __device__ uint8_t *scale_rows(int buf, int half) const { return scales + (buf * 2 + half) * kRows * 8; }
    // Pair k's tile in buffer `buf`: its rows' tagged addresses, their fp8_ds_mla scale-row
    // addresses and the valid bits (bit r of word w: row 32w + r holds an entry).
    __device__ static int row_set(int k, int buf) { return (k & 1) * 2 + buf; }
    __device__ uint64_t *rows(int k, int buf) const { return rows_ + row_set(k, buf) * kRows; }
    __device__ uint64_t *scale_rows_addr(int k, int buf) const { return scale_rows_addr_ + row_set(k, buf) * kRows; }
    __device__ uint32_t *valid(int k, int buf) const { return valid_ + row_set(k, buf) * 2; }
    __device__ uint64_t valid_rows(int k, int buf) const { return *reinterpret_cast<const uint64_t *>(valid(k, buf)); }
};

// The order in which the producer fills (and the consumers take) the four halves of a
// pair: buffer 0's left half first (WG 0's S starts there), buffer 1's right half, then
// the two halves the other WG's P . V frees last.
__device__ constexpr int fill_buf(int f) { return f == 0 || f == 2 ? 0 : 1; }
__device__ constexpr int fill_half(int f) { return f == 0 || f == 3 ? 0 : 1; }

// ---- producer -------------------------------------------------------------------------

// Chunks i, i + 8, i + 16, i + 24 of one half of a BF16 row (a: its tagged address, 0
// for an invalid row, which is zero-filled). With `half` a compile-time constant every
// destination is one per-thread base plus a constant: row % 8 = i's row group, so the
// 128-byte swizzle is the same for all four (tile_offset with the constants split out).
__device__ __forceinline__ void copy_bf16_row_half(const AttentionParams &p, uint8_t *tile, int row, uint64_t a,
                                                   int half, int i)
{
    // An invalid row reads nothing (size 0) from a valid address: Q.
    const uint8_t *src = (a ? reinterpret_cast<const uint8_t *>(a & ~kRowTags) : static_cast<const uint8_t *>(p.q)) +
                         512 * half + 16 * i;
    uint8_t *dst = tile + 4 * half * (kRows * 128) + swizzle128(row, 16 * i);
#pragma unroll
    for (int m = 0; m < 4; m++) // chunk 32 * half + i + 8 * m
        cp_async16(dst + m * (kRows * 128), src + 128 * m, a ? 16 : 0);
}

// The shared-memory loads of a half's copies, all issued before the first copy: the
// copies' asm (a "memory" clobber) keeps a load after one from moving ahead of it, and
// one round trip per row (two for fp8_ds_mla rows, whose scale rows also have an address)
// added up behind the widening's shared-memory traffic (timeline, session 12).
struct HalfRows {
    uint64_t a[4], scale_row[4]; // rows g, g + 16, g + 32, g + 48: tagged addresses
    __device__ HalfRows(const Shared &sh, int k, int buf, int g, bool scales)
    {
        const uint64_t *rows = sh.rows(k, buf), *scale_rows = sh.scale_rows_addr(k, buf);
#pragma unroll
        for (int jr = 0; jr < 4; jr++) {
            a[jr] = rows[g + 16 * jr];
            scale_row[jr] = scales ? scale_rows[g + 16 * jr] : 0;
        }
    }
};

// One half (256 dims) of buffer `buf` (pair k's tile) by the 128 producer threads: thread
// (g = tid / 8, i = tid % 8) copies the 16-byte chunks i, i + 8, ... of rows g, g + 16,
// g + 32, g + 48. E4M3 data lands raw (its chunk j at BF16 chunk 2j), fp8_ds_mla RoPE at
// BF16 chunks 56..63 and its scale bytes in the half's scale area; invalid rows are
// zero-filled.
__device__ inline void copy_half(const AttentionParams &p, const Shared &sh, int k, int buf, int half, int tid)
{
    const int g = tid / 8, i = tid % 8;
    uint8_t *tile = sh.tile(buf);
    uint8_t *scales = sh.scale_rows(buf, half);
    const HalfRows r(sh, k, buf, g, true);
#pragma unroll
    for (int jr = 0; jr < 4; jr++) {
        const int row = g + 16 * jr;
        const uint64_t a = r.a[jr], data = a & ~kRowTags;
        if (a & (kRowE4M3 | kRowDsMla)) {
#pragma unroll
            for (int m = 0; m < 2; m++) {
                const int c = 16 * half + i + 8 * m;
                if ((a & kRowE4M3) || c < kDsNopeChunks)
                    copy_raw_chunk(tile, kRows, row, data, c);
            }
            if (a & kRowDsMla) {
                if (half == 1)
                    copy_rope_chunk(tile, kRows, row, data, i);
                if (i == 0)
                    cp_async8(scales + 8 * row, reinterpret_cast<const void *>(r.scale_row[jr]), 8);
            }
        } else { // BF16 row, or zero fill
            copy_bf16_row_half(p, tile, row, a, half, i);
        }
    }
}

// The BF16 copy when every row is BF16 (or invalid): the same chunks as copy_half.
__device__ inline void copy_bf16_half(const AttentionParams &p, const Shared &sh, int k, int buf, int half,
                                      int tid)
{
    const int g = tid / 8, i = tid % 8;
    const HalfRows r(sh, k, buf, g, false);
#pragma unroll
    for (int jr = 0; jr < 4; jr++)
        copy_bf16_row_half(p, sh.tile(buf), g + 16 * jr, r.a[jr], half, i);
}

// The landed raw data of one half (pair k's tile in buffer `buf`) widened to BF16 in place
// by the 128 threads of a WG, in two steps n = 0, 1 (widen_blocks): step n widens the
// half's 64-dim blocks n and n + 2, so S can run on them while step 1 widens the rest.
// Thread t takes row t % 64 and block 2 (t / 64) + n, four raw chunks: the row's tag is
// loaded once a step and the block's UE8M0 scale once (per-chunk tags and scales made 34
// of a chunk's 82 instructions; session 13's profile), and the four chunks' loads are in
// flight together. A warp's lanes take 32 consecutive rows, so each 8-lane phase of a
// 16-byte access meets 8 distinct bank groups through the 128-byte swizzle. Raw chunk j
// of a row sits at BF16 chunk 2j; a chunk that is not raw (a BF16 row's, or past an
// fp8_ds_mla row's NoPE part) is converted but not stored: no branches.
__device__ inline void widen_blocks(const Shared &sh, int k, int buf, int half, int n, int tid)
{
    const int row = tid % kRows, r7 = row & 7;
    const uint32_t tag = static_cast<uint32_t>(sh.rows(k, buf)[row] & kRowTags);
    const bool ds = tag & kRowDsMla, e4m3 = tag & kRowE4M3;
    const uint8_t *scales = sh.scale_rows(buf, half) + 8 * row; // a block's scale; byte 7 is padding
    const int blk = 4 * half + 2 * (tid / kRows) + n;            // raw chunks 4 blk .. 4 blk + 3
    const bool store = e4m3 || (ds && 4 * blk < kDsNopeChunks);
    uint8_t *base = sh.tile(buf) + blk * (kRows * 128) + row * 128;
    uint4 v[4];
#pragma unroll
    for (int q = 0; q < 4; q++)
        v[q] = *reinterpret_cast<const uint4 *>(base + (((2 * q) ^ r7) << 4));
    // Read for every row, after the data's loads: a scale read only for fp8_ds_mla rows
    // went into a branch that the data's loads waited behind.
    const float block_scale = ue8m0_to_float(scales[blk]);
    const float scale = ds ? block_scale : 1.f;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint4 lo, hi;
        widen_chunk(v[q], scale, lo, hi);
        if (store) {
            *reinterpret_cast<uint4 *>(base + (((2 * q) ^ r7) << 4)) = lo;
            *reinterpret_cast<uint4 *>(base + (((2 * q + 1) ^ r7) << 4)) = hi;
        }
    }
}
// A whole half, both steps: what gpu_test_widen_tile checks and bench_widen times (the
// consumers interleave the two steps with S's wgmmas).
__device__ inline void widen_half(const Shared &sh, int k, int buf, int half, int tid)
{
#pragma unroll 1
    for (int n = 0; n < 2; n++)
        widen_blocks(sh, k, buf, half, n, tid);
}

// Asks a raw row's lines into L2, from its tagged address: fp8_ds_mla, 576 bytes at a
// 64-byte offset in a line (5 lines) and its scale row's line; fp8, 512 bytes (4 lines).
__device__ inline void prefetch_raw_row(uint64_t row, uint64_t scale_row)
{
    const uint8_t *data = reinterpret_cast<const uint8_t *>(row & ~kRowTags);
    const int lines = row & kRowDsMla ? 5 : 4;
#pragma unroll
    for (int l = 0; l < 5; l++)
        if (l < lines)
            prefetch_l2(data + 128 * l);
    if (scale_row)
        prefetch_l2(reinterpret_cast<const void *>(scale_row));
}

// Pair k's row sets (both tiles) from their slot ids, by producer threads tid < 64, then
// the producer's barrier: every producer thread copies from them after it. With
// `prefetch` (every pair but the first, whose sets are written just before their copies)
// each raw row is also asked into L2: its copies come a pair later, and it then lands
// without HBM's latency on the refill's path (+2.3% on fp8_ds_mla decode, v58). BF16 rows
// are not asked: their prefetches cost BF16 prefill and decode 1-3% (v57). (v33 issued
// prefetches between a pair's copies, each behind a division and a wait for its slot id,
// and lost 15-34%; here the addresses are at hand and the producer waits for a free half
// next.)
__device__ inline void publish_rows(const AttentionParams &p, const Shared &sh, int k, const EntrySlot (&slots)[2],
                                    int tid, bool prefetch = false)
{
    if (tid < kRows) { // warps 0 and 1
#pragma unroll
        for (int buf = 0; buf < 2; buf++) {
            uint64_t scale_row = 0;
            const uint64_t row = slot_row(p, slots[buf], &scale_row);
            if (prefetch && (row & (kRowDsMla | kRowE4M3)))
                prefetch_raw_row(row, scale_row);
            sh.rows(k, buf)[tid] = row;
            sh.scale_rows_addr(k, buf)[tid] = scale_row;
            const uint32_t bits = __ballot_sync(0xffffffffu, row != 0);
            if (tid % 32 == 0)
                sh.valid(k, buf)[tid / 32] = bits;
        }
    }
    named_barrier(kProducer, 128);
}

// One pair's four halves (global pair gk: its row sets and barrier phases), in the fill
// order; each half once the consumers freed it, published as its copies land.
template <bool kRaw>
__device__ __forceinline__ void fill_pair(const AttentionParams &p, const Shared &sh, int gk, int tid,
                                          uint64_t (&sums)[timeline::kSums])
{
#pragma unroll
    for (int f = 0; f < 4; f++) {
        const int buf = fill_buf(f), half = fill_half(f), slot = buf * 2 + half;
        const uint64_t t0 = timeline::now();
        mbar_wait(&sh.free_[slot], (gk & 1) ^ 1);
        const uint64_t t1 = timeline::now();
        sums[kSumFreeWait] += t1 - t0;
        if (kRaw)
            copy_half(p, sh, gk, buf, half, tid);
        else
            copy_bf16_half(p, sh, gk, buf, half, tid);
        mbar_arrive_cp_async(&sh.ready[slot]); // when this thread's copies land
        mbar_arrive(&sh.ready[slot]);          // the pair's row sets are in shared memory
        sums[kSumCopies] += timeline::now() - t1;
    }
}

// Item `it`'s Q by the producer's 128 threads (walking), through cp.async. BF16 queries
// only: bf16m walks only under them (launch.cu's heads_on_m_walks; a walking producer that
// widened FP8 Q lost 8-16%, and one that landed it raw and widened it in place 1-2%: v75
// and v76, PERF sessions 19 and 20).
// kPadded: the rows past the problem's heads read nothing (size 0) from row 0.
template <bool kPadded>
__device__ inline void producer_load_q(const AttentionParams &p, const Shared &sh, const ItemInfo &it, int tid)
{
    copy_q_bf16<kHeads, kPadded>(sh.q, p, it.t, it.h0, tid, 128, heads_in_group<kPadded>(p));
}

// The producer WG. Per pair of tiles it fills the four halves in the consumers' order,
// from the pair's row sets, which it wrote while the pair before ran: pair k + 1's once
// pair k's halves are issued (its slot ids loaded during them), into the sets of pair
// k - 1, whose readers are done (the four `free` waits of pair k follow every consumer
// read of pair k - 1). Row addresses (a 64-bit division by the block size each) are so
// off the refill's path: free -> copies -> landed -> (widened) -> S. Each half is
// published as it lands (the cp.async arrivals count on `ready`, with arrivals that
// publish the row sets), so the producer never waits for its copies: only for the
// consumers to free a half. Raw rows (kRaw) land raw, for the consumers to widen. The
// four halves are unrolled, so each copy's buffer and half are constants.
// kWalk: the CTA walks the items (as fp8m's producer), skipping those without work
// (writing an empty token's output on the way) and handing each to the consumers with
// its Q, loaded once both consumer WGs' last S of the item before is done; pairs run on
// across items (gk counts them for the row sets and the barrier phases). Without kWalk:
// the one item `single`.
template <bool kRaw, bool kWalk, bool kPadded>
__device__ void produce(const AttentionParams &p, const Shared &sh, int tid, const ItemInfo &single)
{
    ItemWalk<Shared, kPadded> walk(p, sh, tid);
    const ItemInfo &staged = walk.staged();
    const auto load_item_q = [&](const ItemInfo &it) { producer_load_q<kPadded>(p, sh, it, tid); };
    if constexpr (kWalk) {
        if (!walk.start(load_item_q))
            return;
    }
    uint64_t sums[timeline::kSums] = {}; // timeline builds only: kSumFreeWait .. kSumCopies
    EntrySlot next[2];
    const ItemInfo &first = kWalk ? sh.items[0] : single;
    pair_slots(p, first.w, first.t, 0, tid, next);
    if (tid == 0)
        timeline::mark(timeline::kProducerSlots);
    publish_rows(p, sh, 0, next, tid);
    bool has_next = kWalk && walk.next_item(); // while the first copies are in flight
    int gk = 0;
    for (;;) {
        const ItemInfo &cur = kWalk ? walk.current() : single;
        const int pairs = (cur.w.ntiles + 1) / 2;
        for (int k = 0; k < pairs; k++, gk++) {
            const bool more = k + 1 < pairs;
            const bool another = next_pair_slots(p, cur, k, pairs, has_next, staged, tid, next);
            fill_pair<kRaw>(p, sh, gk, tid, sums);
            if (another) {
                const uint64_t t2 = timeline::now();
                publish_rows(p, sh, gk + 1, next, tid, true);
                sums[kSumRows] += timeline::now() - t2;
            }
            if (tid == 0 && gk == 0)
                timeline::mark(timeline::kProducerFilled);
            if (kWalk && !more) // the item's halves are all issued: the next item (or the end)
                walk.hand_over(!has_next, load_item_q);
        }
        if (!has_next)
            break;
        has_next = walk.next_item(); // while the item's first copies are in flight
    }
    if (tid == 0)
        timeline::set_sums(sums, kSumFreeWait, kSumCopies);
    cp_async_wait<0>(); // no copy outlives its thread
}

// ---- consumers ------------------------------------------------------------------------

// A-operand fragments of the four k-steps of P . V from S accumulator registers (m64n64
// layout): k-step st (entries 16st .. 16st+15) is registers 8st .. 8st+7, as BF16 pairs.
__device__ __forceinline__ void p_fragments(const float (&s)[32], uint4 (&pf)[4])
{
#pragma unroll
    for (int st = 0; st < 4; st++) {
        uint32_t r[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const __nv_bfloat162 b = __floats2bfloat162_rn(s[8 * st + 2 * i], s[8 * st + 2 * i + 1]);
            r[i] = *reinterpret_cast<const uint32_t *>(&b);
        }
        pf[st] = make_uint4(r[0], r[1], r[2], r[3]);
    }
}

template <bool kPadded> struct Consumer {
    const AttentionParams &p;
    const Shared &sh;
    int wg, tid, warp, lane, r0; // r0: this thread's first accumulator row (head); r0 + 8 the other
    bool raw;                    // rows may land raw: this WG widens its own tile

    // S = Q . K^T over buffer `buf` (this WG's tile), all 512 dims; waits for both halves
    // (and widens them first when rows land raw: the other WG reads one half of this
    // tile for its P . V only after this WG's P is ready, so after the widening).
    // cycles[0..2] (timeline builds): + the time waiting for the halves, widening (with
    // the wgmma issue between its steps), on S.
    __device__ void score(float (&s)[32], int buf, int k, uint64_t (&cycles)[3]) const
    {
        const int first_half = wg == 0 ? 0 : 1; // the order the producer fills them in
        const SmemDesc desc_q = desc_sw128(sh.q, 0), desc_k = desc_sw128(sh.tile(buf), 0);
        for (int n = 0; n < 2; n++) {
            const int half = n == 0 ? first_half : 1 - first_half;
            const uint64_t t0 = timeline::now();
            mbar_wait(&sh.ready[buf * 2 + half], k & 1);
            const uint64_t t1 = timeline::now();
            cycles[0] += t1 - t0;
            if (raw) {
                // Blocks 0 and 2 of the half, then 1 and 3: S's wgmmas on the first two run
                // while the WG widens the other two.
#pragma unroll
                for (int nb = 0; nb < 2; nb++) {
                    widen_blocks(sh, k, buf, half, nb, tid % 128);
                    fence_proxy_async();
                    named_barrier(kWiden0 + wg, 128);
                    if (tid == 0 && k == 0 && n == 0 && nb == 1)
                        timeline::mark(timeline::kFirstTransposed); // the first half widened
                    score_blocks(s, desc_q, desc_k, half, nb, n > 0 || nb > 0);
                }
                cycles[1] += timeline::now() - t1;
            } else {
                cycles[1] += timeline::now() - t1;
                fence_proxy_async();
#pragma unroll
                for (int nb = 0; nb < 2; nb++)
                    score_blocks(s, desc_q, desc_k, half, nb, n > 0 || nb > 0);
            }
        }
        const uint64_t t2 = timeline::now();
        wgmma_wait<0>();
        fence_regs(s);
        cycles[2] += timeline::now() - t2;
    }

    // S += Q . K^T over the 64-dim blocks nb and nb + 2 of one half (8 k16 steps; the first
    // step overwrites S unless `accumulate`), committed as one wgmma group.
    __device__ static void score_blocks(float (&s)[32], SmemDesc desc_q, SmemDesc desc_k, int half, int nb,
                                        bool accumulate)
    {
        wgmma_fence();
#pragma unroll
        for (int b = 0; b < 2; b++)
#pragma unroll
            for (int ks = 0; ks < 4; ks++) {
                const int step = 16 * half + 4 * (nb + 2 * b) + ks; // k16 step over the 512 dims
                WgmmaBf16SS<64>::run(s, desc_q + k_step_units(step, kHeads),
                                     desc_k + k_step_units(step, kRows),
                                     accumulate || b > 0 || ks > 0);
            }
        wgmma_commit();
    }

    // P (its fragments, p_fragments) to shared memory as [64 heads][64 entries] BF16, the
    // A operand layout. Four stmatrix .x4, each the 8x8 blocks (entries 16q .. 16q + 15) x
    // (rows r0, r0 + 8) of this warp's 16 heads: matrix j is word j of pf[q], s[8q + 2j]
    // and s[8q + 2j + 1] (block 2q + j / 2, row half j % 2). (16 32-bit stores before: ~440
    // cycles a pair with P's move to the final max, session 18's timeline.) From the
    // fragments, not from s: P . V's operand already holds them, and converting s again
    // took 16 more f32-to-BF16 conversions a thread and pair, at 16 a cycle per SM.
    __device__ void store_p(const uint4 (&pf)[4], int buf) const
    {
        uint8_t *ps = sh.p + buf * Layout::kPBytes;
        const int j = lane / 8, head = r0 - lane / 4 + 8 * (j % 2) + lane % 8;
#pragma unroll
        for (int q = 0; q < 4; q++)
            stmatrix_x4(ps + tile_offset(kHeads, head, 16 * (2 * q + j / 2)), pf[q].x, pf[q].y, pf[q].z, pf[q].w);
        fence_proxy_async();
    }

    // O += P . V over buffer `buf`, this WG's 256 dims; P from registers (fragments that
    // must stay untouched until the wgmmas complete: see keep_until_done) or from the
    // shared copy of the other WG.
    __device__ void accumulate_own(float (&o)[128], const uint4 (&pf)[4], int buf) const
    {
        const SmemDesc desc_v = desc_sw128(sh.tile(buf) + wg * Layout::kHalfBytes, kRows * 128);
        wgmma_fence();
#pragma unroll
        for (int st = 0; st < 4; st++)
            WgmmaBf16RSTransB<256>::run(o, pf[st], desc_v + (st * 16 * 128) / 16, 1);
        wgmma_commit();
    }
    __device__ void accumulate_other(float (&o)[128], int buf) const
    {
        const SmemDesc desc_v = desc_sw128(sh.tile(buf) + wg * Layout::kHalfBytes, kRows * 128);
        const SmemDesc desc_p = desc_sw128(sh.p + buf * Layout::kPBytes, 0);
        wgmma_fence();
#pragma unroll
        for (int st = 0; st < 4; st++)
            WgmmaBf16SSTransB<256>::run(o, desc_p + (st * 32) / 16, desc_v + (st * 16 * 128) / 16, 1);
        wgmma_commit();
    }

    // One item, its pairs from global pair gk0 on (row sets and barrier phases run on
    // across a walking CTA's items). kWalk: the item's last S frees Q for the next item's.
    // cycles, phases: timeline builds' sums (see score and kSumSoftmax).
    template <bool kWalk>
    __device__ void run_item(const ItemInfo &it, int gk0, uint64_t (&cycles)[3], uint64_t (&phases)[6]) const
    {
        float o[128];
#pragma unroll
        for (int i = 0; i < 128; i++)
            o[i] = 0.f;
        float m_run[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
        const int pairs = (it.w.ntiles + 1) / 2;
        const int own = wg, other = 1 - wg; // buffers
        for (int k = 0; k < pairs; k++) {
            const int gk = gk0 + k;
            const bool last = k == pairs - 1;
            float s[32], mx[2], m[2], rs[2], f[2];
            if (tid == 0 && last)
                timeline::mark(timeline::kLastPairStart);
            score(s, own, gk, cycles);
            if (kWalk && last)
                mbar_arrive(sh.q_free); // the item's last S: the next item's Q may load
            if (tid == 0 && gk == 0) // a walking CTA's first item only, as kQLanded
                timeline::mark(timeline::kFirstScored);
            uint64_t t0 = timeline::now();
            // Adds the cycles since the last phase's end to phases[i] (timeline builds).
            const auto phase = [&](int i) {
                const uint64_t t1 = timeline::now();
                phases[i] += t1 - t0;
                t0 = t1;
            };
            mask_and_max(s, sh.valid_rows(gk, own), lane, p.scale_log2, mx);
            if (wg == 0) {
                // max(m, this tile) to WG 1; P, O and l at that max; P . V on the own tile.
                propose_max(m_run, mx, m, f, sh.handoff(0, gk), r0, lane, kMaxLag);
                exponentiate(s, m, rs);
                rescale(o, f);
                uint4 pf[4];
                p_fragments(s, pf);
                accumulate_own(o, pf, own);
                phase(0);
                // P stored at m before WG 1's max: with the lag, WG 1 rarely moves it, and a
                // warp whose rows it moved stores them again. (WG 1's last read of P[0], its
                // P . V of the pair before, completed before it freed buffer 0's right half,
                // which this pair's S waited for.)
                store_p(pf, own);
                phase(2);
                // The final max from WG 1: P, O and l move to it.
                float g[2];
                take_final_max(m, f, rs, l, m_run, g, sh.handoff(1, gk), r0);
                phase(1);
                if (__any_sync(0xffffffffu, g[0] != 1.f || g[1] != 1.f)) {
#pragma unroll
                    for (int i = 0; i < 32; i++)
                        s[i] *= g[(i % 4) / 2];
                    uint4 pg[4]; // pf stays untouched until the own P . V completes
                    p_fragments(s, pg);
                    store_p(pg, own);
                }
                named_arrive(kP0Ready, 256);
                phase(2);
                wgmma_wait<0>();
                fence_regs(o);
                keep_until_done(pf);
                mbar_arrive(&sh.free_[own * 2 + 0]); // buffer 0, left half: S and P . V done
                phase(3);
                rescale(o, g);
                named_barrier(kP1Ready, 256);
                phase(4);
                accumulate_other(o, other);
                wgmma_wait<0>();
                fence_regs(o);
                mbar_arrive(&sh.free_[other * 2 + 0]); // buffer 1, left half: WG 1's S is done too
                phase(5);
            } else {
                phase(0);
                // The final max: WG 0's value (m and its tile) with this tile's.
                final_max(m_run, mx, m, f, sh.handoff(0, gk), sh.handoff(1, gk), r0, lane, kMaxLag);
                phase(1);
                exponentiate(s, m, rs);
                settle_max(m, f, rs, l, m_run);
                rescale(o, f);
                uint4 pf[4];
                p_fragments(s, pf);
                accumulate_own(o, pf, own);
                store_p(pf, own);
                named_arrive(kP1Ready, 256);
                phase(2);
                named_barrier(kP0Ready, 256);
                phase(3);
                accumulate_other(o, other);
                wgmma_wait<1>();
                fence_regs(o);
                keep_until_done(pf);
                mbar_arrive(&sh.free_[own * 2 + 1]); // buffer 1, right half
                wgmma_wait<0>();
                fence_regs(o);
                mbar_arrive(&sh.free_[other * 2 + 1]); // buffer 0, right half
            }
            if (tid == 0 && gk == 0)
                timeline::mark(timeline::kFirstPairDone);
        }
        if (tid == 0)
            timeline::mark(timeline::kLoopDone);
        finish<kPadded>(p, sh, o, m_run, l, it.t, it.h0, it.split, it.w.split, wg, tid, lane, r0, 1.f);
    }

    // kWalk: the items the producer hands over, until it says there are no more; else the
    // CTA's one item, `single`, whose Q the consumers loaded.
    template <bool kWalk> __device__ void run(const ItemInfo &single) const
    {
        uint64_t cycles[3] = {0, 0, 0}; // timeline builds only: see score
        uint64_t phases[6] = {};        // timeline builds only: kSumSoftmax .. (per WG)
        int gk = 0;
        if constexpr (!kWalk) {
            run_item<false>(single, 0, cycles, phases);
            gk = (single.w.ntiles + 1) / 2;
        } else {
            for (int j = 0;; j++) {
                const int slot = j % 2;
                mbar_wait(&sh.item_ready[slot], (j / 2) & 1);
                // Read where it lies: the producer rewrites this slot only after both WGs'
                // last S of the next item (q_free), and registers are short here.
                const ItemInfo &it = sh.items[slot];
                if (it.w.ntiles == 0)
                    break;
                fence_proxy_async(); // Q landed through cp.async: visible to wgmma
                if (tid == 0 && j == 0)
                    timeline::mark(timeline::kQLanded);
                run_item<true>(it, gk, cycles, phases);
                gk += (it.w.ntiles + 1) / 2;
            }
        }
        if (tid == 128) {
            timeline::set_sum(kSumWg1ReadyWait, cycles[0]);
            timeline::set_sum(kSumWg1Widen, cycles[1]);
            timeline::set_sum(kSumWg1MaxWait, phases[1]);
            timeline::set_sum(kSumWg1PWait, phases[3]);
        }
        if (tid == 0) {
            timeline::mark(timeline::kFinished);
            timeline::set(timeline::kPairs, gk);
            timeline::set_sum(kSumReadyWait, cycles[0]);
            timeline::set_sum(kSumWiden, cycles[1]);
            timeline::set_sum(kSumScoreWait, cycles[2]);
            for (int i = 0; i < 6; i++)
                timeline::set_sum(kSumSoftmax + i, phases[i]);
            timeline::end();
        }
    }
};

// The CTA's work item(s) (see produce): tiles [first, first + ntiles) of token t (all of
// them unless split), heads h0..h0+63, for each.
// kPadded: 16 or 32 heads, one group padded to 64 (heads_on_m.cuh).
template <bool kWalk, bool kPadded> __device__ inline void run(const AttentionParams &p, uint8_t *smem_raw)
{
    const int tid = threadIdx.x, wg = warp_uniform(tid / 128);
    ItemInfo single{};
    if constexpr (!kWalk) {
        const CtaWork c = cta_work<kPadded>(p);
        if (!cta_work_item<kPadded>(p, c.t, c.h0, c.split, tid, &single.w))
            return;
        single.t = c.t;
        single.h0 = c.h0;
        single.split = c.split;
    }
    const Shared sh(align_smem_1024(smem_raw));
    if (tid == 0) {
        // ready: the producer's 128 copy completions and 128 row-address arrivals; free: a
        // consumer WG's 128; item_ready: the producer's 128 Q copy completions and 128
        // arrivals; q_free: both consumer WGs.
        for (int i = 0; i < 4; i++) {
            mbar_init(&sh.ready[i], 256);
            mbar_init(&sh.free_[i], 128);
        }
        for (int i = 0; i < 2; i++)
            mbar_init(&sh.item_ready[i], 256);
        mbar_init(sh.q_free, 256);
        mbar_init_fence();
    }
    __syncthreads();
    if (tid == 0)
        timeline::mark(timeline::kItemFound);
    if (wg == 2) {
        regs_decrease<kProducerRegs>();
        if (!kWalk && has_raw_rows(p))
            produce<true, kWalk, kPadded>(p, sh, tid - 256, single);
        else
            produce<false, kWalk, kPadded>(p, sh, tid - 256, single);
        return;
    }
    regs_increase<kConsumerRegs>();
    if constexpr (!kWalk) {
        // Q for both consumer WGs.
        Bf16Gather<kRows, 256>::load_q<kHeads, kPadded>(sh.q, p, single.t, single.h0, heads_in_group<kPadded>(p));
        q_landed();
        if (tid == 0)
            timeline::mark(timeline::kQLanded);
    }
    const int ctid = tid % 128, warp = ctid / 32, lane = tid % 32;
    // A walking CTA never sees raw rows (launch.cu's heads_on_m_walks): its code has no widening.
    const Consumer<kPadded> c{p, sh, wg, tid, warp, lane, warp * 16 + lane / 4, !kWalk && has_raw_rows(p)};
    c.template run<kWalk>(single);
}

template <bool kWalk, bool kPadded = false>
__global__ void __launch_bounds__(kThreads, 1) kernel(const __grid_constant__ AttentionParams p)
{
    begin_kernel();
    extern __shared__ uint8_t smem[];
    run<kWalk, kPadded>(p, smem);
}

} // namespace bf16m
} // namespace smla
