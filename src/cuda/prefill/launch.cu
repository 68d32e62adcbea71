// The CUDA backend of smla_attention: picks the kernel (FP8 or BF16 path, each with heads
// on M for 64-head groups and heads on N or entries on M for 8-32 heads) and the heads per
// CTA from the problem and the GPU, and launches it on the caller's stream.
#include <algorithm>
#include <cuda_runtime.h>

#include "bf16_entries_ring.cuh"
#include "bf16_heads_on_m.cuh"
#include "bf16_shared_tile.cuh"
#include "combine.cuh"
#include "fp8_heads_on_m.cuh"
#include "fp8_token_wg.cuh"
#ifdef SMLA_TIMELINE
#include "timeline_io.cuh"
#endif

extern "C" {
#include "cuda_workspace.h"
#include "head_tile_choice.h"
#include "problem.h"
#include "split_choice.h"
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

// Every kernel of a call is launched with programmatic stream serialisation: its CTAs may
// be scheduled while the kernel before it in the stream ends (smla's kernels allow it at
// their start), and they wait for that kernel (dependent_grid_wait) before anything else.
cudaError_t launch_programmatic(void (*kernel)(AttentionParams), int64_t ctas, int threads, int smem,
                                const AttentionParams &p, cudaStream_t stream)
{
    if (smem > 0) {
        const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (err != cudaSuccess)
            return err;
    }
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(ctas));
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, p);
}

// Shared: a CTA per pair of items. Unshared: as many CTAs as fit on the device at once
// (at most one per item), each walking its items.
template <int kHT, bool kShared, bool kDs, bool kBf16Q>
cudaError_t launch_fp8_as(const AttentionParams &p, int sm_count, cudaStream_t stream)
{
    constexpr int wgs = fp8wg::wgs_per_cta<kShared>();
    const auto kernel = fp8wg::kernel<kHT, kShared, kDs, kBf16Q>;
    // Two or three one-WG CTAs per SM need all of the SM's shared memory carveout.
    const cudaError_t err =
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    if (err != cudaSuccess)
        return err;
    const int64_t items = p.num_tokens * (p.num_heads / kHT) * p.splits;
    const int64_t resident = int64_t(fp8wg::ctas_per_sm<kHT, kShared, kDs>()) * sm_count;
    return launch_programmatic(kernel, kShared ? items / wgs : std::min(items, resident), fp8wg::kWGThreads * wgs,
                               fp8wg::smem_bytes<kHT, kShared, kDs, kBf16Q>(), p, stream);
}

// The two WGs of a CTA share one token's tiles when they can: two WGs per SM and an even
// number of head groups (then the CTAs are exactly items / 2). kDs: fp8_ds_mla rows,
// kBf16Q: under BF16 queries.
template <int kHT, bool kDs, bool kBf16Q = false>
cudaError_t launch_fp8(const AttentionParams &p, int sm_count, cudaStream_t stream)
{
    if constexpr (fp8wg::wgs_per_sm<kHT, kDs>() == 2) {
        if ((p.num_heads / kHT) % 2 == 0)
            return launch_fp8_as<kHT, true, kDs, kBf16Q>(p, sm_count, stream);
    }
    return launch_fp8_as<kHT, false, kDs, kBf16Q>(p, sm_count, stream);
}

// fp8wg over fp8_ds_mla rows (ds_wg), under the launch's query type.
template <int kHT> cudaError_t launch_ds_wg(const AttentionParams &p, int sm_count, cudaStream_t stream)
{
    return p.q_is_fp8 ? launch_fp8<kHT, true>(p, sm_count, stream) : launch_fp8<kHT, true, true>(p, sm_count, stream);
}

// bf16ring: a CTA per SM (at most one per item), each walking its items.
template <int kHT> cudaError_t launch_bf16(const AttentionParams &p, bool ring, int sm_count, cudaStream_t stream)
{
    const int64_t items = p.num_tokens * (p.num_heads / kHT) * p.splits;
    if constexpr (kHT <= bf16ring::kMaxHeads) {
        if (ring)
            return launch_programmatic(bf16ring::kernel<kHT>, std::min<int64_t>(items, sm_count), bf16ring::kThreads,
                                       bf16ring::Layout<kHT>::kBytes, p, stream);
    }
    return launch_programmatic(bf16::kernel<kHT>, items, bf16::kThreads, bf16::Bf16Config<kHT>::kSmemBytes, p, stream);
}

// kHT (8-32) heads per work item: fp8wg over `fp8` rows, or over fp8_ds_mla rows (ds_wg,
// at most kDsMaxHeads heads, either query type), else an entries-on-M BF16 kernel (ring:
// bf16ring, BF16 rows under BF16 queries).
template <int kHT>
cudaError_t launch_head_tile(const AttentionParams &p, bool fp8_path, bool ds_wg, bool ring, int sm_count,
                             cudaStream_t stream)
{
    if (fp8_path)
        return launch_fp8<kHT, false>(p, sm_count, stream);
    if constexpr (kHT <= fp8wg::kDsMaxHeads) {
        if (ds_wg)
            return launch_ds_wg<kHT>(p, sm_count, stream);
    }
    return launch_bf16<kHT>(p, ring, sm_count, stream);
}

// The heads-on-M kernels' work items: fewer than 64 heads are one padded group (bf16m).
bool heads_on_m_padded(const AttentionParams &p) { return p.num_heads < heads_on_m::kHeads; }
int64_t heads_on_m_items(const AttentionParams &p)
{
    return heads_on_m_padded(p) ? heads_on_m::num_items<true>(p) : heads_on_m::num_items<false>(p);
}

// The heads-on-M kernels (fp8m, bf16m) walk the items with a CTA per SM when there are
// more than two per SM, no token is split and the launch is not a plan's decodes alone
// (fp8_heads_on_m.cuh: the gain on prefill, 1-6%, turns into a loss for a CTA's first one
// or two items, and a decode item's few tiles leave too little to overlap). bf16m walks
// only over BF16 rows under BF16 queries: under FP8 queries the walk lost 8-16% over BF16
// rows with Q widened by synchronous loads (v73 against v75) and 1-2% with Q landed raw and
// widened in place (v76), and over fp8_ds_mla rows 7-15% (v72, v77; PERF sessions 19-20).
// Its producer loads BF16 Q alone.
bool heads_on_m_walks(const AttentionParams &p, bool fp8_path, int sm_count, bool decodes_only)
{
    return p.heads_per_cta == heads_on_m::kHeads && !decodes_only && p.splits == 1 &&
           heads_on_m_items(p) > 2 * int64_t(sm_count) &&
           (fp8_path || (!p.q_is_fp8 && !has_raw_rows(p)));
}

// A heads-on-M kernel (bf16m or fp8m) over `ctas` CTAs: one per (token, 64-head group,
// split), or one per SM when it walks.
cudaError_t launch_heads_on_m(void (*kernel)(AttentionParams), int threads, int smem, int64_t ctas,
                              const AttentionParams &p, cudaStream_t stream)
{
    return launch_programmatic(kernel, ctas, threads, smem, p, stream);
}

// Heads per CTA (BF16) or per warpgroup (FP8) chosen before the launch; then the
// combine step when tokens are split.
// ds_wg: fp8_ds_mla rows at 8-16 heads per WG (fp8wg with kDs).
// walk: a heads-on-M launch takes the walking form (heads_on_m_walks).
// ring: BF16 rows under BF16 queries, 8 or 16 heads an item (bf16ring).
cudaError_t launch(const AttentionParams &p, bool fp8_path, bool ds_wg, bool walk, bool ring, int sm_count,
                   cudaStream_t stream)
{
    cudaError_t err;
    switch (p.heads_per_cta) {
    case 8: err = launch_head_tile<8>(p, fp8_path, ds_wg, ring, sm_count, stream); break;
    case 16: err = launch_head_tile<16>(p, fp8_path, ds_wg, ring, sm_count, stream); break;
    case 32: err = launch_head_tile<32>(p, fp8_path, ds_wg, ring, sm_count, stream); break;
    default:
        if (!fp8_path && walk)
            err = launch_heads_on_m(heads_on_m_padded(p) ? bf16m::kernel<true, true> : bf16m::kernel<true>,
                                    heads_on_m::kThreads, bf16m::Layout::kBytes, sm_count, p, stream);
        else if (!fp8_path)
            err = launch_heads_on_m(heads_on_m_padded(p) ? bf16m::kernel<false, true> : bf16m::kernel<false>,
                                    heads_on_m::kThreads, bf16m::Layout::kBytes, heads_on_m_items(p), p, stream);
        else if (walk)
            err = launch_heads_on_m(fp8m::kernel<true>, fp8m::kThreads, fp8m::Layout::kBytes, sm_count, p, stream);
        else
            err = launch_heads_on_m(fp8m::kernel<false>, fp8m::kThreads, fp8m::Layout::kBytes, heads_on_m_items(p), p, stream);
        break;
    }
    if (err != cudaSuccess || p.splits == 1)
        return err;
    return launch_programmatic(combine_kernel, p.num_tokens * p.num_heads, kCombineThreads, 0, p, stream);
}

constexpr int kFixedSplitEntries = 512; // SMLA_SPLIT_FIXED: split points every 512 entries

// Splits per token and tiles per split. FIXED: every token, every 512 entries. AUTO:
// the split that should finish first (smla_auto_split_tiles), never when the launch's
// work items (tokens x head groups) fill the GPU (work_slots); only the splittable
// tokens are split (a plan's decodes, or every token without a plan).
// KV tiles of tile_rows entries that a token's widest work spans (0 without entries).
int max_kv_tiles(const smla_problem *pr, int tile_rows)
{
    const int64_t width = (pr->swa.indices ? pr->swa.width : 0) + (pr->extra.indices ? pr->extra.width : 0);
    return static_cast<int>((width + tile_rows - 1) / tile_rows);
}

void choose_splits(const smla_problem *pr, int64_t work_slots, int tile_multiple, AttentionParams *p)
{
    const int max_tiles = max_kv_tiles(pr, p->tile_rows);
    const int64_t splittable = pr->has_plan ? pr->plan.num_decode_tokens : pr->num_tokens;
    p->splits = 1;
    p->split_tiles = max_tiles > 0 ? max_tiles : 1;
    p->split_all = pr->split == SMLA_SPLIT_FIXED;
    if (pr->split == SMLA_SPLIT_NONE || max_tiles <= 1 || (!p->split_all && splittable == 0))
        return;
    int pieces;
    if (pr->split == SMLA_SPLIT_FIXED) {
        p->split_tiles = kFixedSplitEntries / p->tile_rows;
        pieces = (max_tiles + p->split_tiles - 1) / p->split_tiles;
    } else {
        const int64_t items = pr->num_tokens * ((pr->num_heads + p->heads_per_cta - 1) / p->heads_per_cta);
        p->split_tiles = smla_auto_split_tiles(items, work_slots, max_tiles, tile_multiple);
        pieces = (max_tiles + p->split_tiles - 1) / p->split_tiles;
    }
    if (pieces > 1)
        p->splits = pieces;
    else
        p->split_tiles = max_tiles;
}

// Heads per warpgroup of fp8wg over fp8_ds_mla rows. An item's gather, S, softmax and V
// widening cost the same at 8 heads as at 16, so halving the heads doubles them per token
// (v93: 38% of the rate), which costs more than the idle WG slots the larger tile leaves
// (v96: +9-91% at decode b16-b64). Only when even items split to one KV tile each could
// not fill the GPU's WG slots does the smaller tile pay (b2: -10% with 16, v95).
int ds_wg_heads(const smla_problem *pr, int64_t work_slots)
{
    const int heads = pr->num_heads < fp8wg::kDsMaxHeads ? pr->num_heads : fp8wg::kDsMaxHeads;
    const int64_t one_tile_items = pr->num_tokens * (pr->num_heads / heads) * max_kv_tiles(pr, fp8wg::kRows);
    return one_tile_items >= work_slots ? heads
                                        : smla_heads_per_cta(pr->num_tokens, pr->num_heads, work_slots, fp8wg::kDsMaxHeads);
}

// Whether every row the problem reads is in `format` (an index set without indices reads
// none).
bool rows_in(const smla_problem *pr, smla_kv_format format)
{
    const auto set_in = [format](const smla_index_set &set) { return !set.indices || set.pool.format == format; };
    return set_in(pr->swa) && set_in(pr->extra);
}

} // namespace
} // namespace smla

extern "C" smla_status smla_cuda_attention(smla_context *ctx, const smla_problem *pr)
{
    using namespace smla;
    if (pr->num_tokens == 0)
        return smla_succeed(ctx);
    AttentionParams p{};
    p.num_tokens = pr->num_tokens;
    p.num_heads = pr->num_heads;
    const bool q_fp8 = pr->q_dtype == SMLA_DTYPE_FP8_E4M3;
    const bool fp8_path = q_fp8 && rows_in(pr, SMLA_KV_FP8);
    // 64-head groups always take a heads-on-M kernel (fp8m or bf16m), whatever the batch
    // (their arithmetic differs from the other kernels', so a batch-dependent choice would
    // break bit-identity). 8-32 heads: FP8 queries over `fp8` rows, heads per warpgroup
    // (at most 32: a WG holds O^T for 512 dims), enough work items for every SM (two WGs
    // each); over fp8_ds_mla rows, under either query type, the same kernel with at most 16
    // heads per warpgroup (ds_wg_heads); otherwise the entries-on-M BF16 kernel. Each
    // computes every head alike whatever the head tile.
    // Over BF16 rows at 8-32 heads: under BF16 queries, 8 and 16 heads (and other counts
    // below 32) take bf16ring, at most 16 heads an item; 32 heads, and 16 under FP8
    // queries, bf16m with the head group padded to 64 (its rate counted on the real
    // heads, 1/4 or 1/2 of 64 heads', is above the entries-on-M kernel's: docs/perf/LOG.md
    // session 36). Both choices depend on the heads and formats alone, never on the batch.
    const bool bf16_rows = !fp8_path && rows_in(pr, SMLA_KV_BF16);
    const bool padded = bf16_rows && (pr->num_heads == 32 || (pr->num_heads == 16 && q_fp8));
    const bool on_m = pr->num_heads % heads_on_m::kHeads == 0 || padded;
    const bool ds_wg = !fp8_path && rows_in(pr, SMLA_KV_FP8_DS_MLA) && !on_m;
    const bool fp8_wg = (fp8_path && !on_m) || ds_wg; // ds_wg excludes on_m itself
    const bool ring = bf16_rows && !on_m && !q_fp8;
    p.heads_per_cta = on_m    ? heads_on_m::kHeads
                      : ds_wg ? ds_wg_heads(pr, 2 * ctx->sm_count)
                      : fp8_wg ? smla_heads_per_cta(pr->num_tokens, pr->num_heads, 2 * ctx->sm_count, 32)
                               : smla_heads_per_cta(pr->num_tokens, pr->num_heads, ctx->sm_count,
                                                    ring ? bf16ring::kMaxHeads : 32);
    p.tile_rows = on_m ? heads_on_m::kRows : fp8_wg ? fp8wg::kRows : ring ? bf16ring::kRows : bf16::kTileRows;
    choose_splits(pr, fp8_wg ? 2 * ctx->sm_count : ctx->sm_count, on_m ? 2 : 1, &p);
    const int64_t items = pr->num_tokens * ((pr->num_heads + p.heads_per_cta - 1) / p.heads_per_cta) * p.splits;
    if (items > 0x7FFFFFFF || pr->num_tokens * pr->num_heads > 0x7FFFFFFF)
        return smla_fail(ctx, SMLA_ERR_SHAPE, "q: %lld tokens are more than one launch can hold", (long long)pr->num_tokens);
    if (p.splits > 1) {
        const size_t partials = static_cast<size_t>(pr->num_tokens) * pr->num_heads * p.splits;
        void *ws = nullptr;
        const smla_status st = smla_cuda_workspace(ctx, partials * (512 * sizeof(uint16_t) + sizeof(float2)), pr->stream, &ws);
        if (st != SMLA_OK)
            return st;
        p.partial_o = static_cast<uint16_t *>(ws);
        p.partial_ml = reinterpret_cast<float2 *>(p.partial_o + partials * 512);
    }
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
    p.has_plan = pr->has_plan;
    if (pr->has_plan) {
        p.plan.decode_positions = pr->plan.decode_token_positions;
        p.plan.max_tokens = pr->plan.max_tokens;
        p.plan.counts = pr->plan.counts;
        p.plan.decode_starts = pr->plan.decode_query_starts;
        p.plan.decode_seq_lens = pr->plan.decode_seq_lens;
        p.plan.segment_starts = pr->plan.segment_query_starts;
        p.plan.segment_seq_lens = pr->plan.segment_seq_lens;
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
#ifdef SMLA_TIMELINE
    timeline_clear(p, stream);
#endif
    const bool decodes_only = pr->has_plan && pr->plan.num_prefill_tokens == 0;
    const bool walk = heads_on_m_walks(p, fp8_path, ctx->sm_count, decodes_only);
    const cudaError_t err = launch(p, fp8_path, ds_wg, walk, ring, ctx->sm_count, stream);
#ifdef SMLA_TIMELINE
    // A walking heads-on-M launch has a CTA per SM, any other one CTA per item.
    timeline_write(p, fp8_path, walk ? ctx->sm_count : items, stream);
#endif
    if (err != cudaSuccess)
        return smla_fail(ctx, SMLA_ERR_CUDA, "sparse attention launch failed: %s", cudaGetErrorString(err));
    return smla_succeed(ctx);
}
