// racecheck_probe: race-free exchanges through named barriers in the shape of smla's
// warp-specialised kernels, to tell what compute-sanitizer's racecheck makes of them.
// Every exchange here is ordered by a barrier both sides pass, so racecheck should report
// nothing; `scripts/gpu-check.sh sanitize` runs each variant under racecheck to say whether
// reports on the kernels' hand-offs can be read as races.
//   plain, --specialised (bf16_heads_on_m.cuh): a CTA of 384 threads; two "compute"
//     warpgroups exchange values across 256-thread named barriers (bar.sync on both sides,
//     and bar.arrive -> bar.sync), while the third warpgroup either leaves at once after
//     lowering its registers (`--specialised`, as the kernel's producer does) or takes part
//     in nothing.
//   --merge (bf16_entries_ring.cuh's merge_and_store): a CTA of 512 threads whose two
//     producer warpgroups lower their registers and leave; item after item, the two
//     consumer warpgroups (registers raised) write their maxima, bar.sync, read both's,
//     then WG 1 hands its values to WG 0 through one scratch in rounds, each round a write,
//     bar.sync, WG 0's read, bar.sync (the next round rewrites what WG 0 just read).
// Usage: racecheck_probe [--specialised | --merge]   (exit status 0 when the results are right)
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

constexpr int kItems = 4, kMergeRounds = 4, kMergeValues = 8;

__global__ void __launch_bounds__(512, 1) merge_probe(float *out)
{
    __shared__ float maxima[2][8], scratch[kMergeValues * 128];
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    if (wg >= 2) {
        regs_decrease<88>();
        return;
    }
    regs_increase<168>();
    float acc = 0.f;
    for (int item = 0; item < kItems; item++) {
        if (tid < 8)
            maxima[wg][tid] = float(item * 7 + tid + wg);
        named_barrier(4, 256);
        const float m = fmaxf(maxima[0][tid % 8], maxima[1][tid % 8]);
        for (int round = 0; round < kMergeRounds; round++) {
            if (wg == 1)
                for (int i = 0; i < kMergeValues; i++)
                    scratch[i * 128 + tid] = m + float(round + i);
            named_barrier(4, 256);
            if (wg == 0)
                for (int i = 0; i < kMergeValues; i++)
                    acc += scratch[i * 128 + tid];
            named_barrier(4, 256);
        }
        named_barrier(4, 256); // the kernel's last barrier of an item (WG 0 has read the maxima)
    }
    if (wg == 0)
        out[tid] = acc;
}

// The probe's results against the same arithmetic on the host; returns the wrong ones.
int check_probe(const float *host)
{
    // Each round WG 0 gains (k + tid + 1) / 2, then each WG adds the other's acc + wg.
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
    return bad;
}

int check_merge_probe(const float *host)
{
    int bad = 0;
    for (int tid = 0; tid < 128; tid++) {
        float acc = 0.f;
        for (int item = 0; item < kItems; item++) {
            const float m = float(item * 7 + tid % 8 + 1);
            for (int round = 0; round < kMergeRounds; round++)
                for (int i = 0; i < kMergeValues; i++)
                    acc += m + float(round + i);
        }
        bad += host[tid] != acc;
    }
    return bad;
}

} // namespace

int main(int argc, char **argv)
{
    const char *variant = argc > 1 && !strcmp(argv[1], "--specialised") ? "specialised"
                          : argc > 1 && !strcmp(argv[1], "--merge")     ? "merge"
                                                                        : "plain";
    const bool merge = !strcmp(variant, "merge");
    float *out;
    const cudaError_t err = cudaMalloc(&out, 256 * sizeof(float));
    if (err != cudaSuccess) {
        fprintf(stderr, "racecheck_probe: %s\n", cudaGetErrorString(err));
        return 2;
    }
    if (merge)
        merge_probe<<<1, 512>>>(out);
    else
        probe<<<1, 384>>>(out, !strcmp(variant, "specialised"));
    float host[256];
    if (cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "racecheck_probe: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    const int bad = merge ? check_merge_probe(host) : check_probe(host);
    printf("racecheck_probe (%s): %s\n", variant, bad ? "WRONG RESULTS" : "results right");
    return bad ? 1 : 0;
}
