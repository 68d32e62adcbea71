/* Attention problems stored as safetensors files (format: problem_file.h). */
#include "problem_file.h"

#include "args_tensors.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUFFER_ALIGN 64

static const char *const tensor_names[SMLA_PROBLEM_FILE_TENSORS] = {
    "q",        "swa_cache",  "extra_cache",  "swa_indices", "extra_indices",
    "swa_lens", "extra_lens", "cu_seqlens_q", "seq_lens",    "sinks"};

static const char *const metadata_keys[] = {"kv_format", "block_size", "bmm1_scale",
                                            "bmm2_scale", "window"};

int smla_problem_file_knows_metadata(const char *key)
{
    for (size_t i = 0; i < sizeof metadata_keys / sizeof metadata_keys[0]; i++)
        if (!strcmp(key, metadata_keys[i]))
            return 1;
    return 0;
}

/* What the loader works with. */
typedef struct loader {
    const smla_st_file *file;
    smla_problem_file *problem;
    smla_tool_error *error;
    smla_kv_format kv_format;
    int32_t block_size; /* 0 when the metadata has none */
} loader;

static const char *format_shape(const smla_st_tensor *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                                 (long long)t->shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

static smla_status check_names(const loader *l)
{
    for (size_t i = 0; i < l->file->num_tensors; i++) {
        const char *name = l->file->tensors[i].name;
        int known = 0;
        for (int k = 0; k < SMLA_PROBLEM_FILE_TENSORS && !known; k++)
            known = !strcmp(name, tensor_names[k]);
        if (!known)
            return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                                  "unknown tensor '%.80s' (a problem file holds q, swa_cache, "
                                  "extra_cache, swa_indices, extra_indices, swa_lens, "
                                  "extra_lens, cu_seqlens_q, seq_lens, sinks)",
                                  name);
    }
    static const char *const required[] = {"q", "swa_cache", "swa_indices"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!smla_st_find_tensor(l->file, required[i]))
            return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT, "missing tensor '%s'",
                                  required[i]);
    const int has_cache = smla_st_find_tensor(l->file, "extra_cache") != NULL;
    const int has_indices = smla_st_find_tensor(l->file, "extra_indices") != NULL;
    if (has_cache != has_indices)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor '%s' is given without '%s' (give both or neither)",
                              has_cache ? "extra_cache" : "extra_indices",
                              has_cache ? "extra_indices" : "extra_cache");
    return SMLA_OK;
}

/* A finite float from metadata key, or fallback when the key is absent. */
static smla_status metadata_float(const loader *l, const char *key, float fallback,
                                  float *value)
{
    const char *text = smla_st_find_metadata(l->file, key);
    *value = fallback;
    if (!text)
        return SMLA_OK;
    char *end;
    const double d = strtod(text, &end);
    if (end == text || *end || !isfinite(d) || fabs(d) > FLT_MAX)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "metadata '%s': '%.40s' is not a finite float32 number", key, text);
    *value = (float)d;
    return SMLA_OK;
}

/* An integer in [1, INT32_MAX] from metadata key, or fallback when the key is absent. */
static smla_status metadata_count(const loader *l, const char *key, int32_t fallback,
                                  int32_t *value)
{
    const char *text = smla_st_find_metadata(l->file, key);
    *value = fallback;
    if (!text)
        return SMLA_OK;
    char *end;
    errno = 0;
    const long long n = strtoll(text, &end, 10);
    if (end == text || *end || errno || n < 1 || n > INT32_MAX)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "metadata '%s': '%.40s' is not an integer in [1, %d]", key, text,
                              INT32_MAX);
    *value = (int32_t)n;
    return SMLA_OK;
}

static smla_status load_metadata(loader *l)
{
    smla_attention_args *a = &l->problem->args;
    const char *format = smla_st_find_metadata(l->file, "kv_format");
    if (!format)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "metadata 'kv_format' is missing (bf16, fp8 or fp8_ds_mla)");
    l->kv_format = smla_kv_format_parse(format);
    if (l->kv_format == SMLA_KV_INVALID)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "metadata 'kv_format': unknown format '%.40s' (bf16, fp8 or "
                              "fp8_ds_mla)",
                              format);
    smla_status st = metadata_count(l, "block_size", 0, &l->block_size);
    if (st == SMLA_OK && l->kv_format == SMLA_KV_FP8_DS_MLA && !l->block_size)
        st = smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                            "metadata 'block_size' is required with kv_format fp8_ds_mla");
    if (st == SMLA_OK)
        st = metadata_float(l, "bmm1_scale", 1.0f, &a->bmm1_scale);
    if (st == SMLA_OK)
        st = metadata_float(l, "bmm2_scale", 1.0f, &a->bmm2_scale);
    if (st == SMLA_OK)
        st = metadata_count(l, "window", SMLA_DEFAULT_WINDOW, &a->window);
    return st;
}

/* A 64-byte-aligned copy of t's bytes, owned by the problem (never NULL on success, even
 * for an empty tensor: a NULL data pointer would mark the tensor absent). */
static smla_status aligned_copy(loader *l, const smla_st_tensor *t, void **copy)
{
    const size_t bytes = t->nbytes ? (t->nbytes + BUFFER_ALIGN - 1) / BUFFER_ALIGN * BUFFER_ALIGN
                                   : BUFFER_ALIGN;
    *copy = bytes >= t->nbytes ? aligned_alloc(BUFFER_ALIGN, bytes) : NULL;
    if (!*copy)
        return smla_tool_fail(l->error, SMLA_ERR_OUT_OF_MEMORY,
                              "tensor '%s': out of memory for %zu bytes", t->name, t->nbytes);
    if (t->nbytes)
        memcpy(*copy, t->data, t->nbytes);
    l->problem->buffers[l->problem->num_buffers++] = *copy;
    return SMLA_OK;
}

/* tensor name as a contiguous host tensor of its own dtype and shape; left absent (data
 * NULL) when the file has none. */
static smla_status load_tensor(loader *l, const char *name, smla_tensor *tensor)
{
    const smla_st_tensor *t = smla_st_find_tensor(l->file, name);
    memset(tensor, 0, sizeof *tensor);
    if (!t)
        return SMLA_OK;
    if (t->ndim > SMLA_MAX_DIMS)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor '%s': %d dimensions, more than any input has", name,
                              t->ndim);
    smla_status st = aligned_copy(l, t, &tensor->data);
    if (st != SMLA_OK)
        return st;
    tensor->dtype = t->dtype;
    tensor->ndim = t->ndim;
    tensor->memory = SMLA_MEMORY_HOST;
    int64_t stride = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        tensor->shape[i] = t->shape[i];
        tensor->stride[i] = stride;
        stride *= t->shape[i] ? t->shape[i] : 1;
    }
    return SMLA_OK;
}

/* q sets T and H for the whole file (and the outputs' sizes), so its shape is checked
 * here; its dtype, like everything else, is smla_attention's to check. */
static smla_status check_q_shape(const loader *l)
{
    const smla_st_tensor *t = smla_st_find_tensor(l->file, "q");
    char shape[96];
    if (t->ndim != 3 || t->shape[2] != SMLA_HEAD_DIM)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor 'q': shape %s, expected [T, H, %d]",
                              format_shape(t, shape, sizeof shape), SMLA_HEAD_DIM);
    return SMLA_OK;
}

/* A bf16 or fp8 pool: [num_blocks, block_size, 512] of the format's element type. */
static smla_status load_row_pool(loader *l, const smla_st_tensor *t, smla_kv_pool *pool)
{
    const smla_dtype dtype = l->kv_format == SMLA_KV_BF16 ? SMLA_DTYPE_BF16
                                                           : SMLA_DTYPE_FP8_E4M3;
    char shape[96];
    if (t->dtype != dtype)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor '%s': dtype %s, but kv_format %s needs %s", t->name,
                              smla_st_dtype_name(t->dtype), smla_kv_format_name(l->kv_format),
                              smla_st_dtype_name(dtype));
    if (t->ndim != 3 || t->shape[2] != SMLA_HEAD_DIM || t->shape[1] < 1 ||
        t->shape[1] > INT32_MAX)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor '%s': shape %s, expected [num_blocks, block_size >= 1, %d]",
                              t->name, format_shape(t, shape, sizeof shape), SMLA_HEAD_DIM);
    if (l->block_size && t->shape[1] != l->block_size)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor '%s': block size %lld (dim 1), but metadata block_size "
                              "is %d",
                              t->name, (long long)t->shape[1], (int)l->block_size);
    void *data;
    smla_status st = aligned_copy(l, t, &data);
    if (st == SMLA_OK)
        *pool = smla_kv_pool_make(data, l->kv_format, t->shape[0], (int32_t)t->shape[1],
                                  SMLA_MEMORY_HOST);
    return st;
}

/* An fp8_ds_mla pool: U8 [num_blocks, block_bytes], block_bytes being the block stride. */
static smla_status load_block_pool(loader *l, const smla_st_tensor *t, smla_kv_pool *pool)
{
    const int64_t need = smla_kv_block_bytes(l->kv_format, l->block_size);
    char shape[96];
    if (t->dtype != SMLA_DTYPE_U8)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor '%s': dtype %s, but kv_format fp8_ds_mla needs U8 (raw "
                              "block bytes)",
                              t->name, smla_st_dtype_name(t->dtype));
    if (t->ndim != 2)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor '%s': shape %s, expected [num_blocks, block_bytes]",
                              t->name, format_shape(t, shape, sizeof shape));
    if (t->shape[1] < need)
        return smla_tool_fail(l->error, SMLA_ERR_FILE_FORMAT,
                              "tensor '%s': %lld bytes per block, fewer than the %lld that "
                              "block_size %d needs in fp8_ds_mla",
                              t->name, (long long)t->shape[1], (long long)need,
                              (int)l->block_size);
    void *data;
    smla_status st = aligned_copy(l, t, &data);
    if (st == SMLA_OK) {
        *pool = smla_kv_pool_make(data, l->kv_format, t->shape[0], l->block_size,
                                  SMLA_MEMORY_HOST);
        pool->block_stride = t->shape[1];
    }
    return st;
}

static smla_status load_pool(loader *l, const char *name, smla_kv_pool *pool)
{
    const smla_st_tensor *t = smla_st_find_tensor(l->file, name);
    memset(pool, 0, sizeof *pool);
    if (!t)
        return SMLA_OK;
    return l->kv_format == SMLA_KV_FP8_DS_MLA ? load_block_pool(l, t, pool)
                                               : load_row_pool(l, t, pool);
}

smla_status smla_problem_file_load(const smla_st_file *file, smla_problem_file *problem,
                                   smla_tool_error *error)
{
    if (!file || !problem)
        return smla_tool_fail(error, SMLA_ERR_NULL_POINTER, "file or problem is NULL");
    memset(problem, 0, sizeof *problem);
    problem->args = smla_attention_args_default();
    loader l = {file, problem, error, SMLA_KV_INVALID, 0};
    smla_attention_args *a = &problem->args;
    smla_status st = check_names(&l);
    if (st == SMLA_OK)
        st = load_metadata(&l);
    if (st == SMLA_OK)
        st = load_pool(&l, "swa_cache", &a->swa);
    if (st == SMLA_OK)
        st = load_pool(&l, "extra_cache", &a->extra);
    smla_named_tensor fields[SMLA_ARGS_INPUT_TENSORS];
    smla_args_input_tensors(a, fields);
    for (int i = 0; i < SMLA_ARGS_INPUT_TENSORS && st == SMLA_OK; i++)
        st = load_tensor(&l, fields[i].name, fields[i].tensor);
    if (st == SMLA_OK)
        st = check_q_shape(&l);
    if (st != SMLA_OK)
        smla_problem_file_free(problem);
    return st;
}

void smla_problem_file_free(smla_problem_file *problem)
{
    if (!problem)
        return;
    for (int i = 0; i < problem->num_buffers; i++)
        free(problem->buffers[i]);
    memset(problem, 0, sizeof *problem);
}
