/* Device copies of an attention problem's host tensors, for running it on the CUDA
 * backend from host data (smla attend --backend cuda). Built only with CUDA. */
#ifndef SMLA_TOOLS_DEVICE_ARGS_H
#define SMLA_TOOLS_DEVICE_ARGS_H

#ifdef SMLA_WITH_CUDA

#include "smla.h"
#include "tool_error.h"

#define SMLA_DEVICE_ARGS_BUFFERS 12

typedef struct smla_device_args {
    smla_attention_args args; /* the host args with every tensor and pool on the device */
    void *buffers[SMLA_DEVICE_ARGS_BUFFERS];
    int num_buffers;
} smla_device_args;

/* Copies every present tensor and pool of host (strided views keep their strides; no plan) to the
 * current device, outputs included (so untouched rows keep their initial values). */
smla_status smla_device_args_upload(const smla_attention_args *host, smla_device_args *device,
                                    smla_tool_error *error);
/* Copies out and lse back into host's buffers (synchronous). */
smla_status smla_device_args_download(const smla_device_args *device,
                                      const smla_attention_args *host, smla_tool_error *error);
void smla_device_args_free(smla_device_args *device);

#endif
#endif
