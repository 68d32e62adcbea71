/* The CUDA backend's device workspace on the context (src/cuda/workspace.cu). */
#ifndef SMLA_CUDA_WORKSPACE_H
#define SMLA_CUDA_WORKSPACE_H

#include "internal.h"

#ifdef SMLA_WITH_CUDA
/* Points *out at >= bytes of device memory owned by ctx, growing it when needed (not
 * while stream is being captured into a CUDA graph: SMLA_ERR_CAPACITY then). */
smla_status smla_cuda_workspace(smla_context *ctx, size_t bytes, void *stream, void **out);
void smla_cuda_workspace_free(smla_context *ctx);
#endif

#endif
