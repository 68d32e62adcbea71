// Merges the partial results of a split token (split-KV): for token t and head h, the
// splits' (O_s, m_s, l_s) combine as
//   m = max_s m_s,  L = sum_s l_s 2^(m_s - m),  O = sum_s O_s 2^(m_s - m)
// in split order, then the sink and scales apply as for an unsplit token. One CTA of 128
// threads per (token, head), 4 dims per thread. Launched with programmatic stream
// serialisation (launch.cu): its CTAs start while the attention kernel runs and wait for
// it here.
#pragma once
#include <cstdint>

#include "../common/softmax.cuh"
#include "../common/token_entries.cuh"
#include "params.cuh"

namespace smla {

constexpr int kCombineThreads = 128;

__global__ void __launch_bounds__(kCombineThreads) combine_kernel(const __grid_constant__ AttentionParams p)
{
    const int64_t t = blockIdx.x / p.num_heads;
    const int h = static_cast<int>(blockIdx.x % p.num_heads);
    const int tid = threadIdx.x;
    allow_dependent_launch(); // the next kernel in the stream
    dependent_grid_wait();    // the attention kernel's partials
    int n_swa, n_ext;
    if (!token_is_split(p, t) || !token_entries(p, t, &n_swa, &n_ext))
        return; // unsplit tokens are written by the attention kernel; padding is not
    const int tiles = (n_swa + n_ext + p.tile_rows - 1) / p.tile_rows;
    const int splits = (tiles + p.split_tiles - 1) / p.split_tiles;
    float m = -INFINITY;
    for (int s = 0; s < splits; s++)
        m = fmaxf(m, p.partial_ml[partial_index(p, t, h, s)].x);
    float sum = 0.f;
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
    if (m != -INFINITY) {
        for (int s = 0; s < splits; s++) {
            const float2 ml = p.partial_ml[partial_index(p, t, h, s)];
            const float f = exp2f(ml.x - m);
            sum = __fmaf_rn(ml.y, f, sum);
            const float4 v = reinterpret_cast<const float4 *>(p.partial_o + partial_index(p, t, h, s) * 512)[tid];
            o = make_float4(__fmaf_rn(v.x, f, o.x), __fmaf_rn(v.y, f, o.y), __fmaf_rn(v.z, f, o.z),
                            __fmaf_rn(v.w, f, o.w));
        }
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
}

} // namespace smla
