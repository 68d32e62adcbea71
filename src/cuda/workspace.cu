// The CUDA backend's device scratch (split-KV partials), owned by the context. It grows
// on demand; a buffer it outgrows is kept (not freed) until the context is destroyed,
// because a CUDA graph captured earlier may still point at it. A call that needs more
// than the context has while its stream is being captured fails with a message: run the
// same call once before capturing it.
#include <cuda_runtime.h>

#include <cstdlib>

extern "C" {
#include "cuda_workspace.h"
}

namespace {

struct Retired { // buffers outgrown but possibly still referenced by captured graphs
    void *buffer;
    Retired *next;
};

} // namespace

extern "C" smla_status smla_cuda_workspace(smla_context *ctx, size_t bytes, void *stream, void **out)
{
    if (bytes <= ctx->workspace_bytes) {
        *out = ctx->workspace;
        return SMLA_OK;
    }
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capturing);
    if (capturing != cudaStreamCaptureStatusNone)
        return smla_fail(ctx, SMLA_ERR_CAPACITY,
                         "split-KV needs %zu bytes of device workspace but the context has %zu and the stream "
                         "is being captured: run the same call once before capturing it",
                         bytes, ctx->workspace_bytes);
    Retired *retired = nullptr;
    if (ctx->workspace) {
        retired = static_cast<Retired *>(malloc(sizeof(Retired)));
        if (!retired)
            return smla_fail(ctx, SMLA_ERR_OUT_OF_MEMORY, "cannot record the outgrown workspace");
    }
    // Grow geometrically so that a sequence of growing calls allocates O(log) buffers.
    const size_t size = bytes > 2 * ctx->workspace_bytes ? bytes : 2 * ctx->workspace_bytes;
    void *p = nullptr;
    const cudaError_t err = cudaMalloc(&p, size);
    if (err != cudaSuccess) {
        cudaGetLastError();
        free(retired);
        return smla_fail(ctx, err == cudaErrorMemoryAllocation ? SMLA_ERR_OUT_OF_MEMORY : SMLA_ERR_CUDA,
                         "split-KV workspace of %zu bytes: %s", size, cudaGetErrorString(err));
    }
    if (retired) {
        retired->buffer = ctx->workspace;
        retired->next = static_cast<Retired *>(ctx->workspace_retired);
        ctx->workspace_retired = retired;
    }
    ctx->workspace = p;
    ctx->workspace_bytes = size;
    *out = p;
    return SMLA_OK;
}

extern "C" void smla_cuda_workspace_free(smla_context *ctx)
{
    if (ctx->workspace)
        cudaFree(ctx->workspace);
    for (Retired *r = static_cast<Retired *>(ctx->workspace_retired); r;) {
        Retired *next = r->next;
        cudaFree(r->buffer);
        free(r);
        r = next;
    }
    ctx->workspace = nullptr;
    ctx->workspace_retired = nullptr;
    ctx->workspace_bytes = 0;
}
