// racecheck_probe: race-free exchanges through named barriers in the shape of smla's
// warp-specialised BF16 kernel (bf16_heads_on_m.cuh), to tell what compute-sanitizer's
// racecheck makes of them. A CTA of 384 threads: two "compute" warpgroups exchange
// values through shared memory across 256-thread named barriers (bar.sync on both sides,
// and bar.arrive -> bar.sync), while the third warpgroup either leaves at once after
// lowering its registers (`--specialised`, as the kernel's producer does) or takes part
// in nothing. Every exchange here is ordered by a barrier both sides pass, so racecheck
// should report nothing; `scripts/gpu-check.sh sanitize` runs it under racecheck to say
// whether reports on bf16m's hand-offs can be read as races.
// Usage: racecheck_probe [--specialised]   (exit status 0 when the results are right)
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>

#include "../src/cuda/common/sm90.cuh"

namespace {

using namespace smla;

constexpr int kRounds = 8;

__global__ void __launch_bounds__(384, 1) probe(float *out, bool specialised)
{
    __shared__ float handoff[2][128], sums[2][128];
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    if (wg == 2) {
        if (specialised)
            regs_decrease<72>();
        return;
    }
    if (specialised)
        regs_increase<216>();
    float acc = 0.f;
    for (int k = 0; k < kRounds; k++) {
        // WG 0 -> WG 1 by arrival, WG 1 -> WG 0 by arrival (the kernel's max hand-offs).
        if (wg == 0) {
            handoff[k & 1][tid] = float(k + tid);
            named_arrive(1, 256);
            named_barrier(2, 256);
            acc += handoff[k & 1][tid] * 0.5f;
        } else {
            named_barrier(1, 256);
            handoff[k & 1][tid] += 1.f;
            named_arrive(2, 256);
        }
        // Both write, both sync, both read the other's (the kernel's row sums).
        sums[wg][tid] = acc + float(wg);
        named_barrier(3, 256);
        acc += sums[1 - wg][tid];
        named_barrier(3, 256);
    }
    out[threadIdx.x] = acc;
}

} // namespace

int main(int argc, char **argv)
{
    const bool specialised = argc > 1 && !strcmp(argv[1], "--specialised");
    float *out;
    const cudaError_t err = cudaMalloc(&out, 256 * sizeof(float));
    if (err != cudaSuccess) {
        fprintf(stderr, "racecheck_probe: %s\n", cudaGetErrorString(err));
        return 2;
    }
    probe<<<1, 384>>>(out, specialised);
    float host[256];
    if (cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "racecheck_probe: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    // The same recurrence on the host: each round WG 0 gains (k + tid + 1) / 2, then each
    // WG adds the other's acc + wg.
    int bad = 0;
    for (int tid = 0; tid < 128; tid++) {
        float a0 = 0.f, a1 = 0.f;
        for (int k = 0; k < kRounds; k++) {
            a0 += float(k + tid + 1) * 0.5f;
            const float s0 = a0, s1 = a1 + 1.f;
            a0 += s1;
            a1 += s0;
        }
        bad += host[tid] != a0 || host[128 + tid] != a1;
    }
    printf("racecheck_probe (%s): %s\n", specialised ? "specialised" : "plain", bad ? "WRONG RESULTS" : "results right");
    return bad ? 1 : 0;
}
