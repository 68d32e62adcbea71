// Device plans on the GPU (run on the H200; also clean under compute-sanitizer):
//  1. a CUDA graph that reads the plan's buffers (every token's absolute position) sees a
//     rebuild after the device seq_lens change in place (+17); no buffer moved;
//  2. with smla_plan_refresh captured in the graph, replaying alone after another +17
//     moves the positions (and the reader-only graph does not);
//  3. the pinned staging is not overwritten while a previous build's copy is pending;
//  4. random batches: the device plan's arrays equal the host plan's, and its decode
//     positions past the decodes are SMLA_PLAN_NOT_DECODE;
//  5. a host seq_lens pointer is refused; an empty batch is fine; decode positions before
//     0 (a seq_len shorter than its query) read as -1.
#include <cuda_runtime.h>
#include <string.h>

extern "C" {
#include "plan.h"
#include "testutil.h"
}

#include "cuda_check.h"

// The largest i in [0, n) with starts[i] <= t (the sequence holding token t).
__device__ int find_sequence(const int32_t *starts, int n, int32_t t)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (starts[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

// Every token's absolute position from the plan: decodes from decode_token_positions (as
// the attention kernels read them), then the prefill segments.
__global__ void positions_kernel(smla_plan_view v, int32_t *positions)
{
    int32_t total = v.num_decode_tokens + v.num_prefill_tokens;
    for (int32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += gridDim.x * blockDim.x) {
        int decode = t < v.num_decode_tokens;
        if (decode) {
            positions[t] = v.decode_token_positions[t];
            continue;
        }
        const int32_t *starts = decode ? v.decode_query_starts : v.segment_query_starts;
        const int32_t *seq_lens = decode ? v.decode_seq_lens : v.segment_seq_lens;
        int32_t u = decode ? t : t - v.num_decode_tokens;
        int i = find_sequence(starts, decode ? v.num_decodes : v.num_segments, u);
        positions[t] = seq_lens[i] - (starts[i + 1] - starts[i]) + (u - starts[i]);
    }
}

__global__ void add_kernel(int32_t *values, int n, int32_t delta)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        values[i] += delta;
}

__global__ void spin_kernel(long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

static smla_context *ctx;

struct test_batch {
    int32_t num_requests;
    int32_t qsl[72];          // R + 1 entries, then poison padding
    int32_t seq_lens[64];     // host truth
    int32_t *d_seq_lens;      // device copy, changed in place
    smla_batch batch;
};

static void make_batch(test_batch *b, int r, const int32_t *queries, const int32_t *prefixes)
{
    b->num_requests = r;
    b->qsl[0] = 0;
    for (int i = 0; i < r; i++) {
        b->qsl[i + 1] = b->qsl[i] + queries[i];
        b->seq_lens[i] = prefixes[i] + queries[i];
    }
    for (int i = r + 1; i < 72; i++)
        b->qsl[i] = -999; // CUDA-graph padding the planner must not read
    CUDA_CHECK(cudaMalloc(&b->d_seq_lens, 64 * sizeof(int32_t)));
    CUDA_CHECK(cudaMemcpy(b->d_seq_lens, b->seq_lens, r * sizeof(int32_t),
                          cudaMemcpyHostToDevice));
    b->batch = smla_batch{r, b->qsl, b->d_seq_lens, 2, SMLA_DTYPE_FP8_E4M3,
                          SMLA_SEGMENT_CAP_DEFAULT};
}

// Positions computed on the device (already in positions[]) against the truth + delta.
static void check_positions(const char *what, const test_batch *b, const int32_t *d_positions,
                            int32_t delta)
{
    int32_t total = b->qsl[b->num_requests];
    int32_t *got = (int32_t *)malloc((size_t)total * sizeof(int32_t) + 1);
    CUDA_CHECK(cudaMemcpy(got, d_positions, total * sizeof(int32_t), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int r = 0; r < b->num_requests; r++)
        for (int32_t k = b->qsl[r]; k < b->qsl[r + 1]; k++) {
            int32_t want = b->seq_lens[r] + delta - (b->qsl[r + 1] - b->qsl[r]) + (k - b->qsl[r]);
            if (got[k] != want && bad++ < 5)
                fprintf(stderr, "%s: token %d (request %d) at %d, expected %d\n", what, k, r,
                        got[k], want);
        }
    CHECK(bad == 0);
    free(got);
}

static int same_addresses(const smla_plan_view *a, const smla_plan_view *b)
{
    return a->decode_query_starts == b->decode_query_starts &&
           a->decode_seq_lens == b->decode_seq_lens &&
           a->segment_query_starts == b->segment_query_starts &&
           a->segment_seq_lens == b->segment_seq_lens &&
           a->segment_requests == b->segment_requests &&
           a->decode_token_positions == b->decode_token_positions &&
           a->host_decode_query_starts == b->host_decode_query_starts &&
           a->host_segment_query_starts == b->host_segment_query_starts &&
           a->host_segment_requests == b->host_segment_requests;
}

static cudaGraphExec_t capture(cudaStream_t s, const smla_plan *plan, const smla_plan_view *v,
                               int32_t *d_positions, int with_refresh)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (with_refresh)
        CHECK_STATUS(smla_plan_refresh(plan, s), SMLA_OK);
    positions_kernel<<<8, 128, 0, s>>>(*v, d_positions);
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
    return exec;
}

static void replay(cudaGraphExec_t exec, cudaStream_t s)
{
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
}

static smla_plan *device_plan(int32_t max_tokens, int32_t max_requests)
{
    smla_plan_capacity capacity = {max_tokens, max_requests, 0};
    smla_plan *plan = NULL;
    CHECK_STATUS(smla_plan_create(ctx, &capacity, SMLA_MEMORY_DEVICE, &plan), SMLA_OK);
    if (!plan) {
        fprintf(stderr, "%s\nFAIL\n", smla_context_last_error(ctx));
        exit(1);
    }
    return plan;
}

static void test_graphs(cudaStream_t s)
{
    static const int32_t queries[] = {1, 2, 0, 1, 2051, 19, 0, 1024, 3000, 3};
    static const int32_t prefixes[] = {5000, 9000, 7, 0, 3, 0, 11, 99000, 123456, 42};
    test_batch b;
    make_batch(&b, 10, queries, prefixes);
    smla_plan *plan = device_plan(1 << 14, 16);
    int32_t *d_positions;
    CUDA_CHECK(cudaMalloc(&d_positions, (1 << 14) * sizeof(int32_t)));

    CHECK_STATUS(smla_plan_build(plan, &b.batch, s), SMLA_OK);
    smla_plan_view v0, v1;
    CHECK_STATUS(smla_plan_get_view(plan, &v0), SMLA_OK);
    CHECK(v0.memory == SMLA_MEMORY_DEVICE && v0.num_decodes == 4 && v0.num_segments == 9);
    cudaGraphExec_t reader = capture(s, plan, &v0, d_positions, 0);
    replay(reader, s);
    check_positions("graph, first build", &b, d_positions, 0);

    // 1. Change seq_lens in place, rebuild, replay the reader graph.
    add_kernel<<<1, 64, 0, s>>>(b.d_seq_lens, b.num_requests, 17);
    CUDA_CHECK(cudaGetLastError());
    CHECK_STATUS(smla_plan_build(plan, &b.batch, s), SMLA_OK);
    CHECK_STATUS(smla_plan_get_view(plan, &v1), SMLA_OK);
    CHECK(same_addresses(&v0, &v1));
    replay(reader, s);
    check_positions("graph after +17 and rebuild", &b, d_positions, 17);

    // 2. Refresh captured with the reader: no rebuild needed.
    cudaGraphExec_t refreshing = capture(s, plan, &v0, d_positions, 1);
    add_kernel<<<1, 64, 0, s>>>(b.d_seq_lens, b.num_requests, 17);
    CUDA_CHECK(cudaGetLastError());
    replay(reader, s);
    check_positions("reader-only graph after +17 without rebuild", &b, d_positions, 17);
    replay(refreshing, s);
    check_positions("refresh+reader graph after +17", &b, d_positions, 34);
    CHECK_STATUS(smla_plan_get_view(plan, &v1), SMLA_OK);
    CHECK(same_addresses(&v0, &v1));

    CUDA_CHECK(cudaGraphExecDestroy(reader));
    CUDA_CHECK(cudaGraphExecDestroy(refreshing));
    CUDA_CHECK(cudaFree(d_positions));
    CUDA_CHECK(cudaFree(b.d_seq_lens));
    smla_plan_destroy(plan);
}

// 3. Build A's copy waits behind a long kernel; build B must not overwrite the staging
//    before it has run, so the positions read between the builds are A's.
static void test_staging_guard(cudaStream_t s)
{
    static const int32_t qa[] = {1, 1, 5000, 700}, pa[] = {10, 20, 30, 40};
    static const int32_t qb[] = {1, 3000, 3, 9}, pb[] = {1000, 2000, 3000, 4000};
    test_batch a, b;
    make_batch(&a, 4, qa, pa);
    make_batch(&b, 4, qb, pb);
    smla_plan *plan = device_plan(1 << 14, 16);
    int32_t *d_pos_a, *d_pos_b;
    CUDA_CHECK(cudaMalloc(&d_pos_a, (1 << 14) * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&d_pos_b, (1 << 14) * sizeof(int32_t)));
    smla_plan_view v;
    spin_kernel<<<1, 1, 0, s>>>(100LL * 1000 * 1000); // ~50 ms
    CUDA_CHECK(cudaGetLastError());
    CHECK_STATUS(smla_plan_build(plan, &a.batch, s), SMLA_OK);
    CHECK_STATUS(smla_plan_get_view(plan, &v), SMLA_OK);
    positions_kernel<<<8, 128, 0, s>>>(v, d_pos_a);
    CHECK_STATUS(smla_plan_build(plan, &b.batch, s), SMLA_OK);
    CHECK_STATUS(smla_plan_get_view(plan, &v), SMLA_OK);
    positions_kernel<<<8, 128, 0, s>>>(v, d_pos_b);
    CUDA_CHECK(cudaStreamSynchronize(s));
    check_positions("batch A read before build B", &a, d_pos_a, 0);
    check_positions("batch B", &b, d_pos_b, 0);
    CUDA_CHECK(cudaFree(d_pos_a));
    CUDA_CHECK(cudaFree(d_pos_b));
    CUDA_CHECK(cudaFree(a.d_seq_lens));
    CUDA_CHECK(cudaFree(b.d_seq_lens));
    smla_plan_destroy(plan);
}

static void compare_device_array(const char *name, const int32_t *d, const int32_t *h, int n,
                                 int32_t *scratch)
{
    CUDA_CHECK(cudaMemcpy(scratch, d, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    if (memcmp(scratch, h, (size_t)n * sizeof(int32_t))) {
        fprintf(stderr, "device %s differs from the host plan's\n", name);
        smla_test_failures++;
    }
}

// 4. Random batches: device arrays == host plan arrays (grid-stride paths included).
static void test_random_against_host(cudaStream_t s, uint64_t seed)
{
    enum { R = 64, TOKENS = 1 << 17, BATCHES = 300 };
    smla_rng rng;
    smla_rng_seed(&rng, seed);
    smla_plan *dev = device_plan(TOKENS, R), *host = NULL;
    smla_plan_capacity capacity = {TOKENS, R, 0};
    CHECK_STATUS(smla_plan_create(ctx, &capacity, SMLA_MEMORY_HOST, &host), SMLA_OK);
    int32_t qsl[R + 1], seq_lens[R], *d_seq_lens, *scratch = (int32_t *)malloc(TOKENS * 4 + 4);
    CUDA_CHECK(cudaMalloc(&d_seq_lens, R * sizeof(int32_t)));
    for (int it = 0; it < BATCHES && !smla_test_failures; it++) {
        int r = (int)smla_rng_range(&rng, 0, R), decodes = (int)smla_rng_range(&rng, 0, r);
        qsl[0] = 0;
        for (int i = 0; i < r; i++) {
            int32_t q = i < decodes ? (int32_t)smla_rng_range(&rng, 0, 2)
                                    : (int32_t)smla_rng_range(&rng, 3, TOKENS / R);
            qsl[i + 1] = qsl[i] + q;
            seq_lens[i] = q + (int32_t)smla_rng_range(&rng, 0, 100000);
        }
        static const int32_t caps[] = {-1, 0, 1, 5, 1024};
        smla_batch batch = {r, qsl, seq_lens, 2,
                            smla_rng_uniform(&rng) < 0.5 ? SMLA_DTYPE_BF16 : SMLA_DTYPE_FP8_E4M3,
                            caps[smla_rng_range(&rng, 0, 4)]};
        CHECK_STATUS(smla_plan_build(host, &batch, NULL), SMLA_OK);
        CUDA_CHECK(cudaMemcpyAsync(d_seq_lens, seq_lens, sizeof seq_lens, cudaMemcpyHostToDevice, s));
        batch.seq_lens = d_seq_lens;
        CHECK_STATUS(smla_plan_build(dev, &batch, s), SMLA_OK);
        CUDA_CHECK(cudaStreamSynchronize(s));
        smla_plan_view hv, dv;
        smla_plan_get_view(host, &hv);
        smla_plan_get_view(dev, &dv);
        CHECK(hv.num_segments == dv.num_segments && hv.num_decodes == dv.num_decodes &&
              hv.max_segment_len == dv.max_segment_len);
        compare_device_array("decode_query_starts", dv.decode_query_starts,
                             hv.decode_query_starts, hv.num_decodes + 1, scratch);
        compare_device_array("decode_seq_lens", dv.decode_seq_lens, hv.decode_seq_lens,
                             hv.num_decodes, scratch);
        compare_device_array("segment_query_starts", dv.segment_query_starts,
                             hv.segment_query_starts, hv.num_segments + 1, scratch);
        compare_device_array("segment_seq_lens", dv.segment_seq_lens, hv.segment_seq_lens,
                             hv.num_segments, scratch);
        compare_device_array("segment_requests", dv.segment_requests, hv.segment_requests,
                             hv.num_segments, scratch);
        // Decode positions (device plans only): each decode token's, then, whatever earlier
        // batches had, SMLA_PLAN_NOT_DECODE.
        CUDA_CHECK(cudaMemcpy(scratch, dv.decode_token_positions, TOKENS * sizeof(int32_t),
                              cudaMemcpyDeviceToHost));
        int positions_ok = 1;
        for (int t = 0, req = 0; t < TOKENS; t++) {
            while (t < hv.num_decode_tokens && t >= qsl[req + 1])
                req++;
            const int32_t want = t < hv.num_decode_tokens
                                     ? seq_lens[req] - (qsl[req + 1] - qsl[req]) + (t - qsl[req])
                                     : SMLA_PLAN_NOT_DECODE;
            positions_ok &= scratch[t] == want;
        }
        CHECK(positions_ok);
        if (smla_test_failures)
            fprintf(stderr, "random batch %d: R=%d cap=%d dtype=%d\n", it, r,
                    batch.segment_cap, (int)batch.query_dtype);
    }
    free(scratch);
    CUDA_CHECK(cudaFree(d_seq_lens));
    smla_plan_destroy(dev);
    smla_plan_destroy(host);
}

// 5. Memory-space check and the empty batch.
static void test_device_batch_checks(cudaStream_t s)
{
    smla_plan *plan = device_plan(64, 4);
    int32_t qsl[3] = {0, 1, 9}, host_seq_lens[2] = {5, 8};
    smla_batch batch = {2, qsl, host_seq_lens, 0, SMLA_DTYPE_FP8_E4M3, -1};
    CHECK_STATUS(smla_plan_build(plan, &batch, s), SMLA_ERR_MEMORY_SPACE);
    batch.num_requests = 0;
    batch.seq_lens = NULL;
    CHECK_STATUS(smla_plan_build(plan, &batch, s), SMLA_OK);
    smla_plan_view v;
    CHECK_STATUS(smla_plan_get_view(plan, &v), SMLA_OK);
    int32_t starts[2] = {-1, -1};
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(&starts[0], v.decode_query_starts, 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&starts[1], v.segment_query_starts, 4, cudaMemcpyDeviceToHost));
    CHECK(v.num_segments == 0 && v.num_decodes == 0 && starts[0] == 0 && starts[1] == 0);
    // A seq_len shorter than its decode's query: the positions before 0 read as -1.
    int32_t *d_seq_lens, short_lens[2] = {1, 2}, positions[64];
    CUDA_CHECK(cudaMalloc(&d_seq_lens, sizeof short_lens));
    CUDA_CHECK(cudaMemcpy(d_seq_lens, short_lens, sizeof short_lens, cudaMemcpyHostToDevice));
    int32_t qsl_short[3] = {0, 3, 7};
    batch = smla_batch{2, qsl_short, d_seq_lens, 4, SMLA_DTYPE_FP8_E4M3, -1};
    CHECK_STATUS(smla_plan_build(plan, &batch, s), SMLA_OK);
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(positions, v.decode_token_positions, sizeof positions, cudaMemcpyDeviceToHost));
    static const int32_t want[8] = {-1, -1, 0, -1, -1, 0, 1, SMLA_PLAN_NOT_DECODE};
    CHECK(memcmp(positions, want, sizeof want) == 0);
    int rest = 1;
    for (int t = 8; t < 64; t++)
        rest &= positions[t] == SMLA_PLAN_NOT_DECODE;
    CHECK(rest);
    CUDA_CHECK(cudaFree(d_seq_lens));
    smla_plan_destroy(plan);
}

int main(void)
{
    uint64_t seed = smla_test_seed("gpu_test_plan_graph");
    CHECK_STATUS(smla_context_create(&ctx), SMLA_OK);
    if (!smla_context_has_cuda(ctx)) {
        fprintf(stderr, "no usable GPU\nFAIL\n");
        return 1;
    }
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    test_graphs(s);
    test_staging_guard(s);
    test_random_against_host(s, seed);
    test_device_batch_checks(s);
    CUDA_CHECK(cudaStreamDestroy(s));
    smla_context_destroy(ctx);
    int rc = smla_test_finish("gpu_test_plan_graph");
    printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}
