/* Checks of one tensor argument, shared by the validation of every operation. Each check
 * records a message naming the argument on ctx and returns its status. */
#ifndef SMLA_VALIDATE_TENSOR_H
#define SMLA_VALIDATE_TENSOR_H

#include "internal.h"

/* A tensor argument that passed smla_check_tensor: strides resolved (all-zero strides
 * become row-major) and every element's byte offset known to fit in int64. */
typedef struct smla_checked_tensor {
    const char *name;
    void *data;
    int ndim;
    int64_t shape[SMLA_MAX_DIMS];
    int64_t stride[SMLA_MAX_DIMS]; /* elements */
    size_t elem_size;
    smla_memory memory;
} smla_checked_tensor;

/* 1 when t has ndim dims and one of them is 0 (no elements, so no storage needed). */
int smla_tensor_is_empty(const smla_tensor *t, int ndim);

/* Rank (SHAPE), dtype: dtype or alt_dtype (DTYPE; pass SMLA_DTYPE_INVALID as alt_dtype
 * for a single one), non-negative sizes (SHAPE) and strides (STRIDE), byte offsets
 * within int64 (SHAPE). Fills *out. */
smla_status smla_check_tensor(smla_context *ctx, const char *name, const smla_tensor *t,
                              int ndim, smla_dtype dtype, smla_dtype alt_dtype,
                              smla_checked_tensor *out);

/* shape[dim] == expected (SHAPE); what names where expected comes from: the message
 * reads "swa_indices: shape [4, 128], but the token count of q is 5". */
smla_status smla_check_extent(smla_context *ctx, const smla_checked_tensor *t, int dim,
                              int64_t expected, const char *what);

/* Stride rules (STRIDE). A dim of at most one element never steps, so its stride is not
 * checked, and is replaced by the required one so that backends may use it freely. */
smla_status smla_check_stride_eq(smla_context *ctx, smla_checked_tensor *t, int dim,
                                 int64_t required);
smla_status smla_check_stride_min(smla_context *ctx, smla_checked_tensor *t, int dim,
                                  int64_t min);

/* The data pointer, and each stride > 0 of the listed dims in bytes, are multiples of
 * align (ALIGNMENT). Pass dims_mask bit i to include dim i. */
smla_status smla_check_alignment(smla_context *ctx, const smla_checked_tensor *t,
                                 size_t align, unsigned dims_mask);

#endif
