/* Internal declarations shared by the host sources and the backends. */
#ifndef SMLA_INTERNAL_H
#define SMLA_INTERNAL_H

#include "smla.h"

#define SMLA_ERROR_MESSAGE_BYTES 512

struct smla_context {
    char last_error[SMLA_ERROR_MESSAGE_BYTES];
    int num_threads;
    int has_cuda;         /* built with CUDA and a device is usable */
    int cuda_device;      /* device current at creation */
    int sm_count;         /* multiprocessors of that device */
    void *workspace;      /* device scratch of the CUDA backend (split-KV partials) */
    size_t workspace_bytes;
    void *workspace_retired; /* outgrown buffers, freed with the context (cuda/workspace.cu) */
};

/* Records a formatted message on ctx (when not NULL) and returns status. */
smla_status smla_fail(smla_context *ctx, smla_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Clears the last error and returns SMLA_OK. */
smla_status smla_succeed(smla_context *ctx);

#endif
