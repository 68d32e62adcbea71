// The host side of the diagnostic build's timeline (common/timeline.cuh), included by
// launch.cu only when SMLA_TIMELINE is defined (that translation unit owns the marks).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include "../common/timeline.cuh"
#include "heads_on_m.cuh"
#include "params.cuh"

namespace smla {
namespace {

// The diagnostic build's timeline of the heads-on-M kernels (common/timeline.cuh): the
// marks are cleared before each launch of fp8m or bf16m and, when SMLA_TIMELINE_DIR is
// set, written after it to DIR/<kernel>_T<tokens>_H<heads>_W<width>_S<splits>[_ds].bin
// (one file per shape, the latest launch's: raw uint64 [CTAs][16]; _ds: fp8_ds_mla rows),
// with split tokens also the combine's marks in the same name + ".combine" ([CTAs][4]).
// Waiting for the kernel breaks the timing of the launches around it, not the marks
// within it.
bool timeline_kernel(const AttentionParams &p) { return p.heads_per_cta == heads_on_m::kHeads; }

void timeline_clear(const AttentionParams &p, cudaStream_t stream)
{
    void *marks = nullptr;
    if (timeline_kernel(p) && cudaGetSymbolAddress(&marks, timeline::g_marks) == cudaSuccess)
        cudaMemsetAsync(marks, 0, sizeof(timeline::g_marks), stream);
    if (timeline_kernel(p) && p.splits > 1 && cudaGetSymbolAddress(&marks, timeline::g_combine_marks) == cudaSuccess)
        cudaMemsetAsync(marks, 0, sizeof(timeline::g_combine_marks), stream);
}

// The first n rows of `symbol` (rows of `row` bytes) to `path`.
template <typename T> void timeline_dump(const T &symbol, size_t n, size_t row, const char *path)
{
    static uint8_t host[sizeof(T)];
    if (cudaMemcpyFromSymbol(host, symbol, n * row) != cudaSuccess)
        return;
    if (FILE *f = fopen(path, "wb")) {
        fwrite(host, row, n, f);
        fclose(f);
    }
}

// ctas: the attention kernel's grid.
void timeline_write(const AttentionParams &p, bool fp8_path, int64_t ctas, cudaStream_t stream)
{
    const char *dir = getenv("SMLA_TIMELINE_DIR");
    if (!dir || !timeline_kernel(p))
        return;
    if (cudaStreamSynchronize(stream) != cudaSuccess)
        return;
    const auto capped = [](int64_t ctas) { return static_cast<size_t>(ctas < timeline::kCtas ? ctas : timeline::kCtas); };
    char path[4096];
    const bool ds = p.swa.format == SMLA_KV_FP8_DS_MLA || p.extra.format == SMLA_KV_FP8_DS_MLA;
    // R: the first pool's rows (a preset's cases differ only by it: flashmla-shapes).
    snprintf(path, sizeof(path) - 16, "%s/%s_T%lld_H%d_W%d_S%d_R%lld%s.bin", dir, fp8_path ? "fp8m" : "bf16m",
             static_cast<long long>(p.num_tokens), p.num_heads, p.swa_idx.width + p.extra_idx.width, p.splits,
             static_cast<long long>(p.swa.rows), ds ? "_ds" : "");
    timeline_dump(timeline::g_marks, capped(ctas), sizeof(timeline::g_marks[0]), path);
    if (p.splits > 1) {
        strcat(path, ".combine");
        timeline_dump(timeline::g_combine_marks, capped(p.num_tokens * p.num_heads),
                      sizeof(timeline::g_combine_marks[0]), path);
    }
}

} // namespace
} // namespace smla
