// The staging gather of smla bench --staging (tools/staging_gather.h): one warp per
// workspace row, 16-byte stores; written independently of the library's kernels, so the
// bench's comparison of the two paths also checks the library's fp8_ds_mla decoding.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_bf16.h>

#include "staging_gather.h"

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kNopeChunks = SMLA_DS_MLA_NOPE / 8; // 16-byte output chunks of NoPE values

struct Source {
    const uint8_t *data;
    int64_t rows;
    int64_t block_stride;
    int32_t block_size;
    const int32_t *indices;
    int64_t row_stride;
    int32_t width;
    const int32_t *lens;
};

Source to_source(const smla_staging_source &s)
{
    Source d;
    d.data = static_cast<const uint8_t *>(s.pool.data);
    d.rows = s.width > 0 ? s.pool.num_blocks * s.pool.block_size : 0;
    d.block_stride = s.pool.block_stride;
    d.block_size = s.pool.block_size > 0 ? s.pool.block_size : 1;
    d.indices = s.indices;
    d.row_stride = s.row_stride;
    d.width = s.indices ? s.width : 0;
    d.lens = s.lens;
    return d;
}

// UE8M0: 2^(b - 127), built from its bits (b = 0 is the subnormal 2^-127, 255 is NaN).
__device__ float ue8m0(uint32_t b)
{
    return b == 0 ? __uint_as_float(0x00400000u) : b == 255 ? __uint_as_float(0x7FC00000u) : __uint_as_float(b << 23);
}

// Eight E4M3 values (one 8-byte word) times scale, as eight BF16 in 16 bytes. Exact:
// an E4M3 value has 4 significant bits and the scale is a power of two.
__device__ uint4 decode8(uint2 e4m3, float scale)
{
    const uint32_t words[2] = {e4m3.x, e4m3.y};
    uint32_t out[4];
    for (int i = 0; i < 4; i++) {
        const __nv_fp8x2_storage_t pair =
            static_cast<__nv_fp8x2_storage_t>(words[i / 2] >> (16 * (i % 2)));
        const __half2 h = __half2(__nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3));
        const float2 f = __half22float2(h);
        const __nv_bfloat162 b = __floats2bfloat162_rn(f.x * scale, f.y * scale);
        out[i] = *reinterpret_cast<const uint32_t *>(&b);
    }
    return make_uint4(out[0], out[1], out[2], out[3]);
}

// Output chunk k (8 values) of a data row: NoPE chunks decode 8 bytes with their tile's
// scale, RoPE chunks copy 16 bytes of BF16.
__device__ uint4 chunk(const uint8_t *data, uint2 scales, int k)
{
    if (k >= kNopeChunks)
        return *reinterpret_cast<const uint4 *>(data + SMLA_DS_MLA_NOPE + 16 * (k - kNopeChunks));
    const int tile = k / (SMLA_DS_MLA_TILE / 8);
    const uint32_t word = tile < 4 ? scales.x : scales.y;
    return decode8(*reinterpret_cast<const uint2 *>(data + 8 * k), ue8m0((word >> (8 * (tile % 4))) & 0xFF));
}

__global__ void __launch_bounds__(32 * kWarpsPerBlock)
gather_kernel(Source swa, Source extra, int64_t rows, uint4 *workspace)
{
    const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (row >= rows)
        return;
    const int lane = threadIdx.x % 32;
    const int entries = swa.width + extra.width;
    const int64_t t = row / entries;
    const int c = int(row % entries);
    // Field by field: selecting a whole Source would copy both to the stack.
    const bool in_swa = c < swa.width;
    const int col = in_swa ? c : c - swa.width;
    const int32_t *lens = in_swa ? swa.lens : extra.lens;
    if (lens && col >= lens[t])
        return;
    const int32_t slot = in_swa ? swa.indices[t * swa.row_stride + col] : extra.indices[t * extra.row_stride + col];
    if (slot < 0 || slot >= (in_swa ? swa.rows : extra.rows))
        return;
    const int32_t block_size = in_swa ? swa.block_size : extra.block_size;
    const uint8_t *block = (in_swa ? swa.data : extra.data) + int64_t(slot / block_size) * (in_swa ? swa.block_stride : extra.block_stride);
    const int r = slot % block_size;
    const uint8_t *data = block + int64_t(r) * SMLA_DS_MLA_DATA_BYTES;
    const uint2 scales = *reinterpret_cast<const uint2 *>(
        block + int64_t(block_size) * SMLA_DS_MLA_DATA_BYTES + int64_t(r) * SMLA_DS_MLA_SCALE_BYTES);
    uint4 *dst = workspace + row * (SMLA_HEAD_DIM / 8);
    const uint4 first = chunk(data, scales, lane), second = chunk(data, scales, lane + 32);
    dst[lane] = first;
    dst[lane + 32] = second;
}

} // namespace

extern "C" cudaError_t smla_staging_gather(const smla_staging_source *swa,
                                           const smla_staging_source *extra, int64_t tokens,
                                           uint16_t *workspace, cudaStream_t stream)
{
    const Source s = to_source(*swa), e = to_source(*extra);
    const int64_t rows = tokens * (s.width + e.width);
    if (rows == 0)
        return cudaSuccess;
    const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    gather_kernel<<<static_cast<unsigned>(blocks), 32 * kWarpsPerBlock, 0, stream>>>(
        s, e, rows, reinterpret_cast<uint4 *>(workspace));
    return cudaGetLastError();
}
