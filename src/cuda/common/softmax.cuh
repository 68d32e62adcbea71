// Pieces of the attention epilogue and softmax that every sparse attention kernel shares,
// so that they compute them the same way.
#pragma once
#include <cstdint>

#include "../prefill/params.cuh"

namespace smla {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// 2^x with the MUFU unit alone (about 2 ulp; -inf gives 0): the softmax's exponentials.
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Column (head) of f32 accumulator register i in the wgmma accumulator layout.
__device__ __forceinline__ int acc_col(int i, int lane) { return (i / 4) * 8 + (lane % 4) * 2 + (i % 2); }
// A thread holds HT / 4 distinct columns of an m64nHT accumulator (HT / 2 registers, each
// column in two: rows g and g + 8): the first register of its column c, and the column of
// register i.
__device__ __forceinline__ constexpr int col_reg(int c) { return (c / 2) * 4 + (c % 2); }
__device__ __forceinline__ constexpr int reg_col(int i) { return (i / 4) * 2 + (i % 2); }

// The largest of a column's accumulators over a warp's 16 rows: this lane's two (rows g,
// g + 8) and those of the 7 other lanes holding the column (same lane % 4).
__device__ __forceinline__ float warp_column_max(float row_g, float row_g8)
{
    float m = fmaxf(row_g, row_g8);
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 4));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 8));
    return fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 16));
}

// A token with no active entry: out = 0 and lse = -inf for heads h0 .. h0+heads-1, by
// `threads` threads numbered tid.
__device__ inline void write_empty_token(const AttentionParams &p, int64_t t, int h0, int heads, int tid, int threads)
{
    uint16_t *out = p.out + t * p.out_token_stride + int64_t(h0) * 512;
    for (int i = tid; i < heads * 64; i += threads)
        reinterpret_cast<uint4 *>(out + (i / 64) * 512)[i % 64] = make_uint4(0, 0, 0, 0);
    if (p.lse && tid < heads)
        p.lse[t * p.lse_token_stride + h0 + tid] = -INFINITY;
}

// For head h with running max m (log2 units) and row sum `sum` of exp2(s - m): the
// factor that turns the accumulated sum p.v (computed with p scaled by p_scale) into the
// output, sink included. No valid entry (sum == 0) or a +inf sink gives 0.
__device__ inline float head_scale(const AttentionParams &p, int h, float m, float sum, float p_scale)
{
    const float sink = p.sinks ? p.sinks[h] * kLog2e : -INFINITY;
    if (!(sum > 0.f) || sink == INFINITY)
        return 0.f;
    const float mf = fmaxf(m, sink);
    const float denom = sum * exp2f(m - mf) + (sink == -INFINITY ? 0.f : exp2f(sink - mf));
    return p.bmm2_scale * exp2f(m - mf) / denom / p_scale;
}

// The natural-log LSE of a head (the sink is not included); -inf without a valid entry.
__device__ inline float head_lse(float m, float sum)
{
    return sum > 0.f ? (m + log2f(sum)) * kLn2 : -INFINITY;
}

// The row sums of each thread's kCols columns, reduced over the 8 lanes that share them,
// go to buf[slot][column] (the caller's warps take distinct slots).
template <int kCols, int kHT> __device__ inline void store_warp_row_sums(const float (&l)[kCols], float *buf, int slot, int lane)
{
#pragma unroll
    for (int c = 0; c < kCols; c++) {
        float v = l[c];
        v += __shfl_xor_sync(0xffffffffu, v, 4);
        v += __shfl_xor_sync(0xffffffffu, v, 8);
        v += __shfl_xor_sync(0xffffffffu, v, 16);
        if (lane < 4)
            buf[slot * kHT + acc_col(col_reg(c), lane)] = v;
    }
}

// Head h0 + hi of token t, once its row sums sit in buf[slots][heads]: the factor that
// turns its accumulators into the output goes to scale[hi]; its LSE, or for a split token
// the partial (max, sum), goes to memory.
__device__ inline void finish_head(const AttentionParams &p, int64_t t, int h0, int hi, int split, bool split_token,
                                   float m, const float *buf, int slots, int heads, float p_scale, float *scale)
{
    float sum = 0.f;
    for (int w = 0; w < slots; w++)
        sum += buf[w * heads + hi];
    if (split_token) {
        p.partial_ml[partial_index(p, t, h0 + hi, split)] = make_float2(m, sum);
        scale[hi] = 1.f / p_scale;
    } else {
        scale[hi] = head_scale(p, h0 + hi, m, sum, p_scale);
        if (p.lse)
            p.lse[t * p.lse_token_stride + h0 + hi] = head_lse(m, sum);
    }
}

} // namespace smla
