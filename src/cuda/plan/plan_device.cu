// Device plans: the persistent device buffers, the pinned staging and the refresh
// kernel that turns the staged host-computed metadata plus the device seq_lens into the
// plan's device arrays.
//
// Staging (pinned host) and its mirror (device) hold the last build packed, int32:
//   [0] num_decodes D, [1] num_segments n, decode_query_starts[D+1],
//   segment_query_starts[n+1], segment_requests[n], segment_seq_offsets[n]
// so a build is one copy of exactly what changed plus one kernel. The kernel reads D and
// n from the mirror and runs a fixed grid, so a refresh captured in a CUDA graph stays
// right for every later build (it keeps the seq_lens pointer it was captured with).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cuda/plan/plan_device.h"
}

#define STAGING_HEADER 2
#define REFRESH_THREADS 256

struct plan_outputs {
    int32_t *decode_query_starts;  // [max_requests + 1]
    int32_t *decode_seq_lens;      // [max_requests]
    int32_t *segment_query_starts; // [max_segments + 1]
    int32_t *segment_seq_lens;     // [max_segments]
    int32_t *segment_requests;     // [max_segments]
    int32_t *decode_token_positions; // [max_tokens]
};

struct smla_plan_device {
    int device;             // current at create; builds must run with it current
    int grid;               // refresh blocks, fixed for the plan's lifetime
    plan_outputs out;       // inside block
    int32_t *mirror;        // inside block
    void *block;            // the one device allocation
    int32_t *staging;       // pinned host
    cudaEvent_t staged;     // recorded after the staging copy of the last build
    int staging_pending;    // staged has been recorded since the last wait on it
};

static smla_status cuda_fail(smla_context *ctx, cudaError_t err, const char *what)
{
    cudaGetLastError(); // clear a non-sticky error so later calls are not blamed
    smla_status st = err == cudaErrorMemoryAllocation ? SMLA_ERR_OUT_OF_MEMORY : SMLA_ERR_CUDA;
    return smla_fail(ctx, st, "%s: %s (%s)", what, cudaGetErrorName(err),
                     cudaGetErrorString(err));
}

// A sequence length stays defined however bad the device seq_lens value is.
__device__ __forceinline__ int32_t segment_seq_len(int32_t seq_len, int32_t offset)
{
    long long v = (long long)seq_len + offset; // offset <= 0
    return v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

// The position of token `index` (0-based) of a decode request of query_len tokens whose
// seq_len comes from device memory unchecked: any position below -1 is -1, which has no
// SWA column either.
__device__ __forceinline__ int32_t decode_position(int32_t seq_len, int32_t query_len, int32_t index)
{
    const int64_t pos = (int64_t)seq_len - query_len + index;
    return pos < -1 ? -1 : (int32_t)pos;
}

__global__ void refresh_kernel(const int32_t *__restrict__ staged, plan_outputs out,
                               const int32_t *__restrict__ seq_lens, int32_t max_tokens)
{
    const int64_t d = staged[0], n = staged[1];
    const int32_t *decode_starts = staged + STAGING_HEADER;
    const int32_t *segment_starts = decode_starts + d + 1;
    const int32_t *requests = segment_starts + n + 1;
    const int32_t *offsets = requests + n;
    const int64_t decode_tokens = decode_starts[d];
    int64_t items = (d > n ? d : n) + 1;
    if (items < max_tokens)
        items = max_tokens;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < items; i += stride) {
        // Every token below the capacity is written: the decode tokens by their request's
        // thread, the others here, so none keeps a previous build's position.
        if (i >= decode_tokens && i < max_tokens)
            out.decode_token_positions[i] = SMLA_PLAN_NOT_DECODE;
        if (i <= d) {
            out.decode_query_starts[i] = decode_starts[i];
            if (i < d) {
                const int32_t seq_len = seq_lens[i], start = decode_starts[i], end = decode_starts[i + 1];
                out.decode_seq_lens[i] = seq_len;
                for (int32_t t = start; t < end; t++)
                    out.decode_token_positions[t] = decode_position(seq_len, end - start, t - start);
            }
        }
        if (i <= n) {
            out.segment_query_starts[i] = segment_starts[i];
            if (i < n) {
                int32_t r = requests[i];
                out.segment_requests[i] = r;
                out.segment_seq_lens[i] = segment_seq_len(seq_lens[r], offsets[i]);
            }
        }
    }
}

static size_t staging_count(const smla_plan_capacity *c)
{
    return STAGING_HEADER + ((size_t)c->max_requests + 1) + ((size_t)c->max_segments + 1) +
           2 * (size_t)c->max_segments;
}

static size_t outputs_count(const smla_plan_capacity *c)
{
    return ((size_t)c->max_requests + 1) + (size_t)c->max_requests +
           ((size_t)c->max_segments + 1) + 2 * (size_t)c->max_segments + (size_t)c->max_tokens;
}

static void carve_outputs(smla_plan_device *dev, const smla_plan_capacity *c)
{
    int32_t *p = (int32_t *)dev->block;
    dev->out.decode_query_starts = p;
    p += (size_t)c->max_requests + 1;
    dev->out.decode_seq_lens = p;
    p += c->max_requests;
    dev->out.segment_query_starts = p;
    p += (size_t)c->max_segments + 1;
    dev->out.segment_seq_lens = p;
    p += c->max_segments;
    dev->out.segment_requests = p;
    p += c->max_segments;
    dev->out.decode_token_positions = p;
    p += c->max_tokens;
    dev->mirror = p;
}

static int refresh_grid(const smla_plan_capacity *c, int sm_count)
{
    int64_t items = (c->max_requests > c->max_segments ? c->max_requests : c->max_segments) + 1;
    if (items < c->max_tokens)
        items = c->max_tokens;
    int64_t blocks = (items + REFRESH_THREADS - 1) / REFRESH_THREADS;
    int64_t limit = sm_count > 0 ? 2 * (int64_t)sm_count : 1;
    return (int)(blocks < limit ? blocks : limit);
}

extern "C" smla_status smla_plan_device_create(smla_plan *plan)
{
    smla_context *ctx = plan->ctx;
    const smla_plan_capacity *c = &plan->capacity;
    smla_plan_device *dev = (smla_plan_device *)calloc(1, sizeof *dev);
    if (!dev)
        return smla_fail(ctx, SMLA_ERR_OUT_OF_MEMORY, "cannot allocate the device plan");
    plan->device = dev;
    cudaError_t err = cudaGetDevice(&dev->device);
    if (err != cudaSuccess)
        return cuda_fail(ctx, err, "cudaGetDevice");
    dev->grid = refresh_grid(c, ctx->sm_count);
    size_t block_bytes = (outputs_count(c) + staging_count(c)) * sizeof(int32_t);
    err = cudaMalloc(&dev->block, block_bytes);
    if (err != cudaSuccess)
        return cuda_fail(ctx, err, "cudaMalloc of the device plan buffers");
    carve_outputs(dev, c);
    // A view read before the first build shows an empty batch: the zeroed staging is one
    // (no decodes, no segments), refreshed once (no seq_lens read). The sync orders this
    // before builds on any stream.
    err = cudaMemset(dev->block, 0, block_bytes);
    if (err == cudaSuccess) {
        refresh_kernel<<<dev->grid, REFRESH_THREADS, 0, cudaStreamLegacy>>>(dev->mirror, dev->out, NULL,
                                                                           c->max_tokens);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(cudaStreamLegacy);
    if (err != cudaSuccess)
        return cuda_fail(ctx, err, "clearing the device plan buffers");
    err = cudaHostAlloc((void **)&dev->staging, staging_count(c) * sizeof(int32_t),
                        cudaHostAllocDefault);
    if (err != cudaSuccess) {
        dev->staging = NULL;
        return cuda_fail(ctx, err, "cudaHostAlloc of the plan's pinned staging");
    }
    err = cudaEventCreateWithFlags(&dev->staged, cudaEventDisableTiming);
    if (err != cudaSuccess) {
        dev->staged = NULL;
        return cuda_fail(ctx, err, "cudaEventCreate");
    }
    smla_plan_view *v = &plan->view;
    v->counts = dev->mirror; // the staged header: [0] num_decodes, [1] num_segments
    v->decode_query_starts = dev->out.decode_query_starts;
    v->decode_seq_lens = dev->out.decode_seq_lens;
    v->segment_query_starts = dev->out.segment_query_starts;
    v->segment_seq_lens = dev->out.segment_seq_lens;
    v->segment_requests = dev->out.segment_requests;
    v->decode_token_positions = dev->out.decode_token_positions;
    return SMLA_OK;
}

extern "C" void smla_plan_device_destroy(smla_plan_device *dev)
{
    if (!dev)
        return;
    if (dev->staged) {
        if (dev->staging_pending)
            cudaEventSynchronize(dev->staged); // the copy still reads the staging
        cudaEventDestroy(dev->staged);
    }
    if (dev->staging)
        cudaFreeHost(dev->staging);
    if (dev->block)
        cudaFree(dev->block);
    free(dev);
}

extern "C" smla_status smla_plan_device_check_batch(const smla_plan *plan,
                                                    const int32_t *seq_lens)
{
    smla_context *ctx = plan->ctx;
    int current = -1;
    cudaError_t err = cudaGetDevice(&current);
    if (err != cudaSuccess)
        return cuda_fail(ctx, err, "cudaGetDevice");
    if (current != plan->device->device)
        return smla_fail(ctx, SMLA_ERR_BACKEND,
                         "the plan was created on CUDA device %d but device %d is current",
                         plan->device->device, current);
    cudaPointerAttributes attr;
    err = cudaPointerGetAttributes(&attr, seq_lens);
    if (err != cudaSuccess)
        return cuda_fail(ctx, err, "cudaPointerGetAttributes of batch seq_lens");
    int readable = attr.type == cudaMemoryTypeManaged ||
                   (attr.type == cudaMemoryTypeDevice && attr.device == current) ||
                   (attr.type == cudaMemoryTypeHost && attr.devicePointer == seq_lens);
    if (!readable)
        return smla_fail(ctx, SMLA_ERR_MEMORY_SPACE,
                         "batch seq_lens must be device memory of device %d for a device "
                         "plan (it is %s)", current,
                         attr.type == cudaMemoryTypeDevice ? "on another device"
                                                           : "host memory");
    return SMLA_OK;
}

static size_t pack_staging(int32_t *s, const smla_plan *plan)
{
    const smla_plan_view *v = &plan->view;
    const smla_plan_host_arrays *h = &plan->host;
    size_t d = (size_t)v->num_decodes, n = (size_t)v->num_segments;
    s[0] = v->num_decodes;
    s[1] = v->num_segments;
    int32_t *p = s + STAGING_HEADER;
    memcpy(p, h->decode_query_starts, (d + 1) * sizeof *p);
    p += d + 1;
    memcpy(p, h->segment_query_starts, (n + 1) * sizeof *p);
    p += n + 1;
    memcpy(p, h->segment_requests, n * sizeof *p);
    p += n;
    memcpy(p, h->segment_seq_offsets, n * sizeof *p);
    p += n;
    return (size_t)(p - s);
}

extern "C" smla_status smla_plan_device_upload(smla_plan *plan, void *stream)
{
    smla_context *ctx = plan->ctx;
    smla_plan_device *dev = plan->device;
    cudaStream_t s = (cudaStream_t)stream;
    cudaError_t err;
    if (dev->staging_pending) {
        // Normally long complete: the previous build's copy may still read the staging.
        err = cudaEventSynchronize(dev->staged);
        if (err != cudaSuccess)
            return cuda_fail(ctx, err, "waiting for the previous plan upload");
        dev->staging_pending = 0;
    }
    size_t count = pack_staging(dev->staging, plan);
    err = cudaMemcpyAsync(dev->mirror, dev->staging, count * sizeof(int32_t),
                          cudaMemcpyHostToDevice, s);
    if (err != cudaSuccess)
        return cuda_fail(ctx, err, "cudaMemcpyAsync of the plan staging");
    err = cudaEventRecord(dev->staged, s);
    if (err != cudaSuccess)
        return cuda_fail(ctx, err, "cudaEventRecord after the plan staging copy");
    dev->staging_pending = 1;
    return smla_plan_device_refresh(plan, stream);
}

extern "C" smla_status smla_plan_device_refresh(const smla_plan *plan, void *stream)
{
    const smla_plan_device *dev = plan->device;
    refresh_kernel<<<dev->grid, REFRESH_THREADS, 0, (cudaStream_t)stream>>>(
        dev->mirror, dev->out, plan->seq_lens, plan->capacity.max_tokens);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return cuda_fail(plan->ctx, err, "launching the plan refresh kernel");
    return SMLA_OK;
}
