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

struct AttentionParams {
    int64_t num_tokens;
    int32_t num_heads;
    int32_t heads_per_cta;
    const void *q;          // [T][H][512], BF16 or E4M3
    bool q_is_fp8;
    int64_t q_token_stride; // elements
    PoolParams swa, extra;
    IndexParams swa_idx, extra_idx;
    int32_t num_parts;      // 0: no positions
    PositionPart parts[2];
    int32_t window;
    const float *sinks;     // optional [H]
    float scale_log2;       // bmm1_scale * log2(e)
    float bmm2_scale;
    uint16_t *out;          // BF16 [T][H][512]
    int64_t out_token_stride;
    float *lse;             // optional [T][H]
    int64_t lse_token_stride;
};

} // namespace smla
