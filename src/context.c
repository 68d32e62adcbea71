/* The context: last error, CPU thread count, the CUDA device seen at creation. */
#include <stdlib.h>
#include <unistd.h>

#include "cuda_device.h"
#include "cuda_workspace.h"
#include "internal.h"

smla_status smla_context_create(smla_context **ctx)
{
    if (!ctx)
        return SMLA_ERR_NULL_POINTER;
    smla_context *c = calloc(1, sizeof *c);
    if (!c)
        return SMLA_ERR_OUT_OF_MEMORY;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->num_threads = n > 0 ? (int)n : 1;
#ifdef SMLA_WITH_CUDA
    c->has_cuda = smla_cuda_probe(&c->cuda_device, &c->sm_count);
#endif
    *ctx = c;
    return SMLA_OK;
}

void smla_context_destroy(smla_context *ctx)
{
    if (!ctx)
        return;
#ifdef SMLA_WITH_CUDA
    smla_cuda_workspace_free(ctx);
#endif
    free(ctx);
}

const char *smla_context_last_error(const smla_context *ctx)
{
    return ctx ? ctx->last_error : "no context";
}

smla_status smla_context_set_num_threads(smla_context *ctx, int num_threads)
{
    if (!ctx)
        return SMLA_ERR_NULL_POINTER;
    if (num_threads < 1 || num_threads > 1024)
        return smla_fail(ctx, SMLA_ERR_VALUE, "num_threads must be in [1, 1024], got %d",
                         num_threads);
    ctx->num_threads = num_threads;
    return smla_succeed(ctx);
}

int smla_context_has_cuda(const smla_context *ctx)
{
    return ctx && ctx->has_cuda;
}
