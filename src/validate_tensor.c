/* Checks of one tensor argument: rank, dtype, sizes, strides, alignment. */
#include <stdio.h>

#include "validate_tensor.h"

static const char *dtype_name(smla_dtype dtype)
{
    switch (dtype) {
    case SMLA_DTYPE_BF16: return "bf16";
    case SMLA_DTYPE_FP8_E4M3: return "fp8_e4m3";
    case SMLA_DTYPE_F32: return "f32";
    case SMLA_DTYPE_I32: return "i32";
    case SMLA_DTYPE_U8: return "u8";
    case SMLA_DTYPE_INVALID: break;
    }
    return "invalid";
}

/* "[4, 128]" */
static const char *format_shape(const smla_checked_tensor *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                                 (long long)t->shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

int smla_tensor_is_empty(const smla_tensor *t, int ndim)
{
    if (t->ndim != ndim)
        return 0;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] == 0)
            return 1;
    return 0;
}

/* The byte offset of the last element plus one element, or -1 when it overflows int64. */
static int64_t byte_extent(const smla_checked_tensor *t)
{
    int64_t last = 0; /* element offset of the last element */
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0)
            return 0;
        const int64_t steps = t->shape[i] - 1;
        if (steps > 0 && t->stride[i] > (INT64_MAX - last) / steps)
            return -1;
        last += steps * t->stride[i];
    }
    const int64_t elem = (int64_t)t->elem_size;
    if (last > INT64_MAX / elem - 1)
        return -1;
    return (last + 1) * elem;
}

smla_status smla_check_tensor(smla_context *ctx, const char *name, const smla_tensor *t,
                              int ndim, smla_dtype dtype, smla_dtype alt_dtype,
                              smla_checked_tensor *out)
{
    if (t->ndim != ndim)
        return smla_fail(ctx, SMLA_ERR_SHAPE, "%s: expected %d dimensions, got %d", name,
                         ndim, t->ndim);
    if (t->dtype != dtype && (alt_dtype == SMLA_DTYPE_INVALID || t->dtype != alt_dtype)) {
        if (alt_dtype == SMLA_DTYPE_INVALID)
            return smla_fail(ctx, SMLA_ERR_DTYPE, "%s: dtype %s, expected %s", name,
                             dtype_name(t->dtype), dtype_name(dtype));
        return smla_fail(ctx, SMLA_ERR_DTYPE, "%s: dtype %s, expected %s or %s", name,
                         dtype_name(t->dtype), dtype_name(dtype), dtype_name(alt_dtype));
    }
    out->name = name;
    out->data = t->data;
    out->ndim = ndim;
    out->elem_size = smla_dtype_size(t->dtype);
    out->memory = t->memory;
    int all_zero = 1;
    for (int i = 0; i < ndim; i++) {
        if (t->shape[i] < 0)
            return smla_fail(ctx, SMLA_ERR_SHAPE, "%s: size %lld of dimension %d is negative",
                             name, (long long)t->shape[i], i);
        if (t->stride[i] < 0)
            return smla_fail(ctx, SMLA_ERR_STRIDE,
                             "%s: stride %lld of dimension %d is negative", name,
                             (long long)t->stride[i], i);
        out->shape[i] = t->shape[i];
        out->stride[i] = t->stride[i];
        all_zero = all_zero && t->stride[i] == 0;
    }
    if (all_zero) { /* the documented shorthand for a contiguous tensor */
        int64_t stride = 1;
        for (int i = ndim - 1; i >= 0; i--) {
            out->stride[i] = stride;
            if (out->shape[i] > 0 && stride > INT64_MAX / out->shape[i])
                return smla_fail(ctx, SMLA_ERR_SHAPE, "%s: too many elements", name);
            stride *= out->shape[i] > 0 ? out->shape[i] : 1;
        }
    }
    if (byte_extent(out) < 0)
        return smla_fail(ctx, SMLA_ERR_SHAPE,
                         "%s: sizes and strides reach past a 64-bit byte offset", name);
    return SMLA_OK;
}

smla_status smla_check_extent(smla_context *ctx, const smla_checked_tensor *t, int dim,
                              int64_t expected, const char *what)
{
    if (t->shape[dim] == expected)
        return SMLA_OK;
    char buf[96];
    return smla_fail(ctx, SMLA_ERR_SHAPE, "%s: shape %s, but %s is %lld", t->name,
                     format_shape(t, buf, sizeof buf), what, (long long)expected);
}

smla_status smla_check_stride_eq(smla_context *ctx, smla_checked_tensor *t, int dim,
                                 int64_t required)
{
    if (t->shape[dim] > 1 && t->stride[dim] != required)
        return smla_fail(ctx, SMLA_ERR_STRIDE, "%s: stride %lld of dimension %d must be %lld",
                         t->name, (long long)t->stride[dim], dim, (long long)required);
    t->stride[dim] = required;
    return SMLA_OK;
}

smla_status smla_check_stride_min(smla_context *ctx, smla_checked_tensor *t, int dim,
                                  int64_t min)
{
    if (t->shape[dim] <= 1)
        t->stride[dim] = min;
    else if (t->stride[dim] < min)
        return smla_fail(ctx, SMLA_ERR_STRIDE,
                         "%s: stride %lld of dimension %d must be at least %lld (rows would "
                         "overlap)",
                         t->name, (long long)t->stride[dim], dim, (long long)min);
    return SMLA_OK;
}

smla_status smla_check_alignment(smla_context *ctx, const smla_checked_tensor *t,
                                 size_t align, unsigned dims_mask)
{
    if ((uintptr_t)t->data % align != 0)
        return smla_fail(ctx, SMLA_ERR_ALIGNMENT, "%s: data pointer %p is not %zu-byte aligned",
                         t->name, t->data, align);
    for (int i = 0; i < t->ndim; i++) {
        if (!(dims_mask >> i & 1u)) /* an unchecked stride may be huge (an empty tensor's) */
            continue;
        const int64_t bytes = t->stride[i] * (int64_t)t->elem_size;
        if (bytes % (int64_t)align != 0)
            return smla_fail(ctx, SMLA_ERR_ALIGNMENT,
                             "%s: stride of dimension %d is %lld bytes, not a multiple of %zu",
                             t->name, i, (long long)bytes, align);
    }
    return SMLA_OK;
}
