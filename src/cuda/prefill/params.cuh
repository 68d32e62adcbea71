// What the sparse attention kernels read: a validated smla_problem flattened into plain
// device pointers and sizes (prefill_launch.cu builds it).
#pragma once
#include <cstdint>

namespace smla {

struct PoolParams {
    const uint8_t *data;
    int64_t rows;          // slots: num_blocks * block_size
    int64_t block_stride;  // bytes
    int32_t block_size;
    int32_t format;        // smla_kv_format
};

struct IndexParams {
    const int32_t *indices; // [T][width], row_stride elements apart; NULL when width == 0
    int64_t row_stride;
    const int32_t *lens;    // optional [T], lens_stride apart
    int64_t lens_stride;
    int32_t width;
};

struct PositionPart {
    const int32_t *cu;       // [num_seqs + 1], relative to token_offset
    const int32_t *seq_lens; // [num_seqs]
    int32_t num_seqs;
    int64_t token_offset;
    int64_t num_tokens;
};

// A plan's arrays, positions found at run time (device memory): a decode token's in one
// load (or from the decode arrays), a prefill token's from the counts and its segment.
struct PlanPositions {
    const int32_t *decode_positions; // [max_tokens]: position, or SMLA_PLAN_NOT_DECODE
    int32_t max_tokens;
    const int32_t *counts;          // [0] decode requests D, [1] segments n
    const int32_t *decode_starts;   // [D + 1] from token 0
    const int32_t *decode_seq_lens; // [D]
    const int32_t *segment_starts;  // [n + 1] from the first prefill token
    const int32_t *segment_seq_lens;
};

struct AttentionParams {
    int64_t num_tokens;
    int32_t num_heads;
    int32_t heads_per_cta;
    const void *q;          // [T][H][512], BF16 or E4M3
    bool q_is_fp8;
    int64_t q_token_stride; // elements
    PoolParams swa, extra;
    IndexParams swa_idx, extra_idx;
    int32_t num_parts;      // 0: no positions (unless has_plan)
    PositionPart parts[2];
    bool has_plan;          // positions from `plan`, not `parts`
    PlanPositions plan;
    int32_t window;
    const float *sinks;     // optional [H]
    float scale_log2;       // bmm1_scale * log2(e)
    float bmm2_scale;
    uint16_t *out;          // BF16 [T][H][512]
    int64_t out_token_stride;
    float *lse;             // optional [T][H]
    int64_t lse_token_stride;
    // Split-KV: with splits > 1 a work item is (token, head group, split s), split s
    // covers tiles [s * split_tiles, (s + 1) * split_tiles) of the token (tile_rows
    // entries each) and writes partials that combine_kernel merges.
    int32_t tile_rows;
    int32_t splits;
    bool split_all;         // every token is split (else, with a plan, only its decodes)
    int32_t split_tiles;
    uint16_t *partial_o;    // [T][H][splits][512] BF16: sum of p.v (max-relative p), P scale removed
    float2 *partial_ml;     // [T][H][splits]: (running max in log2 units, row sum)
};

// Index of (token t, head h, split s) in the partial arrays.
__host__ __device__ inline int64_t partial_index(const AttentionParams &p, int64_t t, int h, int s)
{
    return (t * p.num_heads + h) * p.splits + s;
}

} // namespace smla
