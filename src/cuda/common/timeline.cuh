// Per-CTA timestamps of a kernel's phases, for finding where a CTA's fixed cost goes
// (docs/perf/LOG.md: ~5 us per fp8m CTA besides its tiles). Compiled in only with the CMake option
// SMLA_TIMELINE (a diagnostic build: each launch then clears the marks and, when
// SMLA_TIMELINE_DIR is set, waits for the kernel and writes them out; see launch.cu).
// Marks 0-12 and 16-18 are clock64() on the CTA's SM; 13-15 the SM id and %globaltimer at
// the CTA's start and end (nanoseconds, comparable across SMs); 19-34 sixteen sums of cycles
// over the CTA's pairs, whose meaning each kernel gives (its enum Sum; scripts/timeline.py
// labels them). The split-KV combine records %globaltimer at its CTAs' start, once the
// attention kernel is done (its grid wait), once the token is looked up, and at the end.
#pragma once
#include <cstdint>

namespace smla {
namespace timeline {

constexpr int kCtas = 1 << 15; // CTAs recorded per launch (the first ones)
enum Mark {
    kEntry, kGridWaited, kItemFound, kProducerSlots, kProducerFilled, kFirstTransposed, kQLanded, kFirstScored,
    kFirstPairDone, kLastPairStart, kLoopDone, kFinished, kPairs, kEndNs, kSmId, kStartNs,
    // The heads-on-M epilogue (finish): row sums exchanged, output scales computed, O stored.
    kEpilogueSums, kEpilogueScales, kEpilogueStored, kSum0
};
constexpr int kSums = 16, kMarks = kSum0 + kSums;

enum CombineMark { kCombineStart, kCombineWaited, kCombineLookedUp, kCombineEnd, kCombineMarks };

#ifdef SMLA_TIMELINE
__device__ uint64_t g_marks[kCtas][kMarks];
__device__ uint64_t g_combine_marks[kCtas][kCombineMarks];

__device__ __forceinline__ uint64_t global_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void set(int mark, uint64_t value)
{
    if (blockIdx.x < kCtas)
        g_marks[blockIdx.x][mark] = value;
}
__device__ __forceinline__ void mark(int mark) { set(mark, clock64()); }
__device__ __forceinline__ uint64_t now() { return clock64(); }
__device__ __forceinline__ void set_sum(int sum, uint64_t cycles) { set(kSum0 + sum, cycles); }
// Sums first..last of a warpgroup's array (called by one of its threads).
__device__ __forceinline__ void set_sums(const uint64_t *sums, int first, int last)
{
    for (int i = first; i <= last; i++)
        set_sum(i, sums[i]);
}
__device__ __forceinline__ void start()
{
    uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    set(kSmId, sm);
    set(kStartNs, global_ns());
    mark(kEntry);
}
__device__ __forceinline__ void end() { set(kEndNs, global_ns()); }
__device__ __forceinline__ void combine_mark(int mark)
{
    if (blockIdx.x < kCtas && threadIdx.x == 0)
        g_combine_marks[blockIdx.x][mark] = global_ns();
}
#else
__device__ __forceinline__ void set(int, uint64_t) {}
__device__ __forceinline__ void mark(int) {}
__device__ __forceinline__ uint64_t now() { return 0; } // sums of now() differences fold away
__device__ __forceinline__ void set_sum(int, uint64_t) {}
__device__ __forceinline__ void set_sums(const uint64_t *, int, int) {}
__device__ __forceinline__ void start() {}
__device__ __forceinline__ void end() {}
__device__ __forceinline__ void combine_mark(int) {}
#endif

} // namespace timeline
} // namespace smla
