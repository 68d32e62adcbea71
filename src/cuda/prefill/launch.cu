// The CUDA backend of smla_attention: picks the kernel (FP8 or BF16 path) and the heads
// per CTA from the problem and the GPU, and launches it on the caller's stream.
#include <cuda_runtime.h>

#include "bf16_shared_tile.cuh"
#include "fp8_token_wg.cuh"

extern "C" {
#include "problem.h"
}

namespace smla {
namespace {

PoolParams pool_params(const smla_index_set &set)
{
    PoolParams p{};
    p.data = static_cast<const uint8_t *>(set.pool.data);
    p.rows = set.indices ? set.pool_rows : 0;
    p.block_stride = set.pool.block_stride;
    p.block_size = set.pool.block_size > 0 ? set.pool.block_size : 1;
    p.format = set.pool.format;
    return p;
}

IndexParams index_params(const smla_index_set &set)
{
    IndexParams p{};
    p.indices = set.indices;
    p.row_stride = set.row_stride;
    p.lens = set.lens;
    p.lens_stride = set.lens_stride;
    p.width = set.indices ? set.width : 0;
    return p;
}

// Largest head tile (<= max_ht) that still gives every SM a CTA; smaller tiles only when the
// batch is too small to fill the GPU. The result does not depend on this choice.
int heads_per_cta(int64_t tokens, int heads, int sm_count, int max_ht)
{
    int ht = heads < max_ht ? heads : max_ht;
    while (ht > 8 && tokens * (heads / ht) < sm_count)
        ht /= 2;
    return ht;
}

template <int kHT> cudaError_t launch_fp8(const AttentionParams &p, cudaStream_t stream)
{
    constexpr int smem = fp8wg::smem_bytes<kHT>();
    auto kernel = fp8wg::kernel<kHT>;
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (err != cudaSuccess)
        return err;
    constexpr int wgs = fp8wg::wgs_per_cta<kHT>();
    const int64_t items = p.num_tokens * (p.num_heads / kHT);
    kernel<<<static_cast<unsigned>((items + wgs - 1) / wgs), fp8wg::kWGThreads * wgs, smem, stream>>>(p);
    return cudaGetLastError();
}

template <int kHT> cudaError_t launch_bf16(const AttentionParams &p, cudaStream_t stream)
{
    constexpr int smem = bf16::Bf16Config<kHT>::kSmemBytes;
    auto kernel = bf16::kernel<kHT>;
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (err != cudaSuccess)
        return err;
    kernel<<<static_cast<unsigned>(p.num_tokens * (p.num_heads / kHT)), bf16::kThreads, smem, stream>>>(p);
    return cudaGetLastError();
}

// Heads per CTA (BF16) or per warpgroup (FP8) chosen before the launch.
cudaError_t launch(const AttentionParams &p, bool fp8_path, cudaStream_t stream)
{
    switch (p.heads_per_cta) {
    case 8: return fp8_path ? launch_fp8<8>(p, stream) : launch_bf16<8>(p, stream);
    case 16: return fp8_path ? launch_fp8<16>(p, stream) : launch_bf16<16>(p, stream);
    case 32: return fp8_path ? launch_fp8<32>(p, stream) : launch_bf16<32>(p, stream);
    default: return launch_bf16<64>(p, stream);
    }
}

bool is_fp8_pool(const smla_index_set &set)
{
    return !set.indices || set.pool.format == SMLA_KV_FP8;
}

} // namespace
} // namespace smla

extern "C" smla_status smla_cuda_attention(smla_context *ctx, const smla_problem *pr)
{
    using namespace smla;
    if (pr->num_tokens == 0)
        return smla_succeed(ctx);
    if (pr->swa.pool.format == SMLA_KV_FP8_DS_MLA || (pr->extra.indices && pr->extra.pool.format == SMLA_KV_FP8_DS_MLA))
        return smla_fail(ctx, SMLA_ERR_KV_FORMAT, "the CUDA backend does not read fp8_ds_mla pools yet; use the CPU backend");
    AttentionParams p{};
    p.num_tokens = pr->num_tokens;
    p.num_heads = pr->num_heads;
    const bool q_fp8 = pr->q_dtype == SMLA_DTYPE_FP8_E4M3;
    const bool fp8_path = q_fp8 && is_fp8_pool(pr->swa) && is_fp8_pool(pr->extra);
    // FP8: heads per warpgroup, at most 32 (a WG holds O^T for 512 dims); BF16: heads per
    // CTA, at most 64. Enough work items for every SM (two WGs each on the FP8 path).
    p.heads_per_cta = fp8_path ? heads_per_cta(pr->num_tokens, pr->num_heads, 2 * ctx->sm_count, 32)
                               : heads_per_cta(pr->num_tokens, pr->num_heads, ctx->sm_count, 64);
    const int64_t ctas = pr->num_tokens * (pr->num_heads / p.heads_per_cta);
    if (ctas > 0x7FFFFFFF)
        return smla_fail(ctx, SMLA_ERR_SHAPE, "q: %lld tokens are more than one launch can hold", (long long)pr->num_tokens);
    p.q = pr->q;
    p.q_is_fp8 = q_fp8;
    p.q_token_stride = pr->q_token_stride;
    p.swa = pool_params(pr->swa);
    p.extra = pool_params(pr->extra);
    p.swa_idx = index_params(pr->swa);
    p.extra_idx = index_params(pr->extra);
    p.num_parts = pr->num_parts;
    for (int i = 0; i < pr->num_parts; i++) {
        p.parts[i].cu = pr->parts[i].cu;
        p.parts[i].seq_lens = pr->parts[i].seq_lens;
        p.parts[i].num_seqs = pr->parts[i].num_seqs;
        p.parts[i].token_offset = pr->parts[i].token_offset;
        p.parts[i].num_tokens = pr->parts[i].num_tokens;
    }
    p.window = pr->window;
    p.sinks = pr->sinks;
    p.scale_log2 = pr->bmm1_scale * 1.4426950408889634f;
    p.bmm2_scale = pr->bmm2_scale;
    p.out = pr->out;
    p.out_token_stride = pr->out_token_stride;
    p.lse = pr->lse;
    p.lse_token_stride = pr->lse_token_stride;

    cudaStream_t stream = static_cast<cudaStream_t>(pr->stream);
    const cudaError_t err = launch(p, fp8_path, stream);
    if (err != cudaSuccess)
        return smla_fail(ctx, SMLA_ERR_CUDA, "sparse attention launch failed: %s", cudaGetErrorString(err));
    return smla_succeed(ctx);
}
