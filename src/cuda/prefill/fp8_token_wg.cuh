// SM90 sparse MLA attention, FP8 path (E4M3 queries, `fp8` caches): every warpgroup (WG)
// computes one token and kHT (8..32) of its heads, 64 KV entries (a tile) at a time.
// Heads are independent: each WG keeps its own softmax and synchronises only its 128
// threads, except for the tiles. When the token has an even number of head groups, a
// CTA's two WGs take two groups of one token and share its tiles (each copies half of
// every tile, four stages); otherwise a CTA is one WG gathering its own (three stages at
// 16 heads, two otherwise), two or three CTAs per SM, and walks its items (as many CTAs
// as fit on the device; the next item's first tiles and Q are loaded under the end of the
// item before).
//
//   S^T[64 x HT]  = K[64 x 512] . Q^T     FP8 wgmma, both operands in shared memory
//   O^T[512 x HT] += V^T[512 x 64] . P^T  FP8 wgmma, V^T fragments built in registers
//
// KV entries sit on wgmma's M side and heads on N, so 8-32 heads need no padding. FP8
// wgmma wants K-major operands, which V^T is not: its A fragments are built in registers
// from the gathered rows by transposing matrix loads (ldmatrix .trans, 16-bit dim pairs)
// and one byte permute a register. The fragment rows are a permutation of the dims (a
// thread's two M-tile rows are a dim pair), and the K order a permutation of the tile rows
// (k_of_row) that puts each permuted register's four entries on consecutive K; P is
// written in the same K order.
//
// Precision (DESIGN section 8: FP8 queries within 3e-2 of out and 1e-2 of the LSE): FP8
// wgmma keeps only ~14 bits of a running sum, so S chains kChain K steps (128 dims) in the
// tensor core before each FP32 add (fp8m's rule, v141); P is one E4M3 plane of p * 256
// (the factor keeps p >= 2^-14 out of the subnormals; ~2.6e-2 of out on random V).
// Every head is computed alone, so the result depends neither on kHT nor on the batch.
//
// fp8_ds_mla rows (kDs; 8 or 16 heads per WG): the rows land as they lie (448 E4M3 NoPE
// values, 64 BF16 RoPE values, 7 UE8M0 block scales). S takes the NoPE dims on FP8 wgmma,
// each K step's fresh accumulators times its block's scale per entry, and the RoPE dims as
// four chained BF16 steps (Q's RoPE widened to BF16 once per item). P . V: the block
// scale varies along wgmma's K (the entries), so it is applied where each value is read,
// in registers. The NoPE blocks run on FP16 wgmma: a value is converted to FP16 exactly
// (one instruction) and multiplied by 2^(c - k), c its row's code and k the block's
// largest code so far (exact while c - k >= -12); O's block takes 2^(k_old - k) when k
// rises and 2^(k - 127) at the end. P is an FP16 plane (times 2^10) for them and a BF16
// plane for the RoPE dims (BF16 wgmma, the values as they lie). A 16-bit plane costs the
// tensor work of two E4M3 planes.
// BF16 queries over fp8_ds_mla rows (kBf16Q): the same, but S takes the NoPE dims on FP16
// wgmma with K from registers, the rows' E4M3 values converted exactly to FP16 (one
// instruction per two), a 64-dim block's four K steps chained in FP32 and then times the
// block's scale per entry. Q is stored in FP16, times a power of two per head that brings
// its largest value to [2^14, 2^15) (FP16's range is narrower than BF16's; the power is
// undone in the softmax scale), in the K order that lets each thread read its fragments'
// values 8 bytes at a time (q_nope_position); Q's RoPE dims, in BF16, take the same power.
#pragma once
#include <cstdint>

#include "../common/sm90.cuh"
#include "../common/softmax.cuh"
#include "../common/token_entries.cuh"
#include "../common/wgmma_ops.cuh"
#include "params.cuh"

namespace smla {
namespace fp8wg {

constexpr int kRows = 64;          // KV entries per tile

// Zeros in global memory: the rows that have no address (invalid indices, entries past a
// token's) are copied from here, so that no copy needs a test; their scores are masked by
// their ring entry (TokenWG::no_row). 640 bytes: an fp8_ds_mla row's data, or its scales.
static __device__ __align__(128) uint8_t zero_row[640];
constexpr int kWGThreads = 128;
constexpr float kPScale = 256.0f;
// P's factor in the FP16 plane over fp8_ds_mla rows: keeps p >= 2^-24 out of FP16's
// subnormals (scripts/ds_fp8_numerics.py: without it, rows at p ~ e^-16 whose block scale
// is 2^20 above the others' keep one or two bits; relative error 7.7e-3, with it 2.3e-5).
constexpr float kP16Scale = 1024.0f;

// A work item of a CTA's batch, resolved (work_item) before its tiles start: the token,
// its first head and split, and its tiles. A CTA takes its items in batches of up to
// kBatchItems, resolved at once (a lane each), and runs their tiles as one stream, the
// next item's first tiles gathered while the last ones of the item before are computed.
struct BatchItem {
    int t, h0, split;
    WorkItem w;
};
constexpr int kBatchItems = 32;

// Shared memory. Tiles and their row addresses belong to the WG, or, when the CTA's two
// WGs work on one token (kShared: two head groups of it), to the CTA: each WG then copies
// half of every tile's rows, each row is fetched once for both, and the memory saved
// holds four stages instead of two.
template <int kHT, bool kShared, bool kDs, bool kBf16Q = false> struct Layout {
    // Stages: as many as shared memory holds (two WGs of 16 heads fit three each).
    static constexpr int kStages = kShared ? 4 : kHT == 16 && !kDs ? 3 : 2;
    // fp8_ds_mla: tile_offset columns 0-447 hold the NoPE bytes, 512-639 the RoPE values
    // (BF16), then the rows' scale bytes (8 each), padded so that tiles stay 1 KB aligned.
    static constexpr int kScaleOff = kRows * 640;
    static constexpr int kTileBytes = kDs ? kScaleOff + 1024 : kRows * 512;
    static constexpr int kRowSlots = kStages + 1;                   // row-address ring
    static constexpr int kRings = kDs ? 2 : 1;                      // row and scale-row addresses
    static constexpr int kTilesBytes = (kStages * kTileBytes + kRings * kRowSlots * kRows * 8 + 1023) / 1024 * 1024;
    static constexpr int kRowInfoOff = kStages * kTileBytes;        // within the tiles' part
    static constexpr int kScaleRowOff = kRowInfoOff + kRowSlots * kRows * 8;
    // One WG's own part.
    static constexpr int kQBytes = kBf16Q ? kHT * SMLA_DS_MLA_NOPE * 2 : kHT * 512; // BF16 Q: its NoPE dims, FP16
    static constexpr int kPPlane = kHT * 128; // [HT rows][128 B], the first 64 B used (`fp8` rows: one)
    static constexpr int kQOff = 0;
    static constexpr int kPOff = kQOff + kQBytes;
    // fp8_ds_mla: P is a BF16 plane and an FP16 plane ([HT rows][128 B] each); Q's RoPE dims in BF16 ([HT rows][128 B]), the current tile's block
    // scales as floats ([64 rows][8], for S) and as FP16 pairs of rows 2i, 2i + 1 relative
    // to each block's running maximum code ([8 blocks][32], for P . V; pair i = 16a + 4b + c
    // at 16a + 4c + b: accumulate_ds reads a lane's four with one load), then per block the
    // factor O takes at this tile and that maximum code ([8] floats, [8] ints) follow.
    static constexpr int kQRopeOff = kPOff + 2 * kPPlane;
    static constexpr int kScaleTabOff = kQRopeOff + kHT * 128;
    static constexpr int kScalePairOff = kScaleTabOff + kRows * 8 * 4;
    static constexpr int kBlockOff = kScalePairOff + 8 * (kRows / 2) * 4;
    static constexpr int kBlockCodeOff = kBlockOff + 8 * 4;
    static constexpr int kColOff = kDs ? kBlockCodeOff + 8 * 4 : kQRopeOff; // [2 tiles][4 warps][HT]
    static constexpr int kMaxOff = kColOff + 2 * 4 * kHT * 4;      // final max [HT]
    static constexpr int kAlphaOff = kMaxOff + kHT * 4;            // rescale [HT]
    static constexpr int kItemOff = kAlphaOff + kHT * 4;           // BatchItem [kBatchItems], then 2 counts
    static constexpr int kOwnBytes = (kItemOff + kBatchItems * int(sizeof(BatchItem)) + 8 + 1023) / 1024 * 1024;
    static constexpr int kWGBytes = kShared ? kOwnBytes : kTilesBytes + kOwnBytes;
};

// WGs per SM: as many as shared memory holds (three only with 8 heads over `fp8` rows).
template <int kHT, bool kDs> constexpr int wgs_per_sm() { return kHT >= 16 || kDs ? 2 : 3; }
// WGs per CTA: the two WGs of one token when they share its tiles, otherwise one. A CTA
// of independent WGs would start them together (their first global loads stalling the
// SM at once) and hold the slots of those that finish first until the last one ends.
template <bool kShared> constexpr int wgs_per_cta() { return kShared ? 2 : 1; }
template <int kHT, bool kShared, bool kDs> constexpr int ctas_per_sm() { return kShared ? 1 : wgs_per_sm<kHT, kDs>(); }
template <int kHT, bool kShared, bool kDs, bool kBf16Q = false> constexpr int smem_bytes()
{
    using L = Layout<kHT, kShared, kDs, kBf16Q>;
    return (kShared ? L::kTilesBytes : 0) + wgs_per_cta<kShared>() * L::kWGBytes + 1024;
}
// A CTA takes at most 227 KB; an SM holds 228 KB, of which 1 KB per CTA is reserved.
template <int kHT, bool kShared, bool kDs, bool kBf16Q = false> constexpr bool fits_sm()
{
    return smem_bytes<kHT, kShared, kDs, kBf16Q>() <= 227 * 1024 &&
           ctas_per_sm<kHT, kShared, kDs>() * (smem_bytes<kHT, kShared, kDs, kBf16Q>() + 1024) <= 228 * 1024;
}
// Heads per WG over fp8_ds_mla rows: at most 16 (two WGs of 32 heads, each with its own
// two 41 KB stages, do not fit in shared memory).
constexpr int kDsMaxHeads = 16;
static_assert(fits_sm<8, false, false>() && fits_sm<16, false, false>() && fits_sm<32, false, false>() &&
                  fits_sm<16, true, false>() && fits_sm<32, true, false>() && fits_sm<8, false, true>() &&
                  fits_sm<16, false, true>() && fits_sm<8, true, true>() && fits_sm<16, true, true>() &&
                  fits_sm<8, false, true, true>() && fits_sm<16, false, true, true>() && fits_sm<8, true, true, true>() &&
                  fits_sm<16, true, true, true>(),
              "shared memory per SM");

// Register A fragments stay live until the wgmmas that read them are done: called after
// the wait, so that no register of a fragment is reused while a wgmma may still read it.
template <int N, int M> __device__ __forceinline__ void keep_live(const uint4 (&frag)[N][M])
{
#pragma unroll
    for (int n = 0; n < N; n++)
#pragma unroll
        for (int m = 0; m < M; m++)
            asm volatile("" ::"r"(frag[n][m].x), "r"(frag[n][m].y), "r"(frag[n][m].z), "r"(frag[n][m].w));
}

// BF16 Q's NoPE dims in S's K order (kBf16Q): within each 32-dim chunk, dims 8q + 4s + 2h
// and + 1 sit at K positions 16s + 8h + 2q and + 1, so that the thread holding K rows'
// positions 2q, 2q + 1, 2q + 8, 2q + 9 of the chunk's two K steps (s = 0, 1) reads their
// values as the 8 consecutive bytes 8q .. 8q + 7 of each row. `word` is the pair of dims
// 8j + 2m, + 1 of a head (j: which 8 dims): its byte in the head's row.
__device__ __forceinline__ constexpr int q_nope_position(int j, int m)
{
    return 2 * (32 * (j / 4) + 16 * (m / 2) + 8 * (m % 2) + 2 * (j % 4));
}

// 2^(sign * e) for a head of BF16 Q whose largest |value| is m:
// e brings that value into [2^14, 2^15), FP16's top octave but one (0 when the value is
// 0 or not finite; at least -110, so that 2^-e stays a float: only heads below 2^-96
// keep fewer than FP16's bits).
__device__ __forceinline__ float q_head_scale(float m, int sign)
{
    const int e = m > 0.f && m < INFINITY ? max(ilogbf(m) - 14, -110) : 0;
    return ldexpf(1.f, sign * e);
}

// Position in the O^T wgmma's K order of tile row r (see accumulate): row rr of 8-row
// block j of its 32-row step goes to K 16 (j / 2) + 4 (rr / 2) + 2 (rr % 2) + j % 2.
// Rows r and r + 8 of an even block are adjacent (k, k + 1, k even).
__device__ __forceinline__ int k_of_row(int r)
{
    const int step = r / 32, j = (r % 32) / 8, rr = r % 8;
    return step * 32 + (j / 2) * 16 + (rr / 2) * 4 + (rr % 2) * 2 + j % 2;
}

template <int kHT, bool kShared, bool kDs, bool kBf16Q = false> struct TokenWG {
    static_assert(!kDs || kHT <= kDsMaxHeads, "heads per WG over fp8_ds_mla rows");
    static_assert(!kBf16Q || kDs, "BF16 queries only over fp8_ds_mla rows");
    using L = Layout<kHT, kShared, kDs, kBf16Q>;
    static constexpr int kMine = kShared ? kRows / 2 : kRows; // rows of each tile this WG copies
    static constexpr int kSReg = kHT / 2;            // S^T accumulators per thread
    static constexpr int kCols = kHT / 4;            // heads per thread
    // How far a tile's scores may pass a head's running max before it moves (fp8m's and
    // bf16m's rule): O is rescaled less often, and p < 2^kMaxLag. Over `fp8` rows
    // 2^0.8 x kPScale = 445.7 <= 448, E4M3's largest value; over fp8_ds_mla rows P is
    // 16-bit (2^4 x kP16Scale = 16384 in FP16).
    static constexpr float kMaxLag = kDs ? 4.f : 0.8f;
    // Latency, not arithmetic, bounds a WG: few waits per tile. Registers decide how many
    // S steps share one wait and how many V^T fragment groups are built before one.
    // K steps accumulated in the tensor core before FP32 (fp8m's 4: LSE errors <= 1.7e-3
    // against the 1e-2 limit, session 32), and accumulator sets per wait: one wait for
    // S's 16 steps below 32 heads.
    static constexpr int kChain = 4;
    static constexpr int kBatch = kHT >= 32 ? 2 : 4;
    static_assert(16 % (kBatch * kChain) == 0, "whole batches of chains");
    static constexpr int kGroupsPerWait = kHT >= 32 ? 4 : 8; // of the tile's 8 groups
    // P . V's last wgmmas over `fp8` rows complete under the next tile's gather and first S
    // wgmmas, their fragments held meanwhile: at 16 heads only (8 run three CTAs an SM, at
    // 168 registers, and 32 hold twice the O; both would spill).
    static constexpr bool kDeferPV = !kDs && kHT == 16;

    const AttentionParams &p;
    uint8_t *tiles; // the tiles, then the row-address ring (the CTA's when kShared)
    uint8_t *own;   // this WG's Q, P, column buffers
    int wg, tid, warp, lane;

    __device__ void sync() const { named_barrier(1 + wg, kWGThreads); }
    // Tile hand-off: every WG that copies rows of the tiles takes part.
    __device__ void tile_sync() const
    {
        if (kShared)
            named_barrier(4, 2 * kWGThreads);
        else
            sync();
    }
    __device__ int row0() const { return kShared ? wg * kMine : 0; } // first row this WG copies

    // The tile copies: warp w copies rows row0 + w + 4k of this WG's share. Their swizzle
    // (row % 8) takes two values, w and w + 4 (row0 is 0 or 32), so a chunk has two
    // destinations: chunk_dst(tile, col, k % 2) + (k / 2) * 8 rows for row k.
    __device__ uint8_t *chunk_dst(uint8_t *tile, int col, int h) const
    {
        const int row = row0() + warp + 4 * h;
        return tile + (col >> 7) * (kRows * 128) + row * 128 + ((((col & 127) >> 4) ^ (warp + 4 * h)) << 4);
    }
    // copy(k, a) for each row k of the warp, a its ring entry (an address with its tag). The
    // addresses are read four at a time before their copies: a copy's asm keeps a later load
    // behind it, so one load per copy would cost a shared-memory round trip each.
    template <class Copy> __device__ void for_each_row(const uint64_t *info, Copy copy) const
    {
        static_assert((kMine / 4) % 4 == 0, "whole groups of four rows");
#pragma unroll
        for (int k0 = 0; k0 < kMine / 4; k0 += 4) {
            uint64_t a[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                a[i] = info[row0() + warp + 4 * (k0 + i)];
#pragma unroll
            for (int i = 0; i < 4; i++)
                copy(k0 + i, a[i]);
        }
    }

    // The ring entry of a row without an address: the zero row's, tagged as the others.
    __device__ static uint64_t no_row() { return reinterpret_cast<uint64_t>(zero_row) | (kDs ? kRowDsMla : kRowE4M3); }
    // Row (and, kDs, scale-row) address of entry slot es into the rings' entry `slot`.
    __device__ void store_row(uint64_t *rowinfo, uint64_t *scaleinfo, int slot, EntrySlot es) const
    {
        uint64_t scale_row = 0;
        const uint64_t a = slot_row(p, es, kDs ? &scale_row : nullptr);
        rowinfo[slot] = a ? a : no_row();
        if (kDs)
            scaleinfo[slot] = a ? scale_row : reinterpret_cast<uint64_t>(zero_row);
    }

    // An `fp8` tile: lane c copies its row's 16-byte chunk c. Every entry is an address
    // tagged kRowE4M3 (the launch takes `fp8` pools only), the zero row's included: the tag
    // comes off with the lane's offset.
    __device__ void load_tile(uint8_t *tile, const uint64_t *info) const
    {
        uint8_t *const dst[2] = {chunk_dst(tile, 16 * lane, 0), chunk_dst(tile, 16 * lane, 1)};
        const uint64_t off = lane * 16 - kRowE4M3;
        for_each_row(info, [&](int k, uint64_t a) {
            cp_async16(dst[k % 2] + (k / 2) * 8 * 128, reinterpret_cast<const void *>(a + off), 16);
        });
    }

    // An fp8_ds_mla tile (kDs): lane c copies the row's 16-byte data chunk c (NoPE chunks
    // 0-27 to columns 16c, RoPE chunks 28-31 to 16c + 64) and lanes 0-3 also chunk 32 + c
    // (RoPE, 512 bytes further in the row, to columns 16c + 576) by a predicated copy, so
    // that the warp never diverges. Threads tid < kMine (whole warps) copy their row's 8
    // scale bytes. Every entry is an address tagged kRowDsMla (the launch takes fp8_ds_mla
    // pools only), the zero row's included; a scale row is untagged.
    __device__ void load_ds_tile(uint8_t *tile, const uint64_t *info, const uint64_t *scale_info) const
    {
        constexpr int kExtra = kDsNopeChunks + kDsRopeChunks - 32; // lanes with a second chunk
        const int c1 = lane, c2 = 32 + lane % kExtra;
        const bool extra = lane < kExtra;
        const int col1 = c1 < kDsNopeChunks ? 16 * c1 : 16 * c1 + 64, col2 = 16 * c2 + 64;
        uint8_t *const dst1[2] = {chunk_dst(tile, col1, 0), chunk_dst(tile, col1, 1)};
        uint8_t *const dst2[2] = {chunk_dst(tile, col2, 0), chunk_dst(tile, col2, 1)};
        if (tid < kMine) {
            const int row = row0() + tid;
            cp_async8(tile + L::kScaleOff + 8 * row, reinterpret_cast<const void *>(scale_info[row]), 8);
        }
        const uint64_t off = 16 * c1 - kRowDsMla;
        for_each_row(info, [&](int k, uint64_t a) {
            // The second chunk is 16 * (c2 - c1) bytes further: one address serves both.
            const uint8_t *src = reinterpret_cast<const uint8_t *>(a + off);
            cp_async16(dst1[k % 2] + (k / 2) * 8 * 128, src, 16);
            cp_async16_if(extra, dst2[k % 2] + (k / 2) * 8 * 128, src + 512, 16);
        });
    }

    // da, db: descriptors of the tile and of Q at K step 0; steps add constant offsets.
    // waited(): run after the first wait, which also completes the tile before's P . V
    // (accumulate leaves it in flight under kDeferPV).
    template <class Waited> __device__ void score(float (&s)[kSReg], SmemDesc da, SmemDesc db, Waited waited) const
    {
#pragma unroll
        for (int b = 0; b < 16; b += kBatch * kChain) {
            float part[kBatch][kSReg];
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < kBatch; j++)
#pragma unroll
                for (int c = 0; c < kChain; c++) {
                    const int ks = b + j * kChain + c;
                    WgmmaFp8SS<kHT>::run(part[j], da + k_step_units(ks, kRows),
                                         db + k_step_units(ks, kHT), c > 0);
                }
            wgmma_commit();
            wgmma_wait<0>();
            if (b == 0)
                waited();
#pragma unroll
            for (int j = 0; j < kBatch; j++) {
                fence_regs(part[j]);
#pragma unroll
                for (int i = 0; i < kSReg; i++)
                    s[i] = (b == 0 && j == 0) ? part[0][i] : s[i] + part[j][i];
            }
        }
    }

    // The block scales of rows r_lo and r_lo + 8 from the tile's scale table. Those rows
    // (16 warp .. 16 warp + 15) were written by this warp's threads (one per half row): a
    // warp barrier orders them before the reads.
    __device__ static void row_scales(const float *scales, int r_lo, float (&scale)[2][8])
    {
        __syncwarp();
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float4 a = *reinterpret_cast<const float4 *>(scales + 8 * (r_lo + 8 * h)),
                         b = *reinterpret_cast<const float4 *>(scales + 8 * (r_lo + 8 * h) + 4);
            scale[h][0] = a.x, scale[h][1] = a.y, scale[h][2] = a.z, scale[h][3] = a.w;
            scale[h][4] = b.x, scale[h][5] = b.y, scale[h][6] = b.z, scale[h][7] = b.w;
        }
    }

    // S's RoPE part: Q . K over the RoPE dims (BF16), four chained K steps.
    __device__ static void score_rope(float (&part)[kSReg], SmemDesc da_rope, SmemDesc db_rope)
    {
#pragma unroll
        for (int r = 0; r < 4; r++)
            WgmmaBf16SS<kHT>::run(part, da_rope + k_step_units(r, kRows), db_rope + k_step_units(r, kHT), r > 0);
    }
    // s = part times f (first) or s += part times f: f is f_lo for row r_lo's registers,
    // f_hi for row r_lo + 8's (the rows' block scales; 1 for the RoPE part).
    __device__ static void add_scaled(float (&s)[kSReg], const float (&part)[kSReg], bool first, float f_lo, float f_hi)
    {
#pragma unroll
        for (int i = 0; i < kSReg; i++) {
            const float f = (i % 4) / 2 ? f_hi : f_lo;
            s[i] = first ? part[i] * f : fmaf(part[i], f, s[i]);
        }
    }

    // S over an fp8_ds_mla tile: the 14 NoPE K steps on FP8 wgmma, each step's fresh
    // accumulators times its block's scale for the thread's two rows, then the RoPE dims as
    // one more part, four BF16 steps chained (BF16 wgmma accumulates in FP32). scales: the
    // tile's scale table, db: Q at K step 0, db_rope: Q's RoPE dims in BF16.
    __device__ void score_ds(float (&s)[kSReg], const uint8_t *tile, const float *scales, SmemDesc db,
                             SmemDesc db_rope) const
    {
        constexpr int kNopeSteps = SMLA_DS_MLA_NOPE / 32, kParts = kNopeSteps + 1;
        const int r_lo = warp * 16 + lane / 4;
        float scale[2][8];
        row_scales(scales, r_lo, scale);
        const SmemDesc da = desc_sw128(tile, 0), da_rope = desc_sw128(tile + 4 * kRows * 128, 0);
#pragma unroll
        for (int b = 0; b < kParts; b += kBatch) {
            float part[kBatch][kSReg];
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < kBatch; j++) {
                const int ks = b + j;
                if (ks < kNopeSteps)
                    WgmmaFp8SS<kHT>::run(part[j], da + k_step_units(ks, kRows), db + k_step_units(ks, kHT), 0);
                else if (ks == kNopeSteps)
                    score_rope(part[j], da_rope, db_rope);
            }
            wgmma_commit();
            wgmma_wait<0>();
#pragma unroll
            for (int j = 0; j < kBatch; j++) {
                const int ks = b + j;
                if (ks >= kParts)
                    continue;
                fence_regs(part[j]);
                if (ks < kNopeSteps)
                    add_scaled(s, part[j], ks == 0, scale[0][ks / 2], scale[1][ks / 2]);
                else
                    add_scaled(s, part[j], false, 1.f, 1.f);
            }
        }
    }

    // S over an fp8_ds_mla tile under BF16 queries (kBf16Q): per 64-dim NoPE block, four FP16
    // K steps chained in FP32 with A from registers (the thread's rows r_lo, r_lo + 8, their
    // bytes 8q .. 8q + 7 of each 32-dim chunk converted exactly: q_nope_position) and Q (db,
    // FP16, scaled per head) from shared memory, then times the block's scale per entry; the
    // RoPE dims as one more part, as in score_ds. Four parts share one wait.
    __device__ void score_ds_bf16(float (&s)[kSReg], const uint8_t *tile, const float *scales, SmemDesc db,
                                  SmemDesc db_rope) const
    {
        constexpr int kBlocks = SMLA_DS_MLA_NOPE / 64, kParts = kBlocks + 1, kPer = 4;
        const int g = lane / 4, q = lane % 4, r_lo = warp * 16 + g;
        // Chunk c of row r_lo: block c / 4, 16-byte chunk 2 (c % 4) + q / 2 swizzled by the
        // row's r % 8 = g, byte 8 (q % 2); row r_lo + 8 is 8 rows (1 KB) further.
        const uint8_t *row = tile + r_lo * 128 + 8 * (q % 2);
        int off[4];
#pragma unroll
        for (int m = 0; m < 4; m++)
            off[m] = ((2 * m + q / 2) ^ g) << 4;
        float scale[2][8];
        row_scales(scales, r_lo, scale);
        const SmemDesc da_rope = desc_sw128(tile + 4 * kRows * 128, 0);
#pragma unroll
        for (int b = 0; b < kParts; b += kPer) {
            uint4 frag[kPer][4]; // per block: its four K steps' A fragments
            float part[kPer][kSReg];
#pragma unroll
            for (int j = 0; j < kPer; j++) {
                const int blk = b + j;
                if (blk >= kBlocks)
                    continue;
#pragma unroll
                for (int cc = 0; cc < 2; cc++) {
                    const int c = 2 * blk + cc;
                    const uint8_t *at = row + (c / 4) * (kRows * 128) + off[c % 4];
                    const uint2 lo = *reinterpret_cast<const uint2 *>(at), hi = *reinterpret_cast<const uint2 *>(at + 8 * 128);
                    const uint32_t wl[4] = {e4m3x2_to_f16x2<0>(lo.x), e4m3x2_to_f16x2<1>(lo.x),
                                            e4m3x2_to_f16x2<0>(lo.y), e4m3x2_to_f16x2<1>(lo.y)};
                    const uint32_t wh[4] = {e4m3x2_to_f16x2<0>(hi.x), e4m3x2_to_f16x2<1>(hi.x),
                                            e4m3x2_to_f16x2<0>(hi.y), e4m3x2_to_f16x2<1>(hi.y)};
                    // A registers: (row r_lo, K 2q..), (r_lo + 8, 2q..), (r_lo, 2q + 8..), (r_lo + 8, 2q + 8..).
                    frag[j][2 * cc] = make_uint4(wl[0], wh[0], wl[1], wh[1]);
                    frag[j][2 * cc + 1] = make_uint4(wl[2], wh[2], wl[3], wh[3]);
                }
            }
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < kPer; j++) {
                const int blk = b + j;
                if (blk < kBlocks) {
#pragma unroll
                    for (int st = 0; st < 4; st++)
                        WgmmaF16RS<kHT>::run(part[j], frag[j][st], db + k_step_units(4 * blk + st, kHT), st > 0);
                } else if (blk == kBlocks) {
                    score_rope(part[j], da_rope, db_rope);
                }
            }
            wgmma_commit();
            wgmma_wait<0>();
            keep_live(frag);
#pragma unroll
            for (int j = 0; j < kPer; j++) {
                const int blk = b + j;
                if (blk >= kParts)
                    continue;
                fence_regs(part[j]);
                if (blk < kBlocks)
                    add_scaled(s, part[j], blk == 0, scale[0][blk], scale[1][blk]);
                else
                    add_scaled(s, part[j], false, 1.f, 1.f);
            }
        }
    }

    // O^T += V^T . P^T over the tile, in 8 groups (K step of 32 rows x pair of M-tiles,
    // 128 dims): A fragments from two transposing matrix loads and 8 byte permutes, then 4
    // wgmmas (hi, lo). kGroupsPerWait groups are built, issued, and waited for together;
    // under kDeferPV the last ones are left in flight, with their fragments in frag (the
    // caller's), for the next tile's first S wait or the item's end to complete.
    // M-tile 2 pair + m of warp w is the 16 dims of chunk 2w + m of the pair's 128 (16
    // bytes of a row): lane l gives the address of the step's row l (8-row block l / 8),
    // and gets, per block j, dims 2g, 2g + 1 of rows 2q, 2q + 1. Blocks j, j + 1 permuted
    // give dim 2g (M row g) and 2g + 1 (row g + 8) at rows 2q, 8 + 2q, 2q + 1, 9 + 2q of
    // the pair of blocks: K 4q .. 4q + 3 (16 more for blocks 2, 3) in k_of_row's order.
    // The swizzle (row % 8 = lane % 8) is the same for every step and pair: one base per m.
    __device__ void accumulate(float (&o)[8][kSReg], const uint8_t *tile, SmemDesc dp,
                               uint4 (&frag)[kGroupsPerWait][2]) const
    {
        uint32_t base[2];
#pragma unroll
        for (int m = 0; m < 2; m++)
            base[m] = smem_addr(tile + lane * 128 + (((2 * warp + m) ^ (lane % 8)) << 4));
#pragma unroll
        for (int first = 0; first < 8; first += kGroupsPerWait) {
#pragma unroll
            for (int n = 0; n < kGroupsPerWait; n++) {
                const int step = (first + n) / 4, pair = (first + n) % 4;
#pragma unroll
                for (int m = 0; m < 2; m++) {
                    uint32_t r[4];
                    ldmatrix_x4_trans(base[m] + pair * (kRows * 128) + step * 32 * 128, r);
                    frag[n][m] = make_uint4(prmt(r[0], r[1], 0x6240), prmt(r[0], r[1], 0x7351),
                                            prmt(r[2], r[3], 0x6240), prmt(r[2], r[3], 0x7351));
                }
            }
            wgmma_fence();
#pragma unroll
            for (int n = 0; n < kGroupsPerWait; n++) {
                const int step = (first + n) / 4, pair = (first + n) % 4;
                const uint64_t b = dp + (step * 32) / 16;
                WgmmaFp8RS<kHT>::run(o[2 * pair], frag[n][0], b, 1);
                WgmmaFp8RS<kHT>::run(o[2 * pair + 1], frag[n][1], b, 1);
            }
            wgmma_commit();
            if (first + kGroupsPerWait < 8) {
                wgmma_wait<0>();
                keep_live(frag);
            }
        }
        if constexpr (!kDeferPV) {
            wgmma_wait<0>();
            accumulated(o, frag);
        }
    }
    // After accumulate's wgmmas complete: its last fragments and O may be used again.
    __device__ static void accumulated(float (&o)[8][kSReg], const uint4 (&frag)[kGroupsPerWait][2])
    {
        keep_live(frag);
#pragma unroll
        for (int m = 0; m < 8; m++)
            fence_regs(o[m]);
    }

    // O^T += V^T . P^T over an fp8_ds_mla tile, M-tile m the dims of block m (NoPE, m < 7,
    // FP16 wgmma) or the RoPE dims (m = 7, BF16 wgmma), warp w their 16 dims from 16w, in
    // 16 units (M-tile x K step of 32 entries: two 16-bit K steps). K is in entry order (P's
    // planes: FP16 at dp16, BF16 at dp). NoPE: one ldmatrix .trans of the E4M3 bytes as
    // 16-bit dim pairs gives lane (g, q) dims 2g, 2g + 1 of entries 2q, 2q + 1 of each 8-row
    // block j; one byte permute a block puts each dim's two entries together, converted to
    // FP16 and times the entries' relative block scales (an FP16 pair from the pair table):
    // dim 2g is M row g, 2g + 1 row g + 8. RoPE: two ldmatrix .trans of the BF16 values are
    // the fragments as they come (dims g, g + 8 of the warp's 16 at rows g, g + 8). The
    // swizzle (row % 8 = lane % 8) is the same for every step: one base per 16-byte column.
    __device__ void accumulate_ds(float (&o)[8][kSReg], const uint8_t *tile, const uint32_t *scale_pairs,
                                  SmemDesc dp, SmemDesc dp16) const
    {
        constexpr int kUnits = 16, kPerWait = kHT >= 16 ? 8 : 16;
        const int q = lane % 4;
        const uint32_t row = smem_addr(tile + lane * 128);
        // RoPE, per BF16 K step: matrix j = lane / 8 is entries 8 (j / 2) .. + 7 of the step
        // and the warp's dims 8 (j % 2) .. + 7, in the tile's fifth 128-byte column block.
        const int rope_row = 8 * (lane / 16) + lane % 8;
        const uint32_t rope = smem_addr(tile + 4 * (kRows * 128) + rope_row * 128 +
                                        (((2 * warp + (lane / 8) % 2) ^ (rope_row % 8)) << 4));
#pragma unroll
        for (int first = 0; first < kUnits; first += kPerWait) {
            uint4 frag[kPerWait][2];
#pragma unroll
            for (int n = 0; n < kPerWait; n++) {
                const int m = (first + n) / 2, st = (first + n) % 2;
                if (m < 7) {
                    const int c = 4 * m + warp; // 16-byte column of the NoPE bytes
                    uint32_t r[4];
                    ldmatrix_x4_trans(row + (c / 8) * (kRows * 128) + st * 32 * 128 + (((c % 8) ^ (lane % 8)) << 4), r);
                    // The scale pairs of entries 8j + 2q, + 1 (j = 0..3): one 16-byte load.
                    const uint4 sp4 = *reinterpret_cast<const uint4 *>(scale_pairs + m * (kRows / 2) + 16 * st + 4 * q);
                    const uint32_t sps[4] = {sp4.x, sp4.y, sp4.z, sp4.w};
                    uint32_t w[8];
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        const uint32_t v = prmt(r[j], 0, 0x3120); // dim 2g of both entries, then dim 2g + 1
                        const uint32_t sp = sps[j];
                        w[2 * j] = f16x2_times(e4m3x2_to_f16x2<0>(v), sp);
                        w[2 * j + 1] = f16x2_times(e4m3x2_to_f16x2<1>(v), sp);
                    }
                    frag[n][0] = make_uint4(w[0], w[1], w[2], w[3]);
                    frag[n][1] = make_uint4(w[4], w[5], w[6], w[7]);
                } else {
#pragma unroll
                    for (int k = 0; k < 2; k++) {
                        uint32_t r[4];
                        ldmatrix_x4_trans(rope + (2 * st + k) * 16 * 128, r);
                        frag[n][k] = make_uint4(r[0], r[1], r[2], r[3]);
                    }
                }
            }
            wgmma_fence();
#pragma unroll
            for (int n = 0; n < kPerWait; n++) {
                const int m = (first + n) / 2, st = (first + n) % 2;
#pragma unroll
                for (int k = 0; k < 2; k++) {
                    if (m < 7)
                        WgmmaF16RS<kHT>::run(o[m], frag[n][k], dp16 + k_step_units(2 * st + k, kHT), 1);
                    else
                        WgmmaBf16RS<kHT>::run(o[m], frag[n][k], dp + k_step_units(2 * st + k, kHT), 1);
                }
            }
            wgmma_commit();
            wgmma_wait<0>();
            keep_live(frag);
        }
#pragma unroll
        for (int m = 0; m < 8; m++)
            fence_regs(o[m]);
    }

    // Q of item b, 16 bytes a thread at a time: columns tid % kQVecs of heads tid / kQVecs
    // + (128 / kQVecs) k. Read into registers, so that the loads can be issued before the
    // shared memory they go to is free (the item before's epilogue runs under them).
    static constexpr int kQVecs = kBf16Q ? 64 : 32, kQPer = kHT * kQVecs / kWGThreads;
    __device__ static int q_head(int tid, int k) { return tid / kQVecs + (kWGThreads / kQVecs) * k; }
    __device__ void load_q(const BatchItem &b, uint4 (&qv)[kQPer]) const
    {
        constexpr int kElem = kBf16Q ? 2 : 1;
        const uint8_t *q = static_cast<const uint8_t *>(p.q) + (int64_t(b.t) * p.q_token_stride + int64_t(b.h0) * 512) * kElem;
#pragma unroll
        for (int k = 0; k < kQPer; k++)
            qv[k] = *reinterpret_cast<const uint4 *>(q + q_head(tid, k) * 512 * kElem + 16 * (tid % kQVecs));
    }

    // Q from the registers load_q filled, as S reads it, before the item's first tile
    // barrier; and the factor that turns S into log2 units per column (score_scale).
    // FP8 Q: as it lies; over fp8_ds_mla rows its RoPE dims (448-511) also widened to BF16
    // for S's BF16 steps. BF16 Q (kBf16Q): FP16 times 2^-e per head (e: the largest |value|
    // of the head's 512 dims in [2^(e+14), 2^(e+15)), 0 if it is 0 or not finite): the
    // NoPE dims in S's K order (q_nope_position); the RoPE dims in BF16, times the same
    // power (exact); score_scale undoes the power per column. A head's largest value is a
    // warp maximum of each of its two warps, exchanged through colbuf (free until the
    // first tile's scores).
    __device__ void store_q(const uint4 (&qv)[kQPer], float (&score_scale)[kCols]) const
    {
        uint8_t *qs = own + L::kQOff;
        uint8_t *qrope = own + L::kQRopeOff;
        const int tid = opaque(this->tid), lane = tid % 32, warp = tid / 32; // addresses per item
        const int j = tid % kQVecs;
#pragma unroll
        for (int c = 0; c < kCols; c++)
            score_scale[c] = p.scale_log2;
        if constexpr (kBf16Q) {
            float *colbuf = reinterpret_cast<float *>(own + L::kColOff);
#pragma unroll
            for (int k = 0; k < kQPer; k++) {
                const uint32_t w[4] = {qv[k].x, qv[k].y, qv[k].z, qv[k].w};
                float m = 0.f;
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float2 f = bf16x2_to_float2(w[i]);
                    m = fmaxf(m, fmaxf(fabsf(f.x), fabsf(f.y)));
                }
#pragma unroll
                for (int d = 16; d > 0; d /= 2)
                    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
                if (lane == 0)
                    colbuf[warp * kQPer + k] = m;
            }
            sync();
            // Head h's two warps: 2 (h % 2) and 2 (h % 2) + 1, its index k = h / 2.
            const auto head_max = [&](int h) {
                const float *wm = colbuf + 2 * (h % 2) * kQPer + h / 2;
                return fmaxf(wm[0], wm[kQPer]);
            };
            constexpr int kNopeVecs = SMLA_DS_MLA_NOPE / 8;
#pragma unroll
            for (int k = 0; k < kQPer; k++) {
                const int head = q_head(tid, k);
                const float down = q_head_scale(head_max(head), -1);
                const uint32_t w[4] = {qv[k].x, qv[k].y, qv[k].z, qv[k].w};
                if (j < kNopeVecs) {
#pragma unroll
                    for (int m = 0; m < 4; m++) {
                        const float2 f = bf16x2_to_float2(w[m]);
                        const __half2 h = __floats2half2_rn(f.x * down, f.y * down);
                        *reinterpret_cast<__half2 *>(qs + tile_offset(kHT, head, q_nope_position(j, m))) = h;
                    }
                } else {
                    uint32_t r[4];
#pragma unroll
                    for (int m = 0; m < 4; m++) {
                        const float2 f = bf16x2_to_float2(w[m]);
                        const __nv_bfloat162 b = __floats2bfloat162_rn(f.x * down, f.y * down);
                        r[m] = *reinterpret_cast<const uint32_t *>(&b);
                    }
                    *reinterpret_cast<uint4 *>(qrope + tile_offset(kHT, head, (j - kNopeVecs) * 16)) =
                        make_uint4(r[0], r[1], r[2], r[3]);
                }
            }
#pragma unroll
            for (int c = 0; c < kCols; c++)
                score_scale[c] = p.scale_log2 * q_head_scale(head_max(acc_col(col_reg(c), lane)), 1);
        } else {
            constexpr int kNopeVecs = SMLA_DS_MLA_NOPE / 16;
#pragma unroll
            for (int k = 0; k < kQPer; k++) {
                const int head = q_head(tid, k);
                *reinterpret_cast<uint4 *>(qs + tile_offset(kHT, head, 16 * j)) = qv[k];
                if (kDs && j >= kNopeVecs) {
                    const uint32_t w[4] = {qv[k].x, qv[k].y, qv[k].z, qv[k].w};
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        *reinterpret_cast<uint4 *>(qrope + tile_offset(kHT, head, (2 * (j - kNopeVecs) + h) * 16)) =
                            make_uint4(e4m3x2_to_bf16x2<0>(w[2 * h]), e4m3x2_to_bf16x2<1>(w[2 * h]),
                                       e4m3x2_to_bf16x2<0>(w[2 * h + 1]), e4m3x2_to_bf16x2<1>(w[2 * h + 1]));
                }
            }
        }
    }

    __device__ BatchItem *batch() const { return reinterpret_cast<BatchItem *>(own + L::kItemOff); }
    __device__ int *batch_counts() const { return reinterpret_cast<int *>(own + L::kItemOff + kBatchItems * sizeof(BatchItem)); }

    // Work item `item`'s token, first head and split (its tiles unknown).
    __device__ BatchItem item_of(int item) const
    {
        const int token_group = item / p.splits, groups = p.num_heads / kHT;
        BatchItem b;
        b.t = token_group / groups;
        b.h0 = token_group % groups * kHT;
        b.split = item % p.splits;
        return b;
    }

    // The batch of items first + k * stride (k < candidates <= kBatchItems, item < items),
    // resolved by warp 0's lanes at once: the items with tiles, in order, at the start of
    // the table, tokens without an active entry at its end, their output written here by
    // the whole WG. Returns the items with tiles.
    __device__ int resolve_batch(int first, int stride, int candidates, int items) const
    {
        BatchItem *tab = batch();
        int *counts = batch_counts();
        sync(); // the batch before is done with the table
        if (warp == 0) {
            const int64_t item = first + int64_t(lane) * stride; // past items for lanes of a short batch
            ItemKind kind = ItemKind::kNothing;
            BatchItem b;
            if (lane < candidates && item < items) {
                b = item_of(static_cast<int>(item));
                kind = item_kind(p, b.t, b.split, kRows, &b.w);
            }
            const unsigned below = (1u << lane) - 1;
            const unsigned tiles = __ballot_sync(0xffffffffu, kind == ItemKind::kTiles);
            const unsigned empty = __ballot_sync(0xffffffffu, kind == ItemKind::kEmptyToken);
            if (kind == ItemKind::kTiles)
                tab[__popc(tiles & below)] = b;
            else if (kind == ItemKind::kEmptyToken)
                tab[kBatchItems - 1 - __popc(empty & below)] = b;
            if (lane == 0) {
                counts[0] = __popc(tiles);
                counts[1] = __popc(empty);
            }
        }
        sync();
        const int n_tiles = counts[0], n_empty = counts[1];
        for (int k = 0; k < n_empty; k++) {
            const BatchItem &b = tab[kBatchItems - 1 - k];
            write_empty_token(p, b.t, b.h0, kHT, tid, kWGThreads);
        }
        return n_tiles;
    }

    // The items first + k * stride (k < candidates, item < items): Q of the first loaded
    // while the batch is resolved, then its items with tiles run.
    __device__ void run_items(int first, int stride, int candidates, int items) const
    {
        const BatchItem guess = item_of(first);
        uint4 qv[kQPer];
        load_q(guess, qv);
        const int count = resolve_batch(first, stride, candidates, items);
        if (count > 0)
            run_batch(count, guess, qv);
    }

    // The count items of the table as one stream of tiles (g: the tile's index in the
    // stream), heads h0..h0+kHT-1 of each item's token, its tiles [first, first + ntiles).
    // qv: Q of `guess`, loaded before the batch was resolved (its address needs no lookup),
    // the batch's first item unless that one had nothing to do.
    __device__ void run_batch(int count, const BatchItem &guess, uint4 (&qv)[kQPer]) const
    {
        const BatchItem *tab = batch();
        uint8_t *ps = own + L::kPOff;
        uint64_t *rowinfo = reinterpret_cast<uint64_t *>(tiles + L::kRowInfoOff);
        uint64_t *scaleinfo = reinterpret_cast<uint64_t *>(tiles + L::kScaleRowOff); // kDs only
        float *scaletab = reinterpret_cast<float *>(own + L::kScaleTabOff);             // kDs only
        uint32_t *scalepairs = reinterpret_cast<uint32_t *>(own + L::kScalePairOff);    // kDs only
        float *blockinfo = reinterpret_cast<float *>(own + L::kBlockOff);                // kDs only
        int *blockcode = reinterpret_cast<int *>(own + L::kBlockCodeOff);                // kDs only
        float *colbuf = reinterpret_cast<float *>(own + L::kColOff);
        float *mrun = reinterpret_cast<float *>(own + L::kMaxOff);
        float *alpha_s = reinterpret_cast<float *>(own + L::kAlphaOff);
        constexpr int kStages = L::kStages, kSlots = L::kRowSlots;
        const int r0 = row0();
        int total = 0;
        for (int k = 0; k < count; k++)
            total += tab[k].w.ntiles;

        const SmemDesc desc_q = desc_sw128(own + L::kQOff, 0), desc_p = desc_sw128(ps, 0);
        const auto gather = [&](int g, int slot) {
            uint8_t *dst = tiles + (g % kStages) * L::kTileBytes;
            if constexpr (kDs)
                load_ds_tile(dst, rowinfo + slot * kRows, scaleinfo + slot * kRows);
            else
                load_tile(dst, rowinfo + slot * kRows);
        };
        // The stream's tile whose row addresses are loaded next: item ai, its tile at.
        // Its item's fields are held in registers (read from the table once an item, not on
        // every tile's path to the slot-id load): a_e, the thread's entry in that tile.
        int ai = 0, a_left = tab[0].w.ntiles, a_e = tab[0].w.first * kRows + r0 + tid;
        int a_t = tab[0].t, a_n = tab[0].w.n, a_swa = tab[0].w.n_swa;
        const auto advance = [&]() {
            a_e += kRows;
            if (--a_left == 0 && ++ai < count) {
                const BatchItem &nb = tab[ai];
                a_left = nb.w.ntiles;
                a_e = nb.w.first * kRows + r0 + tid;
                a_t = nb.t;
                a_n = nb.w.n;
                a_swa = nb.w.n_swa;
            }
        };

        // Row addresses (this WG's share) of the first kStages tiles; the gather of the first
        // kStages - 1, one cp.async group each. One group is committed per tile, empty or
        // not, so that "tile g landed" is always the same wait.
        if (tab[0].t != guess.t || tab[0].h0 != guess.h0)
            load_q(tab[0], qv);
        // (Their slot ids loaded together, then the addresses stored: one round trip.)
        EntrySlot first_slots[kStages];
#pragma unroll
        for (int i = 0; i < kStages; i++) {
            first_slots[i] = EntrySlot{-1, true};
            if (i < total) {
                if (tid < kMine && a_e < a_n)
                    first_slots[i] = entry_slot(p, a_t, a_e, a_swa);
                advance();
            }
        }
#pragma unroll
        for (int i = 0; i < kStages; i++) {
            if (tid < kMine && i < total)
                store_row(rowinfo, scaleinfo, i * kRows + r0 + tid, first_slots[i]);
        }
        tile_sync();
        for (int i = 0; i < kStages - 1; i++) {
            if (i < total)
                gather(i, i);
            cp_async_commit();
        }

        // accumulate's fragments: under kDeferPV those of the wgmmas left in flight (zeros
        // before the first).
        uint4 pv_frag[kGroupsPerWait][2] = {};
        int g = 0;
        for (int item = 0; item < count; item++) {
            const BatchItem &b = tab[item];
            float score_scale[kCols];
            store_q(qv, score_scale);
            float o[8][kSReg];
#pragma unroll
            for (int m = 0; m < 8; m++)
#pragma unroll
                for (int i = 0; i < kSReg; i++)
                    o[m][i] = 0.f;
            float l[kCols], m_run[kCols];
#pragma unroll
            for (int c = 0; c < kCols; c++) {
                l[c] = 0.f;
                m_run[c] = -INFINITY;
            }
            int k_run[2] = {0, 0}; // kDs: the largest codes so far of this warp's blocks

            const int ntiles = b.w.ntiles;
            for (int it = 0; it < ntiles; it++, g++) {
                const uint8_t *tile = tiles + (g % kStages) * L::kTileBytes;
                const uint64_t *info = rowinfo + (g % kSlots) * kRows;
                cp_async_wait<kStages - 2>();
                fence_proxy_async();
                tile_sync(); // tile g landed; tile g-1 is finished by every WG that reads it
                if constexpr (kDs) {
                    // The tile's block scales as floats, for S (each warp reads the rows it
                    // wrote) and P . V (read after the P barrier): a thread per half row.
                    static_assert(kWGThreads * 4 == kRows * 8, "a thread per half row");
                    const uint32_t sb = *reinterpret_cast<const uint32_t *>(tile + L::kScaleOff + 4 * tid);
                    *reinterpret_cast<float4 *>(scaletab + 4 * tid) = make_float4(
                        ue8m0_to_float(static_cast<uint8_t>(sb)), ue8m0_to_float(static_cast<uint8_t>(sb >> 8)),
                        ue8m0_to_float(static_cast<uint8_t>(sb >> 16)), ue8m0_to_float(static_cast<uint8_t>(sb >> 24)));
                    // For P . V: warp w's lanes hold the 32 row pairs (2i, 2i + 1; i = lane) of
                    // blocks 2w, 2w + 1 (block 7: the padding byte, unused). Each block's largest
                    // code so far (k_run, the same in every lane), its factor for O and the FP16
                    // pairs 2^(c - k) of its rows.
                    const int i = lane, blk = 2 * warp;
                    const uint32_t c0 = *reinterpret_cast<const uint16_t *>(tile + L::kScaleOff + 16 * i + blk),
                                   c1 = *reinterpret_cast<const uint16_t *>(tile + L::kScaleOff + 16 * i + 8 + blk);
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const uint32_t a = (c0 >> (8 * h)) & 0xFF, z = (c1 >> (8 * h)) & 0xFF;
                        const int k = max(k_run[h], static_cast<int>(__reduce_max_sync(0xffffffffu, max(a, z))));
                        const __half2 pair = __floats2half2_rn(ue8m0_ratio(a, k), ue8m0_ratio(z, k));
                        const int at = (i & 16) | ((i & 3) << 2) | ((i >> 2) & 3); // the layout's order
                        scalepairs[(blk + h) * (kRows / 2) + at] = *reinterpret_cast<const uint32_t *>(&pair);
                        if (lane == 0) {
                            blockinfo[blk + h] = ue8m0_ratio(static_cast<uint32_t>(k_run[h]), k);
                            blockcode[blk + h] = k;
                        }
                        k_run[h] = k;
                    }
                }
                // Tile g + kStages - 1 into the stage tile g-1 used.
                const int ahead = g + kStages - 1;
                if (ahead < total)
                    gather(ahead, ahead % kSlots);
                cp_async_commit();
                // The slot ids of tile g + kStages are loaded now; their addresses are stored
                // at the end.
                const bool addressed = g + kStages < total;
                const bool has_next = tid < kMine && addressed && a_e < a_n;
                const EntrySlot next = has_next ? entry_slot(p, a_t, a_e, a_swa) : EntrySlot{-1, true};

                float s[kSReg];
                if constexpr (kBf16Q)
                    score_ds_bf16(s, tile, scaletab, desc_q, desc_sw128(own + L::kQRopeOff, 0));
                else if constexpr (kDs)
                    score_ds(s, tile, scaletab, desc_q, desc_sw128(own + L::kQRopeOff, 0));
                else
                    score(s, desc_sw128(tile, 0), desc_q, [&]() {
                        if constexpr (kDeferPV)
                            accumulated(o, pv_frag);
                    });

                // Scores in log2 units, masked rows -inf; column max over the WG's 64 rows.
                const int r_lo = warp * 16 + lane / 4;
                const bool v_lo = info[r_lo] != no_row(), v_hi = info[r_lo + 8] != no_row();
#pragma unroll
                for (int i = 0; i < kSReg; i++)
                    s[i] = ((i % 4) >= 2 ? v_hi : v_lo) ? s[i] * score_scale[reg_col(i)] : -INFINITY;
                // Every thread keeps the running max of its own columns (all threads holding
                // a column compute the same value from the same inputs): no serial step.
                float alpha[kCols];
#pragma unroll
                for (int c = 0; c < kCols; c++) {
                    const int i = col_reg(c);
                    const float m = warp_column_max(s[i], s[i + 2]);
                    if (lane < 4)
                        colbuf[(g % 2) * 4 * kHT + warp * kHT + acc_col(i, lane)] = m;
                }
                sync();
#pragma unroll
                for (int c = 0; c < kCols; c++) {
                    const int i = col_reg(c), col = acc_col(i, lane);
                    const float *cb = colbuf + (g % 2) * 4 * kHT + col;
                    const float m_tile = fmaxf(fmaxf(cb[0], cb[kHT]), fmaxf(cb[2 * kHT], cb[3 * kHT]));
                    const float m_new = m_tile > m_run[c] + kMaxLag ? m_tile : m_run[c];
                    alpha[c] = m_new == -INFINITY ? 1.f : fast_exp2(m_run[c] - m_new);
                    m_run[c] = m_new;
                    // P = exp2(s - m); row sums.
                    const float m_use = m_new == -INFINITY ? 0.f : m_new;
                    const float p_lo = fast_exp2(s[i] - m_use), p_hi = fast_exp2(s[i + 2] - m_use);
                    l[c] = l[c] * alpha[c] + p_lo + p_hi;
                    s[i] = p_lo;
                    s[i + 2] = p_hi;
                }
                // Register i is (row r_lo or r_lo + 8, column 8(i/4) + 2q + i%2).
                if constexpr (kDs) {
                    // A BF16 and an FP16 plane, rows in entry order.
#pragma unroll
                    for (int i = 0; i < kSReg; i++) {
                        const uint32_t at = tile_offset(kHT, acc_col(i, lane), 2 * (r_lo + 8 * ((i % 4) / 2)));
                        *reinterpret_cast<__nv_bfloat16 *>(ps + at) = __float2bfloat16_rn(s[i]);
                        *reinterpret_cast<__half *>(ps + L::kPPlane + at) = __float2half_rn(s[i] * kP16Scale);
                    }
                } else {
                    // Its byte in the swizzled [HT][128] planes is a per-thread base (one per
                    // i%2) plus constants. Registers i and i + 2 (rows r_lo, r_lo + 8) are one
                    // head's entries k_lo and k_lo + 1, k_lo even: adjacent bytes, converted
                    // and stored as a pair.
                    const int k_lo = k_of_row(r_lo); // k_of_row(r_lo + 8) == k_lo + 1
#pragma unroll
                    for (int i = 0; i < kSReg; i++) {
                        if ((i % 4) >= 2)
                            continue;
                        const int c = 2 * (lane % 4) + i % 2;
                        const int pos = (i / 4) * 1024 + c * 128 + (((k_lo >> 4) ^ c) << 4) + (k_lo & 15);
                        // s[i] in the low byte
                        *reinterpret_cast<uint16_t *>(ps + pos) = f32x2_to_e4m3x2(s[i] * kPScale, s[i + 2] * kPScale);
                    }
                }
                fence_proxy_async();
                sync();

                // Once the running max settles, alpha is 1 for every column of the warp.
                bool rescale = false;
#pragma unroll
                for (int c = 0; c < kCols; c++)
                    rescale |= alpha[c] != 1.f;
                if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
                    for (int m = 0; m < 8; m++)
#pragma unroll
                        for (int i = 0; i < kSReg; i++)
                            o[m][i] *= alpha[reg_col(i)];
                }
                if constexpr (kDs) {
                    // A block whose largest code rose: its O in the new units (the same
                    // factors in every thread: no divergence).
                    float f[8];
                    bool moved = false;
#pragma unroll
                    for (int m = 0; m < 7; m++) {
                        f[m] = blockinfo[m];
                        moved |= f[m] != 1.f;
                    }
                    if (moved) {
#pragma unroll
                        for (int m = 0; m < 7; m++)
#pragma unroll
                            for (int i = 0; i < kSReg; i++)
                                o[m][i] *= f[m];
                    }
                    accumulate_ds(o, tile, scalepairs, desc_p, desc_sw128(ps + L::kPPlane, 0));
                } else {
                    accumulate(o, tile, desc_p, pv_frag);
                }
                if (addressed) {
                    if (tid < kMine)
                        store_row(rowinfo, scaleinfo, ((g + kStages) % kSlots) * kRows + r0 + tid, next);
                    advance();
                }
            }
            // The next item's Q, loaded under this item's epilogue; after the last item qv
            // is set all the same (to zeros, unused), so that the compiler sees it dead
            // through the tiles.
            if (item + 1 < count) {
                load_q(tab[item + 1], qv);
            } else {
#pragma unroll
                for (int k = 0; k < kQPer; k++)
                    qv[k] = make_uint4(0, 0, 0, 0);
            }
            if constexpr (kDeferPV) {
                wgmma_wait<0>();
                accumulated(o, pv_frag);
            }
            epilogue(b, o, l, m_run);
        }
    }

    // Row sums over the lanes and warps holding each column; final scale; LSE; the output
    // or, for a split, the partial sum (P scale removed), both BF16.
    __device__ void epilogue(const BatchItem &b, const float (&o)[8][kSReg], const float (&l)[kCols],
                             const float (&m_run)[kCols]) const
    {
        float *colbuf = reinterpret_cast<float *>(own + L::kColOff);
        float *mrun = reinterpret_cast<float *>(own + L::kMaxOff);
        float *alpha_s = reinterpret_cast<float *>(own + L::kAlphaOff);
        const int tid = opaque(this->tid), lane = tid % 32, warp = tid / 32; // addresses per item
        const int64_t t = b.t;
        sync(); // colbuf is free again
        store_warp_row_sums<kCols, kHT>(l, colbuf, warp, lane);
        if (warp == 0 && lane < 4) {
#pragma unroll
            for (int c = 0; c < kCols; c++)
                mrun[acc_col(col_reg(c), lane)] = m_run[c];
        }
        sync();
        if (tid < kHT)
            finish_head(p, t, b.h0, tid, b.split, b.w.split, mrun[tid], colbuf, 4, kHT, kDs ? 1.f : kPScale, alpha_s);
        sync();

        // Registers i (row g) and i + 2 (row g + 8) of M-tile m hold dims d and d + e: over
        // `fp8` rows (accumulate) d = 128 (m / 2) + 32 warp + 16 (m % 2) + 2g, e = 1; over
        // fp8_ds_mla rows (accumulate_ds) d = 64 m + 16 warp + 2g, e = 1 for the NoPE blocks
        // (m < 7), d = 448 + 16 warp + g, e = 8 for the RoPE dims.
        uint16_t *out = p.out + t * p.out_token_stride + int64_t(b.h0) * 512;
        const int g = lane / 4;
        // fp8_ds_mla: a NoPE block's O is in units of 2^(k - 127) / kP16Scale, k its
        // largest code.
        const int *blockcode = reinterpret_cast<const int *>(own + L::kBlockCodeOff);
        float unit[8];
#pragma unroll
        for (int m = 0; m < 8; m++)
            unit[m] = kDs && m < 7 ? ue8m0_to_float(static_cast<uint8_t>(blockcode[m])) * (1.f / kP16Scale) : 1.f;
#pragma unroll
        for (int i = 0; i < kSReg; i++) {
            if ((i % 4) >= 2)
                continue;
            const int col = acc_col(i, lane);
            const float f = alpha_s[col];
            uint16_t *dst = b.w.split ? p.partial_o + partial_index(p, t, b.h0 + col, b.split) * 512 : out + col * 512;
#pragma unroll
            for (int m = 0; m < 8; m++) {
                const bool rope = kDs && m == 7;
                const int d = !kDs ? 128 * (m / 2) + 32 * warp + 16 * (m % 2) + 2 * g
                                   : rope ? 448 + 16 * warp + g : 64 * m + 16 * warp + 2 * g;
                const __nv_bfloat162 x = __floats2bfloat162_rn(o[m][i] * (f * unit[m]), o[m][i + 2] * (f * unit[m]));
                if (rope) {
                    dst[d] = *reinterpret_cast<const uint16_t *>(&x.x);
                    dst[d + 8] = *reinterpret_cast<const uint16_t *>(&x.y);
                } else {
                    *reinterpret_cast<__nv_bfloat162 *>(dst + d) = x;
                }
            }
        }
    }
};

// Unshared: CTA c walks the items c, c + gridDim.x, ... (the launch has at most as many
// CTAs as fit on the device at once), in batches of kBatchItems; items run side by side
// on neighbouring CTAs and share a token's rows through L2. Shared: CTA i = ((token, pair
// of head groups), split), WG w the pair's group w.
template <int kHT, bool kShared, bool kDs, bool kBf16Q = false>
__global__ void __launch_bounds__(kWGThreads *wgs_per_cta<kShared>(), (ctas_per_sm<kHT, kShared, kDs>()))
    kernel(const __grid_constant__ AttentionParams p)
{
    using L = Layout<kHT, kShared, kDs, kBf16Q>;
    grid_wait_then_allow_next();
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = align_smem_1024(smem_raw);
    const int wg = warp_uniform(threadIdx.x / kWGThreads), tid = threadIdx.x % kWGThreads;
    uint8_t *tiles = kShared ? smem : smem + wg * L::kWGBytes;
    uint8_t *own = kShared ? smem + L::kTilesBytes + wg * L::kWGBytes : tiles + L::kTilesBytes;
    const TokenWG<kHT, kShared, kDs, kBf16Q> w{p, tiles, own, wg, tid, tid / 32, tid % 32};
    // Items fit in an int (the launch checks it).
    const int items = static_cast<int>(p.num_tokens * (p.num_heads / kHT) * p.splits);
    if (kShared) {
        const int groups = p.num_heads / kHT;
        const int pair = blockIdx.x / p.splits;
        const int token_group = (pair / (groups / 2)) * groups + 2 * (pair % (groups / 2)) + wg;
        w.run_items(token_group * p.splits + blockIdx.x % p.splits, 1, 1, items);
    } else {
        for (int64_t first = blockIdx.x; first < items; first += int64_t(kBatchItems) * gridDim.x)
            w.run_items(static_cast<int>(first), gridDim.x, kBatchItems, items);
    }
}

} // namespace fp8wg
} // namespace smla
