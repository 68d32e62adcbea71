/* A workload on the GPU, for smla demo and smla bench: device copies of its tensors
 * (several, to rotate among when one copy would sit in L2), positioned by a device plan
 * when the workload has requests. Built only with CUDA. */
#ifndef SMLA_TOOLS_WORKLOAD_DEVICE_H
#define SMLA_TOOLS_WORKLOAD_DEVICE_H

#ifdef SMLA_WITH_CUDA

#include "device_args.h"
#include "workload.h"

#define SMLA_MAX_DEVICE_COPIES 64

typedef struct smla_device_workload {
    smla_device_args copies[SMLA_MAX_DEVICE_COPIES];
    smla_attention_args runs[SMLA_MAX_DEVICE_COPIES]; /* each copy's call (backend CUDA) */
    int num_copies;
    smla_plan *plan; /* NULL for a workload without positions */
} smla_device_workload;

/* Uploads num_copies copies of w and, when w has requests, builds one device plan from
 * the first copy's seq_lens (decode_threshold and segment_cap as in smla_batch) that every
 * copy's call uses; the plan's device work is finished when this returns. */
smla_status smla_device_workload_make(smla_context *ctx, const smla_workload *w,
                                      int num_copies, int32_t decode_threshold,
                                      int32_t segment_cap, smla_device_workload *d,
                                      smla_tool_error *error);
/* Runs copy's call (asynchronous on the default stream). */
smla_status smla_device_workload_run(smla_context *ctx, const smla_device_workload *d,
                                     int copy, smla_tool_error *error);
void smla_device_workload_free(smla_device_workload *d);

/* The current GPU's name into buf (bytes >= 1). */
void smla_device_name(char *buf, size_t bytes);

#endif
#endif
