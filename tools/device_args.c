/* Device copies of an attention problem (device_args.h). */
#include "device_args.h"

#ifdef SMLA_WITH_CUDA

#include <string.h>

#include <cuda_runtime.h>

#include "args_tensors.h"

/* Bytes a tensor's view spans: from its data pointer to one past its last element, with
 * its strides (all-zero strides: contiguous). 0 when absent or empty, -1 on overflow. */
static int64_t tensor_bytes(const smla_tensor *t)
{
    if (!t->data)
        return 0;
    int contiguous = 1;
    for (int i = 0; i < t->ndim && i < SMLA_MAX_DIMS; i++)
        contiguous &= t->stride[i] == 0;
    int64_t last = 0, stride = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (i >= SMLA_MAX_DIMS || t->shape[i] <= 0)
            return 0;
        const int64_t s = contiguous ? stride : t->stride[i];
        if (s < 0 || (s > 0 && t->shape[i] - 1 > (INT64_MAX - last) / s))
            return -1;
        last += (t->shape[i] - 1) * s;
        if (contiguous && stride > INT64_MAX / t->shape[i])
            return -1;
        stride *= t->shape[i];
    }
    const int64_t size = (int64_t)smla_dtype_size(t->dtype);
    return last + 1 > INT64_MAX / size ? -1 : (last + 1) * size;
}

/* Copies bytes at host to a new device buffer *device (left as is when host is NULL). */
static smla_status upload(smla_device_args *d, const char *name, const void *host,
                          int64_t bytes, void **device, smla_tool_error *error)
{
    if (!host)
        return SMLA_OK;
    if (bytes < 0 || d->num_buffers == SMLA_DEVICE_ARGS_BUFFERS)
        return smla_tool_fail(error, SMLA_ERR_SHAPE, "%s: too large to copy to the device",
                              name);
    void *buffer = NULL;
    cudaError_t err = cudaMalloc(&buffer, bytes ? (size_t)bytes : 1);
    if (err == cudaSuccess) {
        d->buffers[d->num_buffers++] = buffer;
        err = cudaMemcpy(buffer, host, (size_t)bytes, cudaMemcpyHostToDevice);
    }
    if (err != cudaSuccess)
        return smla_tool_fail(error, SMLA_ERR_CUDA, "%s: copying %lld bytes to the device: %s",
                              name, (long long)bytes, cudaGetErrorString(err));
    *device = buffer;
    return SMLA_OK;
}

static smla_status upload_tensor(smla_device_args *d, const char *name, smla_tensor *t,
                                 smla_tool_error *error)
{
    t->memory = SMLA_MEMORY_DEVICE;
    return upload(d, name, t->data, tensor_bytes(t), &t->data, error);
}

static smla_status upload_pool(smla_device_args *d, const char *name, smla_kv_pool *pool,
                               smla_tool_error *error)
{
    pool->memory = SMLA_MEMORY_DEVICE;
    const int64_t bytes = pool->num_blocks > 0 && pool->block_stride > 0 &&
                                  pool->num_blocks > INT64_MAX / pool->block_stride
                              ? -1
                              : pool->num_blocks * pool->block_stride;
    return upload(d, name, pool->data, bytes, &pool->data, error);
}

smla_status smla_device_args_upload(const smla_attention_args *host, smla_device_args *device,
                                    smla_tool_error *error)
{
    memset(device, 0, sizeof *device);
    device->args = *host;
    smla_attention_args *a = &device->args;
    if (a->plan)
        return smla_tool_fail(error, SMLA_ERR_VALUE, "plan: a host plan cannot be copied");
    smla_named_tensor fields[SMLA_ARGS_INPUT_TENSORS + 2];
    smla_args_input_tensors(a, fields);
    fields[SMLA_ARGS_INPUT_TENSORS] = (smla_named_tensor){"out", &a->out};
    fields[SMLA_ARGS_INPUT_TENSORS + 1] = (smla_named_tensor){"lse", &a->lse};
    smla_status st = upload_pool(device, "swa", &a->swa, error);
    if (st == SMLA_OK)
        st = upload_pool(device, "extra", &a->extra, error);
    for (int i = 0; i < SMLA_ARGS_INPUT_TENSORS + 2 && st == SMLA_OK; i++)
        st = upload_tensor(device, fields[i].name, fields[i].tensor, error);
    if (st != SMLA_OK)
        smla_device_args_free(device);
    return st;
}

static smla_status download(const smla_tensor *device, const smla_tensor *host,
                            const char *name, smla_tool_error *error)
{
    const int64_t bytes = tensor_bytes(host);
    if (!host->data || bytes <= 0)
        return SMLA_OK;
    const cudaError_t err =
        cudaMemcpy(host->data, device->data, (size_t)bytes, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess)
        return smla_tool_fail(error, SMLA_ERR_CUDA, "%s: copying back from the device: %s",
                              name, cudaGetErrorString(err));
    return SMLA_OK;
}

smla_status smla_device_args_download(const smla_device_args *device,
                                      const smla_attention_args *host, smla_tool_error *error)
{
    smla_status st = download(&device->args.out, &host->out, "out", error);
    if (st == SMLA_OK)
        st = download(&device->args.lse, &host->lse, "lse", error);
    return st;
}

void smla_device_args_free(smla_device_args *device)
{
    for (int i = 0; i < device->num_buffers; i++)
        cudaFree(device->buffers[i]);
    memset(device, 0, sizeof *device);
}

#endif
