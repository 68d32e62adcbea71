// bench_wgmma: how fast the tensor core runs the wgmma shapes of the heads-on-M kernels
// (bf16m, fp8m) with their operands in shared memory, alone and beside the other traffic
// of those kernels' shared memory, in FLOP per SM cycle. The questions it answers (PERF,
// session 17): is S (m64n64k16, both operands read from shared memory) bound by
// shared-memory bandwidth rather than by the tensor core, and what would tiles of 32 rows
// (m64n32k16) cost? Can S run with the KV rows on M and its A operand built in registers
// from raw E4M3 rows (no widening in shared memory; PERF's Next item 5) at the tensor
// core's rate?
// At 128 bytes per cycle of shared memory an SS wgmma of M = 64 reads A (2 KB per k16
// step) and B (N x 32 bytes): m64n64k16 needs 128 B/cycle at the BF16 peak, m64n32k16
// 192, m64n256k16 80.
//
// One CTA per SM, three warpgroups as in the kernels: WGs 0 .. wgs-1 each run `reps`
// groups of one shape back to back (one commit and one wait per group, as S and P . V
// are issued), on their own operands; WG 2 meanwhile either idles, or streams 16-byte
// cp.async copies of random 1 KB rows of an L2-resident pool into a scratch area (the
// producer's landing copies), or copies whole random 512-byte rows there with
// cp.async.bulk (the copy engine: one instruction a row, no 16-byte pieces), or loads and
// stores 16-byte chunks of that area as fast as it can (the consumers' widening of raw
// rows), until they finish.
// Session 18 adds fp8m's P . V turned around (PERF Next item 4): O^T = V^T . P^T with the
// dims on M and V^T built in registers from V's rows by 4x4 byte transposes, so that no
// warpgroup transposes V in shared memory.
// Session 31 adds one WG's whole fp8m pair as a chain (PERF Next 3 after session 30): S over
// its tile (32 half-steps m64n32k32 into fresh accumulators, two sets in flight, added in
// FP32) and the pair's P . V (8 m64n256k32 SS: 2 tiles x 2 K steps x hi, lo planes),
// either one after the other (fp8m today) or with the P . V wgmmas issued between S's
// half-steps, to see whether the tensor core runs P . V under S's latency. And whether a
// WG's register work (a softmax-like chain of exponentials and FMAs) runs while its own
// P . V wgmmas are in flight: alone, or after the four wgmmas' issue (ptxas spreads
// them through the chain whichever way they are written).
// Session 37 adds bf16ring's two products (KV entries on M, 16 heads on N): S^T over a
// 64-row tile (m64n16k16 SS x32) and O^T += V^T . P^T (m64n16k16 SS, A transposed, 8 M
// blocks x 4 K steps), each as the kernel issues it (entries_on_m_mma.cuh), to tell
// whether a small-N wgmma reaches the shared-memory port's rate (2.5 KB a step: 20
// cycles) or is bound elsewhere (S^T's 32 K steps also over 2 and 4 accumulators: the
// latency of a chain of dependent wgmmas); and both with the tile's operand loaded into registers
// by ldmatrix (RS: K's rows as they lie, V^T by .trans) instead of read by the wgmma.
// Usage: bench_wgmma [--reps N]  (default 256)
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "../src/cuda/common/sm90.cuh"
#include "../src/cuda/common/wgmma_ops.cuh"
#include "../src/cuda/prefill/entries_on_m_mma.cuh"
#include "../src/cuda/prefill/heads_on_m.cuh"
#include "bench_cli.h"
#include "cuda_check.h"

namespace {

using namespace smla;

constexpr int kThreads = 384;
// Shared memory: A (as Q, [64 rows][512 B] x 8 blocks of 128 B = 64 KB), two B regions
// (one per computing WG, 64 KB each: a 64-row BF16 tile, or 256 rows x 256 B), the
// copies' scratch, the done flag.
constexpr int kAOff = 0, kBOff = 64 * 1024, kBBytes = 64 * 1024;
constexpr int kScratchOff = kBOff + 2 * kBBytes, kScratchBytes = 16 * 1024;
constexpr int kFlagOff = kScratchOff + kScratchBytes; // the done flag, then kBulk's two mbarriers
constexpr int kPinOff = kFlagOff + 32;                  // [256] words: pv_alu_group's
constexpr int kSmemBytes = kPinOff + 1024 + 1024;
static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");

enum Op { kS64, kS32, kS64Raw, kS64RawF16, kPV256, kPV256R, kFp8S64, kFp8PV256, kFp8PVT, kFp8PVT2, kFp8PairSeq, kFp8PairMix, kFp8PairFront, kAlu, kPvAlu, kS16, kPV16, kS16R, kPV16R, kS16C2, kS16C4, kOps };
enum Traffic { kIdle, kGather, kLoadStore, kBulk, kTraffics }; // WG 2's
const char *const kTrafficName[kTraffics] = {"-", "gather", "ld/st", "bulk"};
struct OpInfo {
    const char *name, *what;
    double flops;  // per group
    double peak;   // dense FLOP per SM cycle of its type
    double bytes;  // shared memory read per group (A and B once per wgmma; raw rows: B and the loads)
};
// One WG's fp8m pair: S over its tile (K = 512) and P . V over two tiles, two P planes.
constexpr double kPairFlops = 2.0 * 64 * 64 * 512 + 2.0 * 2 * 64 * 256 * 128;
constexpr double kPairBytes = 32 * (2048 + 1024) + 8 * (2048 + 8192);
// Per group: S over K = 512 (one WG's tile), P . V over two 64-row tiles (one WG's 256 dims).
const OpInfo kInfo[kOps] = {
    {"bf16 m64n64k16 SS x32", "bf16m's S (64-row tile)", 2.0 * 64 * 64 * 512, 4096, 32 * (2048 + 2048)},
    {"bf16 m64n32k16 SS x32", "S on a 32-row tile", 2.0 * 64 * 32 * 512, 4096, 32 * (2048 + 1024)},
    {"bf16 m64n64k16 RS x32", "S^T, A widened from raw E4M3 rows", 2.0 * 64 * 64 * 512, 4096, 32 * (2048 + 1024)},
    {"f16 m64n64k16 RS x32", "the same, FP16, scaled per block", 2.0 * 64 * 64 * 512, 4096, 32 * (2048 + 1024)},
    {"bf16 m64n256k16 SS^T x8", "bf16m's P . V, P from smem", 2.0 * 64 * 256 * 128, 4096, 8 * (2048 + 8192)},
    {"bf16 m64n256k16 RS^T x8", "bf16m's P . V, P from registers", 2.0 * 64 * 256 * 128, 4096, 8 * 8192},
    {"e4m3 m64n64k32 SS x16", "fp8m's S (64-row tile)", 2.0 * 64 * 64 * 512, 8192, 16 * (2048 + 2048)},
    {"e4m3 m64n256k32 SS x4", "fp8m's P . V (one plane)", 2.0 * 64 * 256 * 128, 8192, 4 * (2048 + 8192)},
    {"e4m3 m64n64k32 RS x16", "O^T += V^T . P^T, V^T by byte perms", 2.0 * 64 * 256 * 128, 8192, 16 * (2048 + 2048)},
    {"e4m3 m64n64k32 RS x32", "the same, two P planes (A reused)", 2.0 * 2 * 64 * 256 * 128, 8192, 16 * (2048 + 2 * 2048)},
    {"e4m3 S n32 x32 + PV n256 x8", "fp8m's pair: S, then P . V", kPairFlops, 8192, kPairBytes},
    {"e4m3 S n32 x32 + PV n256 x8", "P . V every 4th S half-step", kPairFlops, 8192, kPairBytes},
    {"e4m3 S n32 x32 + PV n256 x8", "P . V every 2nd, first 16", kPairFlops, 8192, kPairBytes},
    {"ALU: 8 x 32 ex2 + 64 FMA", "a softmax-like chain alone", 0, 8192, 0},
    {"e4m3 m64n256k32 SS x4 + ALU", "P . V issued, then the chain", 2.0 * 64 * 256 * 128, 8192, 4 * (2048 + 8192)},
    {"bf16 m64n16k16 SS x32", "bf16ring's S^T (16 heads)", 2.0 * 64 * 16 * 512, 4096, 32 * (2048 + 512)},
    {"bf16 m64n16k16 SS^TA x32", "bf16ring's O^T += V^T . P^T", 2.0 * 512 * 16 * 64, 4096, 32 * (2048 + 512)},
    {"bf16 m64n16k16 RS x32", "the S^T, K by ldmatrix", 2.0 * 64 * 16 * 512, 4096, 32 * (2048 + 512)},
    {"bf16 m64n16k16 RS x32 (.trans)", "the O^T, V^T by ldmatrix .trans", 2.0 * 512 * 16 * 64, 4096, 32 * (2048 + 512)},
    {"bf16 m64n16k16 SS x32, 2 chains", "the S^T, K steps over 2 accumulators", 2.0 * 64 * 16 * 512, 4096, 32 * (2048 + 512)},
    {"bf16 m64n16k16 SS x32, 4 chains", "the S^T, K steps over 4 accumulators", 2.0 * 64 * 16 * 512, 4096, 32 * (2048 + 512)},
};

// Raw rows: [64 rows][kRawPitch B] of E4M3 (a row's 512 bytes, then 16 of padding, so
// that the 32-bit loads of 8 rows x 4 lanes meet 32 distinct banks), then [64][8] float
// block scales.
constexpr int kRawPitch = 528, kRawScaleOff = 64 * kRawPitch;

// A thread's two rows of a raw tile (r and r + 8 of its warp's 16; lane q reads bytes
// 4 q .. 4 q + 3 of each 16) and their block scales.
struct RawRows {
    const uint8_t *row0, *row1;
    const float *scale0, *scale1;
    __device__ explicit RawRows(const uint8_t *raw)
    {
        const int t = threadIdx.x % 128, r = (t / 32) * 16 + (t % 32) / 4;
        row0 = raw + r * kRawPitch + 4 * (t % 4);
        row1 = row0 + 8 * kRawPitch;
        scale0 = reinterpret_cast<const float *>(raw + kRawScaleOff) + 8 * r;
        scale1 = scale0 + 64;
    }
    // The raw bytes of k16 step `step` in rows r and r + 8.
    __device__ uint32_t word0(int step) const { return *reinterpret_cast<const uint32_t *>(row0 + 16 * step); }
    __device__ uint32_t word1(int step) const { return *reinterpret_cast<const uint32_t *>(row1 + 16 * step); }
};

// 32 RS wgmmas in 4 groups of 8: fragment(batch, i) builds the A fragment of the group's
// i-th wgmma, issue(batch, i, fragment) issues it; two fragment sets alternate, a set
// rebuilt once the group that read it is done. d: the accumulators, final on return.
template <typename Fragment, typename Issue>
__device__ __forceinline__ void rs_batches(float (&d)[128], Fragment fragment, Issue issue)
{
    uint4 frag[2][8];
#pragma unroll
    for (int batch = 0; batch < 4; batch++) {
        uint4(&f)[8] = frag[batch % 2];
        if (batch >= 2)
            wgmma_wait<1>(); // the group that read these registers is done
#pragma unroll
        for (int i = 0; i < 8; i++)
            f[i] = fragment(batch, i);
        wgmma_fence();
#pragma unroll
        for (int i = 0; i < 8; i++)
            issue(batch, i, f[i]);
        wgmma_commit();
    }
    wgmma_wait<0>();
    heads_on_m::keep_until_done(frag[0]);
    heads_on_m::keep_until_done(frag[1]);
    fence_regs(d);
}

// S^T = K . Q^T over K = 512 with the KV rows on M, A built in registers from raw E4M3
// rows (the arrangement of PERF's Next item 5): a thread's fragment of k16 step s is 4
// values of each of rows r and r + 8, bytes 16 s + 4 q .. + 3 of the row (K's order a
// permutation of the dims, which Q's layout would follow), widened and scaled by the row's
// block scale. 8 steps' fragments are built, then issued as one group; two sets of
// registers alternate, each reused once its group is done.
__device__ __forceinline__ void raw_score_group(const uint8_t *q, const uint8_t *raw, float (&d)[128])
{
    const RawRows rr(raw);
    const SmemDesc dq = desc_sw128(q, 0);
    rs_batches(
        d,
        [&](int batch, int i) {
            const int step = 8 * batch + i, blk = step / 4;
            const uint32_t w0 = rr.word0(step), w1 = rr.word1(step);
            const float s0 = rr.scale0[blk], s1 = rr.scale1[blk];
            return make_uint4(e4m3x2_to_bf16x2<0>(w0, s0), e4m3x2_to_bf16x2<0>(w1, s1),
                              e4m3x2_to_bf16x2<1>(w0, s0), e4m3x2_to_bf16x2<1>(w1, s1));
        },
        [&](int batch, int i, uint4 f) { WgmmaBf16RS<64>::run(d, f, dq + k_step_units(8 * batch + i, 64), 1); });
}

// The same in FP16: E4M3 widens to FP16 exactly in one conversion, and the block scales
// (one per row and 64-dim block, the rows being M) apply when each block's accumulators,
// fresh per block, are added into S: two sets alternate, so that block b + 1's wgmmas
// run while block b is added.
__device__ __forceinline__ void raw_score_group_f16(const uint8_t *q, const uint8_t *raw, float (&d)[128])
{
    const RawRows rr(raw);
    const SmemDesc dq = desc_sw128(q, 0);
    float acc[2][32];
    uint4 frag[2][4];
    auto issue = [&](int blk) {
        uint4(&f)[4] = frag[blk % 2];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int step = 4 * blk + i;
            const uint32_t w0 = rr.word0(step), w1 = rr.word1(step);
            f[i] = make_uint4(e4m3x2_to_f16x2<0>(w0), e4m3x2_to_f16x2<0>(w1), e4m3x2_to_f16x2<1>(w0),
                              e4m3x2_to_f16x2<1>(w1));
        }
        wgmma_fence();
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int step = 4 * blk + i;
            WgmmaF16RS<64>::run(acc[blk % 2], f[i], dq + k_step_units(step, 64), i > 0);
        }
        wgmma_commit();
    };
    auto add = [&](int blk) {
        float(&a)[32] = acc[blk % 2];
        fence_regs(a);
#pragma unroll
        for (int i = 0; i < 32; i++)
            d[i] += a[i] * ((i % 4) / 2 ? rr.scale1[blk] : rr.scale0[blk]);
    };
    issue(0);
#pragma unroll
    for (int blk = 1; blk < 8; blk++) {
        issue(blk);
        wgmma_wait<1>(); // block blk - 1 is done: its registers are free after the add
        heads_on_m::keep_until_done(frag[(blk - 1) % 2]);
        add(blk - 1);
    }
    wgmma_wait<0>();
    heads_on_m::keep_until_done(frag[1]);
    add(7);
    fence_regs(d);
}

// V's rows for the turned-around P . V: [128 entries][256 dims] of E4M3 at a 264-byte pitch
// (the 32-bit loads of 4 entries x 8 dim words meet 32 distinct banks); P^T as fp8m's P,
// [64 heads][128 entries] (K-major, 128B swizzle), the lo plane 8 KB after the hi one.
constexpr int kVPitch = 264, kPLoOff = 8 * 1024;

// O^T (this WG's 256 dims as four m64 tiles x 64 heads) += V^T . P^T over 128 entries
// (4 k32 steps), kPlanes times (fp8m's hi and lo planes of P, the same A). A thread's
// fragment rows g and g + 8 of m-tiles 2u and 2u + 1 are the dims 4X .. 4X + 3, X = 32 u
// + 8 w + g (a permutation of the dims that an epilogue would undo): per k-step and u,
// 8 32-bit loads (entries 4q .. 4q + 3 and 16 + 4q .. + 3 of those 4 dims) and two byte
// transposes give both tiles' fragments. Two fragment sets alternate, so one step's
// transposes run under the previous step's wgmmas.
template <int kPlanes> __device__ __forceinline__ void pv_transposed_group(const uint8_t *p, const uint8_t *v, float (&d)[128])
{
    const int t = threadIdx.x % 128, w = t / 32, g = (t % 32) / 4, q = t % 4;
    const SmemDesc dp = desc_sw128(p, 0);
    float(&o)[4][32] = reinterpret_cast<float(&)[4][32]>(d); // the four m-tiles' accumulators
    uint4 frag[2][2]; // [set][m-tile of the pair]: 16 registers beside the 128 accumulators
#pragma unroll
    for (int c = 0; c < 8; c++) {
        const int step = c / 2, u = c % 2;
        uint4(&f)[2] = frag[c % 2];
        if (c >= 2)
            wgmma_wait<1>(); // the group that read these registers is done
        const uint8_t *rows = v + (32 * step + 4 * q) * kVPitch + 4 * (32 * u + 8 * w + g);
        uint32_t lo[4], hi[4], tl[4], th[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            lo[e] = *reinterpret_cast<const uint32_t *>(rows + e * kVPitch);
            hi[e] = *reinterpret_cast<const uint32_t *>(rows + (16 + e) * kVPitch);
        }
        transpose4x4_bytes(lo, tl);
        transpose4x4_bytes(hi, th);
        f[0] = make_uint4(tl[0], tl[1], th[0], th[1]); // dims 4X, 4X + 1: m-tile 2u
        f[1] = make_uint4(tl[2], tl[3], th[2], th[3]); // dims 4X + 2, 4X + 3: m-tile 2u + 1
        wgmma_fence();
#pragma unroll
        for (int m = 0; m < 2; m++)
#pragma unroll
            for (int plane = 0; plane < kPlanes; plane++)
                WgmmaFp8RS<64>::run(o[2 * u + m], f[m], dp + (plane * kPLoOff + step * 32) / 16, 1);
        wgmma_commit();
    }
    wgmma_wait<0>();
    heads_on_m::keep_until_done(frag[0]);
    heads_on_m::keep_until_done(frag[1]);
    fence_regs(d);
}

// bf16ring's products with the tile's operand in registers (kS16R, kPV16R): the tile is
// [8 blocks of 64 dims][64 rows][128 B] (128-byte swizzle), the other operand (Q, 16 rows
// of 512 dims, or P^T, 16 rows of 64 entries) at `b`. Batches of 8 wgmmas, two register
// sets alternating (a set is reloaded once the group that read it is done).
//   S^T: A = K, fragment of k16 step s = rows w16 + 0..15, dims 16 s .. + 15 (ldmatrix:
//     lanes 0-7 rows 0-7 chunk 2 s, 8-15 rows 8-15, 16-23 rows 0-7 chunk 2 s + 1, ...).
//   O^T: A = V^T, M block mb's dims mb 64 + w16 + 0..15 against entries 16 k .. + 15
//     (ldmatrix .trans over rows = entries: lanes 0-7 entries 0-7 of chunk 2w, 8-15 the
//     same entries, chunk 2w + 1, 16-23 entries 8-15 chunk 2w, 24-31 chunk 2w + 1).
template <bool kPV> __device__ __forceinline__ void entries_on_m_rs_group(const uint8_t *tile, const uint8_t *b, float (&d)[128])
{
    const int w = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const uint32_t t0 = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
    const SmemDesc db = desc_sw128(b, 0);
    rs_batches(
        d,
        [&](int batch, int i) {
            uint32_t r[4];
            if (kPV) { // batch = K step (16 entries), i = M block
                const int e = 16 * batch + (lane % 8) + (lane / 16) * 8, c = 2 * w + (lane / 8) % 2;
                ldmatrix_x4_trans(t0 + i * (64 * 128) + e * 128 + ((c ^ (e % 8)) << 4), r);
            } else { // step 8 batch + i
                const int step = 8 * batch + i, row = 16 * w + (lane % 8) + ((lane / 8) % 2) * 8;
                const int c = (step % 4) * 2 + lane / 16;
                ldmatrix_x4(t0 + (step / 4) * (64 * 128) + row * 128 + ((c ^ (row % 8)) << 4), r);
            }
            return make_uint4(r[0], r[1], r[2], r[3]);
        },
        [&](int batch, int i, uint4 f) {
            if (kPV)
                WgmmaBf16RS<16>::run(d + 8 * i, f, db + k_step_units(batch, 16), 1);
            else
                WgmmaBf16RS<16>::run(d, f, db + k_step_units(8 * batch + i, 16), 1);
        });
}

// Whether the kMix form issues one P . V wgmma after S's half-step n (8 in all).
template <int kMix> __device__ constexpr bool pv_after(int n)
{
    return kMix == 1 ? n % 4 == 1 : kMix == 2 ? n % 2 == 1 && n < 16 : false;
}

// How many P . V wgmmas the kMix form issues before S's half-step n (n = 33: in all).
template <int kMix> __device__ constexpr int pv_issued(int n = 33)
{
    int c = 0;
    for (int i = 0; i < n && i < 32; i++)
        c += pv_after<kMix>(i);
    return c;
}

// P . V wgmma i (0..7 = plane x 4 + K step) of fp8_pair_group.
__device__ __forceinline__ void issue_pv(float (&d)[128], SmemDesc dp, SmemDesc dv, int i)
{
    wgmma_fence();
    WgmmaFp8SS<256>::run(d, dp + ((i / 4) * 8192 + (i % 4) * 32) / 16, dv + ((i % 4) * 32) / 16, 1);
    wgmma_commit();
}

// One WG's fp8m pair as a chain (see the header): Q and P's planes in A (Q at 0, hi at
// 32 KB, lo at 40 KB: [64 rows][128 B] each), K and V^T in B (K at 0, V^T [256 dims][128 B]
// at 32 KB). kMix 0: P . V after S; 1, 2: interleaved (pv_after). A wait for S's
// half-step `done` lets the groups committed after it run on.
template <int kMix> __device__ __forceinline__ void fp8_pair_group(const uint8_t *a, const uint8_t *b, float (&d)[128])
{
    const SmemDesc dq = desc_sw128(a, 0), dk = desc_sw128(b, 0);
    const SmemDesc dp = desc_sw128(a + 32 * 1024, 0), dv = desc_sw128(b + 32 * 1024, 0);
    float s[32], part[2][16];
#pragma unroll
    for (int n = 0; n <= 32; n++) {
        if (n < 32) {
            const uint32_t off = k_step_units(n / 2, 64);
            wgmma_fence();
            WgmmaFp8SS<32>::run(part[n % 2], dq + off, dk + off + ((n % 2) * 32 * 128) / 16, 0);
            wgmma_commit();
            if (pv_after<kMix>(n))
                issue_pv(d, dp, dv, pv_issued<kMix>(n));
        }
        const int done = n - 1;
        if (done >= 0) {
            const int later = (n < 32 ? 1 + pv_after<kMix>(n) : 0) + pv_after<kMix>(done);
            if (later == 0)
                wgmma_wait<0>();
            else if (later == 1)
                wgmma_wait<1>();
            else if (later == 2)
                wgmma_wait<2>();
            else
                wgmma_wait<3>();
            float(&pt)[16] = part[done % 2];
            fence_regs(pt);
#pragma unroll
            for (int i = 0; i < 16; i++)
                s[16 * (done % 2) + i] = done < 2 ? pt[i] : s[16 * (done % 2) + i] + pt[i];
        }
    }
#pragma unroll
    for (int i = pv_issued<kMix>(); i < 8; i++) // kMix 0: all of P . V, after S
        issue_pv(d, dp, dv, i);
    wgmma_wait<0>();
    fence_regs(d);
#pragma unroll
    for (int i = 0; i < 32; i++)
        d[i] += s[i] * 1e-9f;
}

// kAlu's register work, quarter q of 8 rounds over 32 values: exponentials and FMAs, each
// value mixing in its neighbour (a softmax's mix of MUFU and FMA, ~1 us alone).
__device__ __forceinline__ void alu_quarter(float (&x)[32])
{
#pragma unroll
    for (int round = 0; round < 2; round++)
#pragma unroll
        for (int i = 0; i < 32; i++)
            x[i] = fast_exp2(x[i] * 0.5f - 1.0f) + x[(i + 1) % 32] * 0.25f;
}

// The register work alone (kAlu), or beside fp8m's four P . V wgmmas of one plane issued
// before it (kPvAlu). ptxas moves register work
// freely across wgmma issues and waits, so the work's input is loaded from shared memory
// after the first issue (behind its commit's memory clobber) and one word of its result
// stored before the wait (ptxas keeps a wait after the memory operations before it).
template <int kOp> __device__ __forceinline__ void pv_alu_group(uint8_t *a, const uint8_t *b, float (&d)[128])
{
    const SmemDesc da = desc_sw128(a, 0), db = desc_sw128(b, 0);
    uint32_t *pin = reinterpret_cast<uint32_t *>(a - kAOff + kPinOff) + threadIdx.x % 256;
    float x[32];
    wgmma_fence();
#pragma unroll
    for (int q = 0; q < 4; q++) {
        if (kOp == kPvAlu && q == 0) {
#pragma unroll
            for (int step = 0; step < 4; step++)
                WgmmaFp8SS<256>::run(d, da + (step * 32) / 16, db + (step * 32) / 16, 1);
            wgmma_commit();
        }
        if (q == 0) {
            const float x0 = __uint_as_float(*pin) * 1e-30f; // 0 in effect: a load after the issue
#pragma unroll
            for (int i = 0; i < 32; i++)
                x[i] = x0 + 0.01f * static_cast<float>((threadIdx.x + i) % 7);
        }
        alu_quarter(x);
    }
    *pin = __float_as_uint(x[0] + x[31]);
    wgmma_wait<0>();
    fence_regs(d);
#pragma unroll
    for (int i = 0; i < 32; i++)
        d[i] += x[i];
}

// One group of kOp on A at `a` and B at `b` (a compile-time shape: ptxas serialises
// wgmmas whose accumulators a runtime switch might define elsewhere).
template <int kOp> __device__ __forceinline__ void run_group(const uint8_t *a, const uint8_t *b, float (&d)[128])
{
    constexpr int op = kOp;
    if (op == kS64Raw)
        return raw_score_group(a, b, d);
    if (op == kS64RawF16)
        return raw_score_group_f16(a, b, d);
    if (op == kFp8PVT || op == kFp8PVT2)
        return pv_transposed_group<op == kFp8PVT ? 1 : 2>(a, b, d);
    if (op == kFp8PairSeq || op == kFp8PairMix || op == kFp8PairFront)
        return fp8_pair_group<op - kFp8PairSeq>(a, b, d);
    if (op == kAlu || op == kPvAlu)
        return pv_alu_group<op>(const_cast<uint8_t *>(a), b, d);
    // bf16ring's products: the tile (64 rows x 512 dims) in B's region, Q or P^T in A's.
    if (op == kS16)
        return score_entries_on_m<16, 64>(reinterpret_cast<float(&)[8]>(d), b, a);
    if (op == kPV16)
        return accumulate_entries_on_m<16, 64, 8, 4>(reinterpret_cast<float(&)[8][8]>(d), b, a);
    if (op == kS16C2 || op == kS16C4)
        return score_entries_on_m<16, 64, op == kS16C2 ? 2 : 4>(reinterpret_cast<float(&)[8]>(d), b, a);
    if (op == kS16R || op == kPV16R)
        return entries_on_m_rs_group<op == kPV16R>(b, a, d);
    const SmemDesc da = desc_sw128(a, 0);
    wgmma_fence();
    if (op == kS64 || op == kS32) {
        const int rows = op == kS64 ? 64 : 32;
        const SmemDesc db = desc_sw128(b, 0);
#pragma unroll
        for (int step = 0; step < 32; step++) {
            const uint32_t ao = k_step_units(step, 64), bo = k_step_units(step, rows);
            if (op == kS64)
                WgmmaBf16SS<64>::run(d, da + ao, db + bo, 1);
            else
                WgmmaBf16SS<32>::run(d, da + ao, db + bo, 1);
        }
    } else if (op == kPV256 || op == kPV256R) {
        // V: [64 rows][256 dims] of a tile half, MN-major (as bf16m's V halves).
        const SmemDesc dv = desc_sw128(b, 64 * 128);
        const uint4 pf = make_uint4(0x3c003c00u, 0x3c003800u, 0x38003c00u, 0x3c003c00u); // P fragments (RS)
#pragma unroll
        for (int st = 0; st < 8; st++) {
            const uint32_t vo = ((st % 4) * 16 * 128 + (st / 4) * 32 * 1024) / 16;
            if (op == kPV256) {
                WgmmaBf16SSTransB<256>::run(d, da + k_step_units(st % 4, 64), dv + vo, 1);
            } else {
                WgmmaBf16RSTransB<256>::run(d, pf, dv + vo, 1);
            }
        }
    } else if (op == kFp8S64) {
        const SmemDesc db = desc_sw128(b, 0);
#pragma unroll
        for (int step = 0; step < 16; step++) {
            WgmmaFp8SS<64>::run(d, da + k_step_units(step, 64), db + k_step_units(step, 64), 1);
        }
    } else {
        // V^T: [256 dims][128 B] K-major, 4 k32 steps.
        const SmemDesc db = desc_sw128(b, 0);
#pragma unroll
        for (int step = 0; step < 4; step++)
            WgmmaFp8SS<256>::run(d, da + (step * 32) / 16, db + (step * 32) / 16, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(d);
}

// out[cta * 3 + {0, 1, 2}] = the computing WGs' longest cycle count, the shared-memory
// bytes WG 2 moved meanwhile, WG 0's nanoseconds over its groups (for the clock).
template <int kOp>
__global__ void __launch_bounds__(kThreads, 1) rate_kernel(int wgs, int traffic, int reps, const uint8_t *pool,
                                                           int pool_rows, unsigned long long *out, float *sink)
{
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = align_smem_1024(smem_raw);
    volatile int *done = reinterpret_cast<volatile int *>(smem + kFlagOff);
    __shared__ unsigned long long cycles_of[2];
    const int tid = threadIdx.x, wg = tid / 128, t = tid % 128;
    // Operands: words whose bytes are E4M3 values <= 1.875 (0x00-0x3f, 0x38, 0x3c) and
    // whose halves are BF16 values near 0.5 and 1 (no NaNs or infinities, no overflow
    // over the repetitions), so the tensor core does real work at a realistic power.
    for (int i = tid; i < kScratchOff / 4; i += kThreads)
        reinterpret_cast<uint32_t *>(smem)[i] = 0x3c003800u ^ ((i * 2654435761u) & 0x003f003fu);
    uint64_t *bulk_bars = reinterpret_cast<uint64_t *>(smem + kFlagOff + 16);
    if (tid < 256)
        reinterpret_cast<uint32_t *>(smem + kPinOff)[tid] = 0;
    if (tid == 0) {
        *done = 0;
        mbar_init(&bulk_bars[0], 32);
        mbar_init(&bulk_bars[1], 32);
        mbar_init_fence();
    }
    fence_proxy_async();
    __syncthreads();
    if (wg == 2) {
        regs_decrease<56>();
        // Rounds over the 16 KB area, 8 chunks a thread: gathered (each chunk of a random
        // row, chunk t % 64 of it; at most two rounds in flight), or loaded and stored
        // back changed.
        unsigned long long rounds = 0;
        uint32_t x = blockIdx.x * 7919u + t;
        volatile uint4 *area = reinterpret_cast<volatile uint4 *>(smem + kScratchOff);
        // kBulk: warp 0 alone, which decides as one whether to go on (lane 0 reads the flag),
        // so that every round gets all 32 arrivals.
        const auto go_on = [&] {
            if (traffic == kBulk)
                return t < 32 && !__shfl_sync(0xffffffffu, *done, 0);
            return traffic != kIdle && !*done;
        };
        while (go_on()) {
            if (traffic == kBulk) {
                // A round: 32 random 512-byte rows (16 KB), one bulk copy by each of warp
                // 0's lanes; two rounds in flight on two mbarriers.
                const int bar = rounds % 2;
                if (rounds >= 2)
                    mbar_wait(&bulk_bars[bar], ((rounds / 2) - 1) & 1);
                x = x * 1664525u + 1013904223u;
                mbar_arrive_expect_tx(&bulk_bars[bar], 512);
                bulk_copy_g2s(smem + kScratchOff + t * 512, pool + static_cast<size_t>(x % (2 * pool_rows)) * 512, 512,
                              &bulk_bars[bar]);
            } else if (traffic == kGather) {
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    x = x * 1664525u + 1013904223u;
                    const uint8_t *src = pool + static_cast<size_t>(x % pool_rows) * 1024 + (t % 64) * 16;
                    cp_async16(smem + kScratchOff + ((t + 128 * i) % 1024) * 16, src, 16);
                }
                cp_async_commit();
                cp_async_wait<1>();
            } else {
#pragma unroll
                for (int i0 = 0; i0 < 8; i0 += 4) { // four loads in flight (56 registers)
                    uint4 v[4];
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        v[i] = const_cast<const uint4 &>(area[(t + 128 * (i0 + i)) % 1024]);
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        const_cast<uint4 &>(area[(t + 128 * (i0 + i) + 64) % 1024]) =
                            make_uint4(v[i].x ^ 1u, v[i].y, v[i].z, v[i].w);
                }
            }
            rounds++;
        }
        cp_async_wait<0>();
        if (traffic == kBulk && t < 32) // every round landed before the CTA ends
            for (unsigned long long r = rounds > 2 ? rounds - 2 : 0; r < rounds; r++)
                mbar_wait(&bulk_bars[r % 2], (r / 2) & 1);
        if (t == 0) // landed, or loaded and stored
            out[blockIdx.x * 3 + 1] = rounds * kScratchBytes * (traffic == kLoadStore ? 2 : 1);
        return;
    }
    // As in the kernels: the computing WGs hold 128 accumulators and, in RS, A fragments.
    regs_increase<224>();
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; i++)
        d[i] = 0.f;
    unsigned long long cycles = 0, g0 = 0, g1 = 0;
    if (wg < wgs) {
        // A warm-up group, except for the turned-around P . V: over accumulators known to be
        // zero ptxas serialises its four tiles' wgmmas (C7520); one group in 256 is noise.
        if (kOp != kFp8PVT && kOp != kFp8PVT2 && kOp < kFp8PairSeq) // (the pairs: ptxas spills)
            run_group<kOp>(smem + kAOff, smem + kBOff + wg * kBBytes, d);
        named_barrier(1, wgs * 128);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
        const long long c0 = clock64();
        for (int r = 0; r < reps; r++)
            run_group<kOp>(smem + kAOff, smem + kBOff + wg * kBBytes, d);
        cycles = clock64() - c0;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    }
    if (t == 0)
        cycles_of[wg] = cycles;
    named_barrier(2, 256);
    if (tid == 0) {
        *done = 1;
        out[blockIdx.x * 3 + 0] = cycles_of[1] > cycles_of[0] ? cycles_of[1] : cycles_of[0];
        out[blockIdx.x * 3 + 2] = g1 - g0;
    }
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < 128; i++)
        acc += d[i];
    if (acc == 1234.5f)
        *sink = acc; // keeps the wgmmas
}

using Kernel = void (*)(int, int, int, const uint8_t *, int, unsigned long long *, float *);
const Kernel kKernels[kOps] = {rate_kernel<kS64>,     rate_kernel<kS32>,      rate_kernel<kS64Raw>,
                               rate_kernel<kS64RawF16>, rate_kernel<kPV256>,   rate_kernel<kPV256R>,
                               rate_kernel<kFp8S64>,  rate_kernel<kFp8PV256>, rate_kernel<kFp8PVT>,
                               rate_kernel<kFp8PVT2>, rate_kernel<kFp8PairSeq>, rate_kernel<kFp8PairMix>,
                               rate_kernel<kFp8PairFront>, rate_kernel<kAlu>, rate_kernel<kPvAlu>,
                               rate_kernel<kS16>,     rate_kernel<kPV16>,    rate_kernel<kS16R>,
                               rate_kernel<kPV16R>,   rate_kernel<kS16C2>,   rate_kernel<kS16C4>};

} // namespace

int main(int argc, char **argv)
{
    const int reps = count_arg(argc, argv, "--reps", 256, "bench_wgmma");
    if (reps < 0)
        return 2;
    int dev = 0, sms = 0, major = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major != 9) {
        fprintf(stderr, "bench_wgmma: needs an SM90 GPU (found compute capability %d.x)\n", major);
        return 1;
    }
    // An 8 MB pool of 1 KB rows: L2-resident, as the BF16 rows of an 8192-row pool.
    const int pool_rows = 8192;
    uint8_t *pool = nullptr;
    unsigned long long *out = nullptr;
    float *sink = nullptr;
    CUDA_CHECK(cudaMalloc(&pool, size_t(pool_rows) * 1024));
    CUDA_CHECK(cudaMemset(pool, 0x3c, size_t(pool_rows) * 1024));
    CUDA_CHECK(cudaMalloc(&out, sizeof(unsigned long long) * 3 * sms));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    for (Kernel k : kKernels)
        CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    std::vector<unsigned long long> host(3 * sms);

    printf("bench_wgmma: %d SMs, %d groups per WG, medians over the CTAs\n", sms, reps);
    printf("%-26s %-33s %3s %6s %11s %11s %7s %10s %10s %6s\n", "shape (per group)", "as in", "WGs", "WG 2",
           "cyc/group", "FLOP/cyc/SM", "of peak", "smem B/cyc", "WG 2 B/cyc", "MHz");
    for (int op = 0; op < kOps; op++) {
        for (int wgs = 1; wgs <= 2; wgs++) {
            for (int traffic = 0; traffic < kTraffics; traffic++) {
                kKernels[op]<<<sms, kThreads, kSmemBytes>>>(wgs, traffic, reps, pool, pool_rows, out, sink);
                CUDA_CHECK(cudaGetLastError());
                CUDA_CHECK(cudaDeviceSynchronize());
                CUDA_CHECK(cudaMemcpy(host.data(), out, sizeof(unsigned long long) * host.size(),
                                      cudaMemcpyDeviceToHost));
                std::vector<double> cyc, wg2_rate, mhz;
                for (int c = 0; c < sms; c++) {
                    const double cycles = double(host[3 * c]);
                    cyc.push_back(cycles / reps);
                    wg2_rate.push_back(double(host[3 * c + 1]) / cycles);
                    mhz.push_back(cycles / double(host[3 * c + 2]) * 1e3); // cycles per us
                }
                const OpInfo &in = kInfo[op];
                const double per_group = median(cyc);
                const double rate = wgs * in.flops / per_group;
                printf("%-26s %-33s %3d %6s %11.0f %11.0f %6.1f%% %10.1f %10.1f %6.0f\n", in.name, in.what, wgs,
                       kTrafficName[traffic], per_group, rate, 100.0 * rate / in.peak, wgs * in.bytes / per_group,
                       median(wg2_rate), median(mhz));
            }
        }
    }
    CUDA_CHECK(cudaFree(pool));
    CUDA_CHECK(cudaFree(out));
    CUDA_CHECK(cudaFree(sink));
    return 0;
}
