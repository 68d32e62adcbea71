// The widening of E4M3 data to BF16 (widen_chunk: the values exactly, then one BF16
// multiply by a ue8m0_to_float scale) that the BF16 kernels use for fp8 and fp8_ds_mla
// rows and FP8 queries, bit for bit against the host's conversions: every E4M3 code in
// every position of a 16-value chunk, under every UE8M0 scale byte (subnormal inputs and
// results, overflow to inf, NaN codes and the NaN scale).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "smla.h"
#include "testutil.h"
}

#include "../../src/cuda/prefill/bf16_gather.cuh"
#include "cuda_check.h"

namespace {

constexpr int kChunkValues = 16, kFirstCodes = 256, kScales = 256;

// Chunk (s, c0) holds the codes c0, c0 + 1, ..., c0 + 15 (mod 256) under scale byte s.
__host__ __device__ uint8_t code_of(int c0, int k) { return static_cast<uint8_t>((c0 + k) & 255); }

__global__ void widen_kernel(uint4 *out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= kFirstCodes * kScales)
        return;
    const int s = i / kFirstCodes, c0 = i % kFirstCodes;
    uint32_t w[4] = {0, 0, 0, 0};
    for (int k = 0; k < kChunkValues; k++)
        w[k / 4] |= uint32_t(code_of(c0, k)) << (8 * (k % 4));
    smla::widen_chunk(make_uint4(w[0], w[1], w[2], w[3]), smla::ue8m0_to_float(static_cast<uint8_t>(s)),
                      out[2 * i], out[2 * i + 1]);
}

// The BF16 of code c under scale byte s: the exact product, rounded once.
uint16_t expected(uint8_t c, int s)
{
    return smla_float_to_bf16((float)((double)smla_e4m3_to_float(c) * smla_ue8m0_to_float(static_cast<uint8_t>(s))));
}

} // namespace

int main(void)
{
    const size_t chunks = size_t(kFirstCodes) * kScales;
    uint4 *d_out;
    CUDA_CHECK(cudaMalloc(&d_out, 2 * chunks * sizeof(uint4)));
    CUDA_CHECK(cudaMemset(d_out, 0xA5, 2 * chunks * sizeof(uint4))); // poison
    widen_kernel<<<(unsigned)(chunks / 256), 256>>>(d_out);
    CUDA_CHECK(cudaGetLastError());
    uint16_t *out = static_cast<uint16_t *>(malloc(2 * chunks * sizeof(uint4)));
    CUDA_CHECK(cudaMemcpy(out, d_out, 2 * chunks * sizeof(uint4), cudaMemcpyDeviceToHost));
    long bad = 0;
    for (int s = 0; s < kScales; s++) {
        for (int c0 = 0; c0 < kFirstCodes; c0++) {
            const uint16_t *got = out + (size_t(s) * kFirstCodes + c0) * kChunkValues; // lo then hi: in order
            for (int k = 0; k < kChunkValues; k++) {
                const uint8_t c = code_of(c0, k);
                const uint16_t want = expected(c, s);
                const bool nan_want = isnan(smla_bf16_to_float(want));
                const bool same = nan_want ? isnan(smla_bf16_to_float(got[k])) : got[k] == want;
                if (!same && bad++ < 10)
                    fprintf(stderr, "code 0x%02x (position %d), scale byte %d: got 0x%04x, expected 0x%04x\n", c, k,
                            s, got[k], want);
            }
        }
    }
    free(out);
    CUDA_CHECK(cudaFree(d_out));
    printf("%ld of %zu values differ\n", bad, chunks * kChunkValues);
    CHECK(bad == 0);
    const int rc = smla_test_finish("gpu_test_widen_exact");
    printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}
