// bf16m's gather and widening of raw rows (copy_half, then widen_half on each half of
// both tile buffers), bit for bit against the host's unpacking of the same rows: every
// element of two 64-row tiles whose rows mix fp8_ds_mla rows (random UE8M0 scale bytes),
// fp8 rows and invalid slots (zeros), in a fresh random order every run. It checks where
// copy_half lands each raw chunk, RoPE chunk and scale row, and that widen_half converts
// exactly the raw chunks of every row and leaves the others alone.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

extern "C" {
#include "smla.h"
#include "testutil.h"
}

#include "../../src/cuda/prefill/bf16_heads_on_m.cuh"
#include "cuda_check.h"

namespace {

using namespace smla;
constexpr int kRows = heads_on_m::kRows, kDims = 512, kBlock = 64;

// One CTA of three warpgroups: WG 2 publishes both buffers' row sets from `slots` (2 x 64
// entries; swa[i]: the slot is in the fp8_ds_mla pool, else in the fp8 pool) and copies
// the four halves; WG 0 then widens buffer 0, WG 1 buffer 1; out[buf][row][dim] = the
// tile's BF16 bits.
__global__ void __launch_bounds__(heads_on_m::kThreads, 1)
    gather_widen(const __grid_constant__ AttentionParams p, const int32_t *slots, const uint8_t *swa, uint16_t *out)
{
    extern __shared__ uint8_t smem_raw[];
    const bf16m::Shared sh(align_smem_1024(smem_raw));
    const int tid = threadIdx.x, wg = tid / 128, t = tid % 128;
    if (wg == 2) {
        const int u = t % kRows; // threads t < 64 publish row u of both buffers
        const EntrySlot rows[2] = {{slots[u], swa[u] != 0}, {slots[kRows + u], swa[kRows + u] != 0}};
        bf16m::publish_rows(p, sh, 0, rows, t);
        for (int f = 0; f < 4; f++)
            bf16m::copy_half(p, sh, 0, bf16m::fill_buf(f), bf16m::fill_half(f), t);
        cp_async_commit();
        cp_async_wait<0>();
    }
    __syncthreads();
    if (wg < 2)
        for (int half = 0; half < 2; half++) // a WG widens its own buffer, as in the kernel
            bf16m::widen_half(sh, 0, wg, half, t);
    __syncthreads();
    for (int i = tid; i < 2 * kRows * kDims; i += blockDim.x) {
        const int buf = i / (kRows * kDims), row = (i / kDims) % kRows, dim = i % kDims;
        out[i] = *reinterpret_cast<const uint16_t *>(sh.tile(buf) + tile_offset(kRows, row, 2 * dim));
    }
}

} // namespace

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("gpu_test_widen_tile")); // SMLA_TEST_SEED repeats a run
    // Pools: fp8_ds_mla (4 blocks of 64) and fp8 (4 blocks of 64), rows of random values
    // whose 64-value tiles span very different magnitudes (so the UE8M0 scales differ).
    const int rows = 4 * kBlock;
    std::vector<float> ds_rows(size_t(rows) * kDims), fp8_rows(size_t(rows) * kDims);
    for (int r = 0; r < rows; r++)
        for (int d = 0; d < kDims; d++) {
            const float tile_mag = ldexpf(1.f, (r * 7 + d / kBlock * 5) % 40 - 25);
            ds_rows[size_t(r) * kDims + d] = (float)(smla_rng_uniform(&rng) * 2 - 1) * tile_mag;
            fp8_rows[size_t(r) * kDims + d] = (float)(smla_rng_uniform(&rng) * 2 - 1) * 300.f;
        }
    const int64_t ds_stride = smla_kv_block_bytes(SMLA_KV_FP8_DS_MLA, kBlock);
    const int64_t fp8_stride = smla_kv_block_bytes(SMLA_KV_FP8, kBlock);
    std::vector<uint8_t> ds_host(size_t(ds_stride) * 4), fp8_host(size_t(fp8_stride) * 4);
    smla_kv_pool ds_pool = smla_kv_pool_make(ds_host.data(), SMLA_KV_FP8_DS_MLA, 4, kBlock, SMLA_MEMORY_HOST);
    smla_kv_pool fp8_pool = smla_kv_pool_make(fp8_host.data(), SMLA_KV_FP8, 4, kBlock, SMLA_MEMORY_HOST);
    CHECK(smla_kv_pack(&ds_pool, ds_rows.data()) == SMLA_OK);
    CHECK(smla_kv_pack(&fp8_pool, fp8_rows.data()) == SMLA_OK);

    // 128 entries: mostly fp8_ds_mla rows, some fp8 rows, some invalid slots.
    std::vector<int32_t> slots(2 * kRows);
    std::vector<uint8_t> swa(2 * kRows);
    for (int i = 0; i < 2 * kRows; i++) {
        const int64_t kind = smla_rng_range(&rng, 0, 7);
        swa[i] = kind < 6;
        slots[i] = kind == 7 ? -1 : (int32_t)smla_rng_range(&rng, 0, rows - 1);
    }

    uint8_t *d_ds, *d_fp8, *d_swa;
    int32_t *d_slots;
    uint16_t *d_out;
    CUDA_CHECK(cudaMalloc(&d_ds, ds_host.size()));
    CUDA_CHECK(cudaMalloc(&d_fp8, fp8_host.size()));
    CUDA_CHECK(cudaMalloc(&d_slots, slots.size() * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&d_swa, swa.size()));
    CUDA_CHECK(cudaMalloc(&d_out, size_t(2) * kRows * kDims * sizeof(uint16_t)));
    CUDA_CHECK(cudaMemcpy(d_ds, ds_host.data(), ds_host.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_fp8, fp8_host.data(), fp8_host.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_slots, slots.data(), slots.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_swa, swa.data(), swa.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_out, 0xA5, size_t(2) * kRows * kDims * sizeof(uint16_t))); // poison

    AttentionParams p;
    memset(&p, 0, sizeof p);
    p.swa = PoolParams{d_ds, rows, ds_stride, kBlock, SMLA_KV_FP8_DS_MLA};
    p.extra = PoolParams{d_fp8, rows, fp8_stride, kBlock, SMLA_KV_FP8};
    p.q = d_out; // any valid address: invalid rows read nothing from it
    const int smem = bf16m::Layout::kBytes;
    CUDA_CHECK(cudaFuncSetAttribute(gather_widen, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    gather_widen<<<1, heads_on_m::kThreads, smem>>>(p, d_slots, d_swa, d_out);
    CUDA_CHECK(cudaGetLastError());
    std::vector<uint16_t> out(size_t(2) * kRows * kDims);
    CUDA_CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));

    long bad = 0;
    std::vector<float> row(kDims);
    for (int i = 0; i < 2 * kRows; i++) {
        if (slots[i] < 0)
            memset(row.data(), 0, sizeof(float) * kDims);
        else
            CHECK(smla_kv_unpack_slot(swa[i] ? &ds_pool : &fp8_pool, slots[i], row.data()) == SMLA_OK);
        for (int d = 0; d < kDims; d++) {
            const uint16_t want = smla_float_to_bf16(row[d]), got = out[size_t(i) * kDims + d];
            const bool same = isnan(row[d]) ? isnan(smla_bf16_to_float(got)) : got == want;
            if (!same && bad++ < 10)
                fprintf(stderr, "buffer %d row %d (%s slot %d) dim %d: got 0x%04x, expected 0x%04x\n", i / kRows,
                        i % kRows, slots[i] < 0 ? "invalid" : swa[i] ? "fp8_ds_mla" : "fp8", slots[i], d, got, want);
        }
    }
    printf("%ld of %d values differ\n", bad, 2 * kRows * kDims);
    CHECK(bad == 0);
    CUDA_CHECK(cudaFree(d_ds));
    CUDA_CHECK(cudaFree(d_fp8));
    CUDA_CHECK(cudaFree(d_slots));
    CUDA_CHECK(cudaFree(d_swa));
    CUDA_CHECK(cudaFree(d_out));
    const int rc = smla_test_finish("gpu_test_widen_tile");
    printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}
