// SM90 building blocks shared by the kernels: shared-memory matrix descriptors for
// wgmma, the wgmma fences, cp.async, named barriers and small conversions.
#pragma once
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace smla {

// The 128-byte swizzle of wgmma's canonical layouts: inside every 1024-byte atom of
// 8 rows x 128 B, the 16-byte chunk index is XORed with the row index (mod 8). Tiles are
// stored as column blocks of 128 bytes: element byte b of row r lives in block b / 128 at
// r * 128 + swizzled chunk. Keeps 8 rows reading different banks.
__device__ __forceinline__ uint32_t swizzle128(uint32_t row, uint32_t byte_in_row128)
{
    const uint32_t chunk = (byte_in_row128 >> 4) ^ (row & 7);
    return row * 128 + (chunk << 4) + (byte_in_row128 & 15);
}

// Byte offset of (row, byte) in a tile of `rows` rows stored as 128-byte column blocks.
__device__ __forceinline__ uint32_t tile_offset(uint32_t rows, uint32_t row, uint32_t byte)
{
    return (byte >> 7) * rows * 128 + swizzle128(row, byte & 127);
}

// wgmma shared-memory descriptor for a 128B-swizzled operand whose 8-row atoms are
// 1024 bytes apart (SBO); LBO only matters for MN-major operands wider than one atom.
// Kept as its two 32-bit words: an offset inside the operand only moves the start
// address in the low word, so `desc + offset` is one 32-bit add. (As a 64-bit sum the
// compiler must carry into the high word: an add, an add with carry and the moves to
// uniform registers before every wgmma.)
struct SmemDesc {
    uint32_t lo, hi;
    // The descriptor `units` 16-byte units further on (offsets stay inside the operand).
    __device__ __forceinline__ uint64_t operator+(uint32_t units) const
    {
        return (static_cast<uint64_t>(hi) << 32) | (lo + units);
    }
    __device__ __forceinline__ operator uint64_t() const { return *this + 0u; }
};
__device__ __forceinline__ SmemDesc desc_sw128(const void *smem, uint32_t lbo_bytes)
{
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t lo = ((addr & 0x3FFFF) >> 4) | (((lbo_bytes >> 4) & 0x3FFF) << 16);
    const uint32_t hi = ((1024 >> 4) & 0x3FFF) | (1u << 30); // SBO; bits 62-63: 128-byte swizzle
    return SmemDesc{lo, hi};
}

// The 16-byte units from the start of a K-major 128B-swizzled operand of `rows` rows to its
// K step `step` (32 bytes: 16 BF16 or 32 E4M3 values): four steps per 128-byte column
// block, the blocks rows x 128 bytes apart. A descriptor plus these units addresses the step.
__device__ __forceinline__ constexpr uint32_t k_step_units(int step, int rows)
{
    return ((step / 4) * (rows * 128) + (step % 4) * 32) / 16;
}

// The 64-byte swizzle, for K-major operands whose rows are 64 bytes (64 E4M3 values):
// inside every 512-byte atom of 8 rows x 64 B, the 16-byte chunk index is XORed with
// bits 1-2 of the row index (address bits 7-8 into 4-5).
__device__ __forceinline__ uint32_t swizzle64(uint32_t row, uint32_t byte_in_row64)
{
    const uint32_t chunk = (byte_in_row64 >> 4) ^ ((row >> 1) & 3);
    return row * 64 + (chunk << 4) + (byte_in_row64 & 15);
}

// Descriptor of a 64B-swizzled K-major operand of 64-byte rows (8-row atoms 512 B apart;
// LBO unused: a K step of 32 bytes stays inside the swizzle width).
__device__ __forceinline__ SmemDesc desc_sw64(const void *smem)
{
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t lo = ((addr & 0x3FFFF) >> 4) | (1u << 16);
    const uint32_t hi = ((512 >> 4) & 0x3FFF) | (2u << 30); // SBO; bits 62-63: 64-byte swizzle
    return SmemDesc{lo, hi};
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across an asynchronous wgmma.
template <int N> __device__ __forceinline__ void fence_regs(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(r[i])::"memory");
}

// v, which the compiler may no longer assume it knows: values computed from it stay where
// they are used. In a loop, an address computed once and hoisted would hold a register
// through the whole loop.
__device__ __forceinline__ int opaque(int v)
{
    asm volatile("" : "+r"(v));
    return v;
}

// Generic-proxy shared-memory writes (st.shared, cp.async) made visible to the async
// proxy (wgmma operand reads). Each writing thread fences before the barrier.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Named barrier over `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Four 8x8 matrices of 16-bit values to shared memory (stmatrix .x4): register j of lane
// l holds row l / 4, columns 2 (l % 4) and + 1 of matrix j (an m64nN accumulator's
// layout); lane l gives the address of row l % 8 of matrix l / 8 (16 contiguous bytes).
__device__ __forceinline__ void stmatrix_x4(void *row, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3)
{
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(row));
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a0), "r"(a1),
                 "r"(a2), "r"(a3)
                 : "memory");
}

// Four 8x8 matrices of 16-bit values from shared memory (ldmatrix .x4): lane l gives the
// address of row l % 8 of matrix l / 8; register j of lane l holds row l / 4 of matrix j,
// columns 2 (l % 4) (low half) and + 1.
__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// Four 8x8 matrices of 16-bit values from shared memory, transposed (ldmatrix .x4 .trans):
// lane l gives the address of row l % 8 of matrix l / 8 (16 contiguous bytes); register j
// of lane l holds column l / 4 of matrix j, rows 2 (l % 4) (low half) and + 1.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// 16-byte cp.async from global to shared; src_bytes = 0 zero-fills the destination.
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes)
{
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes)
                 : "memory");
}
// cp_async16 where `pred` holds, as one predicated instruction: a branch around the call
// would split the warp (and ptxas repeats its LDGSTS preamble on each path).
__device__ __forceinline__ void cp_async16_if(bool pred, void *smem, const void *gmem, int src_bytes)
{
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %3, 0;\n@p cp.async.cg.shared.global [%0], [%1], 16, %2;\n}\n" ::"r"(dst),
                 "l"(gmem), "r"(src_bytes), "r"(static_cast<int>(pred))
                 : "memory");
}
// A hint to bring the 128-byte line holding `gmem` into L2 (no register, no wait).
__device__ __forceinline__ void prefetch_l2(const void *gmem)
{
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(gmem));
}
// 8 bytes (cp.async.ca: 16-byte copies bypass L1, smaller ones may not).
__device__ __forceinline__ void cp_async8(void *smem, const void *gmem, int src_bytes)
{
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// mbarriers (shared memory, CTA scope): phases complete when `count` arrivals are in.
__device__ __forceinline__ uint32_t smem_addr(const void *p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Makes initialised mbarriers visible to the other threads (then a CTA barrier).
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// One arrival, with release semantics for this thread's earlier writes.
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// One arrival once all of this thread's earlier cp.async copies have landed.
__device__ __forceinline__ void mbar_arrive_cp_async(uint64_t *bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// Waits until the phase of parity `parity` has completed (acquire). A fresh barrier
// counts its parity-1 phase as completed, so a producer starts waiting with parity 1.
// A wait that lasts 2^31 polls (far beyond any memory latency) means a broken pipeline:
// it traps, so the launch fails with an error instead of hanging the stream.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred done;\n.reg .u32 polls;\n"
                 "mov.u32 polls, 0;\n"
                 "wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@done bra end_%=;\n"
                 "add.u32 polls, polls, 1;\n"
                 "setp.eq.u32 done, polls, 0x80000000;\n"
                 "@!done bra wait_%=;\n"
                 "trap;\n"
                 "end_%=:\n}\n" ::"r"(smem_addr(bar)),
                 "r"(parity)
                 : "memory");
}
// One arrival that also announces `bytes` more bytes of asynchronous copies (bulk copies
// complete_tx them); the phase completes when the arrivals and the bytes are all in.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
// One contiguous copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) from
// global to shared memory by the copy engine; completes `bytes` on the mbarrier.
__device__ __forceinline__ void bulk_copy_g2s(void *smem, const void *gmem, uint32_t bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_addr(smem)),
                 "l"(gmem), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}

// Programmatic dependent launch: a kernel launched after this one with programmatic
// stream serialisation (smla launches all its kernels so) may start once every CTA of
// this grid has run allow_dependent_launch; dependent_grid_wait still waits for the grid
// before to finish and its writes to be visible.
__device__ __forceinline__ void allow_dependent_launch() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ void dependent_grid_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
// The attention kernels' first step: wait for the kernel before (it may have written q,
// the plan, the indices), and only then let the next one (the combine, or the next call)
// start, so that it may read before its own wait anything this grid waited for (the
// combine looks its tokens up that early).
__device__ __forceinline__ void grid_wait_then_allow_next()
{
    dependent_grid_wait();
    allow_dependent_launch();
}

// Named barrier halves: arrive without waiting / wait for `threads` arrivals.
__device__ __forceinline__ void named_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// A value the caller knows is the same in every lane of the warp (a warpgroup index),
// broadcast from lane 0 so that the compiler knows it too: descriptors and buffers derived
// from it then live in uniform registers (derived from threadIdx alone, they are moved to
// uniform registers before every wgmma).
template <typename T> __device__ __forceinline__ T warp_uniform(T v) { return __shfl_sync(0xffffffffu, v, 0); }

// Warpgroup register reallocation (warp-specialised kernels).
template <int kRegs> __device__ __forceinline__ void regs_increase()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs> __device__ __forceinline__ void regs_decrease()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// Byte permute: result byte i = byte sel[i] of the 8-byte value (hi:lo).
__device__ __forceinline__ uint32_t prmt(uint32_t lo, uint32_t hi, uint32_t sel)
{
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(lo), "r"(hi), "r"(sel));
    return r;
}

// Transposes a 4x4 byte matrix held as 4 words (word i = row i): out word k holds byte k
// of every input word, in input order. With sel_lo = 0x4051 and sel_hi = 0x6273 instead,
// out word k holds byte k ^ 1 (the pairs of outputs swapped, at no cost).
__device__ __forceinline__ void transpose4x4_bytes(const uint32_t (&w)[4], uint32_t (&o)[4], uint32_t sel_lo = 0x5140,
                                                   uint32_t sel_hi = 0x7362)
{
    const uint32_t t0 = prmt(w[0], w[1], sel_lo), t1 = prmt(w[0], w[1], sel_hi);
    const uint32_t t2 = prmt(w[2], w[3], sel_lo), t3 = prmt(w[2], w[3], sel_hi);
    o[0] = prmt(t0, t2, 0x5410);
    o[1] = prmt(t0, t2, 0x7632);
    o[2] = prmt(t1, t3, 0x5410);
    o[3] = prmt(t1, t3, 0x7632);
}

// Two floats to two E4M3 (saturating, round to nearest even), low byte = a.
__device__ __forceinline__ uint16_t f32x2_to_e4m3x2(float a, float b)
{
    uint16_t r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;\n" : "=h"(r) : "f"(a), "f"(b));
    return r;
}

// The dynamic shared memory rounded up to a 1024-byte boundary (the 128-byte swizzle
// repeats every 1024 bytes), derived from the array itself so that the compiler keeps
// knowing the pointer is shared memory (plain LDS/STS rather than generic accesses).
__device__ __forceinline__ uint8_t *align_smem_1024(uint8_t *smem)
{
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    return smem + ((1024u - (addr & 1023u)) & 1023u);
}

// The two E4M3 in half H of a word (H = 0: bits 0-15; low byte first) to two FP16 packed
// in a word, exactly: one instruction, which reads the word's half itself (F2FP ... R.H1,
// where a 16-bit operand would cost a shift first).
template <int H> __device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t w)
{
    static_assert(H == 0 || H == 1, "a half of the word");
    uint32_t h2;
    if constexpr (H == 0)
        asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, lo;\n}\n" : "=r"(h2) : "r"(w));
    else
        asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, hi;\n}\n" : "=r"(h2) : "r"(w));
    return h2;
}
// Two E4M3 (half H of a word, low byte first) to two BF16 packed in a word, exactly (via
// f16 and f32).
template <int H> __device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t w)
{
    const uint32_t h2 = e4m3x2_to_f16x2<H>(w);
    const __half2 h = *reinterpret_cast<const __half2 *>(&h2);
    const float2 f = __half22float2(h);
    const __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
    return *reinterpret_cast<const uint32_t *>(&b);
}
// Two BF16 (a word) times UE8M0 scales (powers of two or NaN, so exact in BF16), one per
// half as a BF16 pair, in one BF16 multiply: each product is rounded once, as an f32
// multiply followed by a rounding to BF16 would round it (BF16 arithmetic keeps
// subnormals; gpu_test_widen_exact checks every code under every scale).
__device__ __forceinline__ uint32_t bf16x2_times(uint32_t w, uint32_t scales)
{
    const __nv_bfloat162 b =
        __hmul2(*reinterpret_cast<const __nv_bfloat162 *>(&w), *reinterpret_cast<const __nv_bfloat162 *>(&scales));
    return *reinterpret_cast<const uint32_t *>(&b);
}
// The same with one scale for both halves.
__device__ __forceinline__ uint32_t bf16x2_times(uint32_t w, float scale)
{
    const __nv_bfloat162 s = __float2bfloat162_rn(scale);
    return bf16x2_times(w, *reinterpret_cast<const uint32_t *>(&s));
}
// Two E4M3 (half H of a word) times a UE8M0 scale to two BF16: exact unless the product
// leaves BF16's range.
template <int H> __device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t w, float scale)
{
    return bf16x2_times(e4m3x2_to_bf16x2<H>(w), scale);
}

// Two BF16 values (the low half first) as floats, exactly.
__device__ __forceinline__ float2 bf16x2_to_float2(uint32_t v)
{
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xFFFF0000u));
}

// 2^(c - k) for a UE8M0 code c at most k (0 below float's range), NaN for c = 255: a block
// scale relative to 2^(k - 127).
__device__ __forceinline__ float ue8m0_ratio(uint32_t c, int k)
{
    const int d = static_cast<int>(c) - k;
    const float f = d >= -126 ? __int_as_float((d + 127) << 23) : 0.f;
    return c == 255 ? __int_as_float(0x7FC00000) : f;
}
// Two FP16 (a word) times two FP16 scales, each half its own.
__device__ __forceinline__ uint32_t f16x2_times(uint32_t w, uint32_t scales)
{
    const __half2 h = __hmul2(*reinterpret_cast<const __half2 *>(&w), *reinterpret_cast<const __half2 *>(&scales));
    return *reinterpret_cast<const uint32_t *>(&h);
}
// UE8M0 block scale: 2^(b - 127); 255 is NaN.
__device__ __forceinline__ float ue8m0_to_float(uint8_t b)
{
    // Selects, not branches: a branch here kept the widening's loads from overlapping.
    uint32_t bits = uint32_t(b) << 23;     // 2^(b - 127) for b = 1..254
    bits = b == 0 ? 0x00400000u : bits;   // 2^-127, subnormal
    bits = b == 255 ? 0x7FC00000u : bits; // NaN
    return __uint_as_float(bits);
}

__device__ __forceinline__ float e4m3_to_float(uint8_t v)
{
    const uint32_t h2 = e4m3x2_to_f16x2<0>(v);
    return __half2float(__ushort_as_half(static_cast<unsigned short>(h2 & 0xFFFF)));
}

} // namespace smla
