// Merges the partial results of a split token (split-KV): for token t and head h, the
// splits' (O_s, m_s, l_s) combine as
//   m = max_s m_s,  L = sum_s l_s 2^(m_s - m),  O = sum_s O_s 2^(m_s - m)
// in split order (the max taken over batches of splits as they are read), then the sink
// and scales apply as for an unsplit token. One CTA of 128 threads per (token, head), 4
// dims per thread. Launched with programmatic stream serialisation (launch.cu): its CTAs
// start while the attention kernel runs, look their token up, and wait for it.
#pragma once
#include <cstdint>

#include "../common/softmax.cuh"
#include "../common/timeline.cuh"
#include "../common/token_entries.cuh"
#include "params.cuh"

namespace smla {

constexpr int kCombineThreads = 128;

__global__ void __launch_bounds__(kCombineThreads) combine_kernel(const __grid_constant__ AttentionParams p)
{
    const int64_t t = blockIdx.x / p.num_heads;
    const int h = static_cast<int>(blockIdx.x % p.num_heads);
    const int tid = threadIdx.x;
    timeline::combine_mark(timeline::kCombineStart);
    allow_dependent_launch(); // the next kernel in the stream
    // The token's entries while the attention kernel runs: every attention CTA allows this
    // launch only after its own grid wait, so the plan, lens and seq_lens it read are final.
    int n_swa, n_ext;
    bool split;
    split = token_entries(p, t, Lookup::kOneTrip, &n_swa, &n_ext, &split) && split;
    timeline::combine_mark(timeline::kCombineLookedUp);
    dependent_grid_wait(); // the attention kernel's partials
    timeline::combine_mark(timeline::kCombineWaited);
    if (!split)
        return; // unsplit tokens are written by the attention kernel; padding is not
    const int tiles = (n_swa + n_ext + p.tile_rows - 1) / p.tile_rows;
    const int splits = (tiles + p.split_tiles - 1) / p.split_tiles;
    // kBatch splits' (m, l) and O loaded at once, so that their loads overlap (one after
    // the other they were most of this kernel's time), then merged in split order.
    constexpr int kBatch = 8;
    float m = -INFINITY, sum = 0.f;
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = 0; s0 < splits; s0 += kBatch) {
        float2 ml[kBatch];
        uint2 raw[kBatch]; // 4 BF16 dims
#pragma unroll
        for (int i = 0; i < kBatch; i++) {
            const bool in = s0 + i < splits;
            const int64_t at = partial_index(p, t, h, in ? s0 + i : 0);
            ml[i] = in ? p.partial_ml[at] : make_float2(-INFINITY, 0.f);
            raw[i] = in ? reinterpret_cast<const uint2 *>(p.partial_o + at * 512)[tid] : make_uint2(0u, 0u);
        }
        float4 v[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; i++) {
            const float2 a = bf16x2_to_float2(raw[i].x), b = bf16x2_to_float2(raw[i].y);
            v[i] = make_float4(a.x, a.y, b.x, b.y);
        }
        float mb = m;
#pragma unroll
        for (int i = 0; i < kBatch; i++)
            mb = fmaxf(mb, ml[i].x);
        if (mb == -INFINITY)
            continue; // no valid entry yet
        const float g = exp2f(m - mb); // the batches before, to the new max (0 while m is -inf)
        sum *= g;
        o = make_float4(o.x * g, o.y * g, o.z * g, o.w * g);
#pragma unroll
        for (int i = 0; i < kBatch; i++) {
            const float f = exp2f(ml[i].x - mb);
            sum = __fmaf_rn(ml[i].y, f, sum);
            o = make_float4(__fmaf_rn(v[i].x, f, o.x), __fmaf_rn(v[i].y, f, o.y), __fmaf_rn(v[i].z, f, o.z),
                            __fmaf_rn(v[i].w, f, o.w));
        }
        m = mb;
    }
    const float scale = head_scale(p, h, m, sum, 1.f);
    uint16_t *out = p.out + t * p.out_token_stride + int64_t(h) * 512 + tid * 4;
    const __nv_bfloat162 a = __floats2bfloat162_rn(o.x * scale, o.y * scale);
    const __nv_bfloat162 b = __floats2bfloat162_rn(o.z * scale, o.w * scale);
    uint2 w;
    w.x = *reinterpret_cast<const uint32_t *>(&a);
    w.y = *reinterpret_cast<const uint32_t *>(&b);
    *reinterpret_cast<uint2 *>(out) = w;
    if (p.lse && tid == 0)
        p.lse[t * p.lse_token_stride + h] = head_lse(m, sum);
    timeline::combine_mark(timeline::kCombineEnd);
}

} // namespace smla
