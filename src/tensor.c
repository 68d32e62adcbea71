/* Tensor descriptor helpers. */
#include <string.h>

#include "internal.h"

size_t smla_dtype_size(smla_dtype dtype)
{
    switch (dtype) {
    case SMLA_DTYPE_BF16: return 2;
    case SMLA_DTYPE_FP8_E4M3: return 1;
    case SMLA_DTYPE_F32: return 4;
    case SMLA_DTYPE_I32: return 4;
    case SMLA_DTYPE_U8: return 1;
    case SMLA_DTYPE_INVALID: break;
    }
    return 0;
}

static smla_tensor tensor_nd(void *data, smla_dtype dtype, int ndim, const int64_t *shape,
                             smla_memory memory)
{
    smla_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim;
    t.memory = memory;
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t.shape[i] = shape[i];
        t.stride[i] = stride;
        stride *= shape[i];
    }
    return t;
}

smla_tensor smla_tensor_1d(void *data, smla_dtype dtype, int64_t n0, smla_memory memory)
{
    const int64_t shape[1] = {n0};
    return tensor_nd(data, dtype, 1, shape, memory);
}

smla_tensor smla_tensor_2d(void *data, smla_dtype dtype, int64_t n0, int64_t n1,
                           smla_memory memory)
{
    const int64_t shape[2] = {n0, n1};
    return tensor_nd(data, dtype, 2, shape, memory);
}

smla_tensor smla_tensor_3d(void *data, smla_dtype dtype, int64_t n0, int64_t n1, int64_t n2,
                           smla_memory memory)
{
    const int64_t shape[3] = {n0, n1, n2};
    return tensor_nd(data, dtype, 3, shape, memory);
}
