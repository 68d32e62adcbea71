// The CUDA backend's device scratch (split-KV partials), owned by the context. It grows
// on demand and keeps its size, so a launch captured in a CUDA graph finds it in place
// as long as a same-sized call ran once before the capture.
#include <cuda_runtime.h>

extern "C" {
#include "cuda_workspace.h"
}

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
    void *p = nullptr;
    cudaError_t err = cudaFree(ctx->workspace); // waits for work that may still use it
    ctx->workspace = nullptr;
    ctx->workspace_bytes = 0;
    if (err == cudaSuccess)
        err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return smla_fail(ctx, err == cudaErrorMemoryAllocation ? SMLA_ERR_OUT_OF_MEMORY : SMLA_ERR_CUDA,
                         "split-KV workspace of %zu bytes: %s", bytes, cudaGetErrorString(err));
    }
    ctx->workspace = p;
    ctx->workspace_bytes = bytes;
    *out = p;
    return SMLA_OK;
}

extern "C" void smla_cuda_workspace_free(smla_context *ctx)
{
    if (ctx->workspace)
        cudaFree(ctx->workspace);
    ctx->workspace = nullptr;
    ctx->workspace_bytes = 0;
}
