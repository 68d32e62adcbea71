/* Status codes and the context's error message. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

const char *smla_status_string(smla_status status)
{
    switch (status) {
    case SMLA_OK: return "success";
    case SMLA_ERR_NULL_POINTER: return "a required pointer is NULL";
    case SMLA_ERR_DTYPE: return "unsupported dtype";
    case SMLA_ERR_SHAPE: return "wrong or inconsistent shape";
    case SMLA_ERR_STRIDE: return "unsupported stride";
    case SMLA_ERR_ALIGNMENT: return "misaligned pointer or stride";
    case SMLA_ERR_HEADS: return "unsupported head count (need 8, 16, 32, 64 or 128)";
    case SMLA_ERR_KV_FORMAT: return "invalid KV format, block size or block stride";
    case SMLA_ERR_MEMORY_SPACE: return "host and device memory mixed or wrong for the backend";
    case SMLA_ERR_VALUE: return "value out of range";
    case SMLA_ERR_BACKEND: return "backend not available";
    case SMLA_ERR_CAPACITY: return "batch exceeds the plan's capacity";
    case SMLA_ERR_BATCH_ORDER: return "decode request after a prefill request";
    case SMLA_ERR_OUT_OF_MEMORY: return "out of memory";
    case SMLA_ERR_CUDA: return "CUDA error";
    case SMLA_ERR_IO: return "I/O error";
    case SMLA_ERR_FILE_FORMAT: return "malformed file";
    case SMLA_STATUS_COUNT: break;
    }
    return "unknown status";
}

smla_status smla_fail(smla_context *ctx, smla_status status, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->last_error, sizeof ctx->last_error, fmt, ap);
        va_end(ap);
    }
    return status;
}

smla_status smla_succeed(smla_context *ctx)
{
    if (ctx)
        ctx->last_error[0] = '\0';
    return SMLA_OK;
}
