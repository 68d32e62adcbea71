/* A workload on the GPU (workload_device.h). */
#include "workload_device.h"

#ifdef SMLA_WITH_CUDA

#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "workload_plan.h"

smla_status smla_device_workload_make(smla_context *ctx, const smla_workload *w,
                                      int num_copies, int32_t decode_threshold,
                                      int32_t segment_cap, smla_device_workload *d,
                                      smla_tool_error *error)
{
    memset(d, 0, sizeof *d);
    if (num_copies < 1 || num_copies > SMLA_MAX_DEVICE_COPIES)
        return smla_tool_fail(error, SMLA_ERR_VALUE, "device workload: %d copies (1..%d)",
                              num_copies, SMLA_MAX_DEVICE_COPIES);
    smla_status st = SMLA_OK;
    for (; d->num_copies < num_copies && st == SMLA_OK; d->num_copies++)
        st = smla_device_args_upload(&w->args, &d->copies[d->num_copies], error);
    if (st == SMLA_OK && w->num_requests > 0)
        st = smla_workload_plan(ctx, w, SMLA_MEMORY_DEVICE, d->copies[0].args.seq_lens.data,
                                decode_threshold, segment_cap, NULL, &d->plan, error);
    for (int i = 0; i < d->num_copies && st == SMLA_OK; i++) {
        d->runs[i] = d->plan ? smla_args_with_plan(&d->copies[i].args, d->plan)
                             : d->copies[i].args;
        d->runs[i].backend = SMLA_BACKEND_CUDA;
    }
    if (st == SMLA_OK) {
        const cudaError_t err = cudaDeviceSynchronize();
        if (err != cudaSuccess)
            st = smla_tool_fail(error, SMLA_ERR_CUDA, "device workload: %s",
                                cudaGetErrorString(err));
    }
    if (st != SMLA_OK)
        smla_device_workload_free(d);
    return st;
}

smla_status smla_device_workload_run(smla_context *ctx, const smla_device_workload *d,
                                     int copy, smla_tool_error *error)
{
    const smla_status st = smla_attention(ctx, &d->runs[copy]);
    if (st != SMLA_OK)
        return smla_tool_fail(error, st, "%s: %s", smla_status_string(st),
                              smla_context_last_error(ctx));
    return SMLA_OK;
}

void smla_device_workload_free(smla_device_workload *d)
{
    smla_plan_destroy(d->plan);
    for (int i = 0; i < d->num_copies; i++)
        smla_device_args_free(&d->copies[i]);
    memset(d, 0, sizeof *d);
}

void smla_device_name(char *buf, size_t bytes)
{
    int device = 0;
    struct cudaDeviceProp prop;
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaGetDeviceProperties(&prop, device) == cudaSuccess)
        snprintf(buf, bytes, "%s", prop.name);
    else
        snprintf(buf, bytes, "unknown GPU");
}

#endif
