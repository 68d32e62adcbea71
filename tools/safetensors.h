/* Safetensors files: a paranoid reader (from a file or from a memory buffer) and a writer.
 *
 * Format: an 8-byte little-endian header length N, N bytes of JSON header
 *   {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
 *    "__metadata__": {"key": "value", ...}}
 * (padded with spaces), then the data region; offsets are relative to its start.
 *
 * The reader checks everything before it hands out a pointer: header length, JSON
 * syntax and types, dtype names, offsets inside the data region, byte sizes equal to
 * product(shape) x dtype size (overflow-checked), no overlapping tensors, no duplicate
 * names. Malformed input gives SMLA_ERR_FILE_FORMAT with a message naming the tensor or
 * key; it never reads outside the buffer it was given. */
#ifndef SMLA_TOOLS_SAFETENSORS_H
#define SMLA_TOOLS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "smla.h"
#include "tool_error.h"

#define SMLA_ST_MAX_DIMS 8
#define SMLA_ST_MAX_HEADER_BYTES ((uint64_t)100 << 20) /* larger headers are refused */
/* One tensor. For the writer, nbytes must equal product(shape) x dtype size. */
typedef struct smla_st_tensor {
    const char *name;
    smla_dtype dtype;
    int ndim;
    int64_t shape[SMLA_ST_MAX_DIMS];
    const void *data; /* nbytes bytes; no alignment guarantee in a parsed file */
    size_t nbytes;
} smla_st_tensor;

typedef struct smla_st_metadata {
    const char *key;
    const char *value;
} smla_st_metadata;

/* A parsed file. Names, keys and values live in the parsed header; tensor data points
 * into the parsed bytes (owned by the file when it was read from disk). */
typedef struct smla_st_file {
    smla_st_tensor *tensors; /* in header order */
    size_t num_tensors;
    smla_st_metadata *metadata;
    size_t num_metadata;
    void *header;      /* the cJSON tree */
    void *file_bytes;  /* the whole file, when read by smla_st_read_file */
} smla_st_file;

/* The safetensors dtype name ("BF16", "F8_E4M3", "F32", "I32", "U8"); NULL if invalid. */
const char *smla_st_dtype_name(smla_dtype dtype);

/* Bytes of a tensor: product(shape) x dtype size. 0 on overflow or a negative size. */
int smla_st_tensor_bytes(smla_dtype dtype, int ndim, const int64_t *shape, size_t *nbytes);

/* Parses size bytes at bytes; the tensors point into bytes, which must outlive file.
 * On failure file is left empty (smla_st_file_free is still safe). error may be NULL. */
smla_status smla_st_parse(const void *bytes, size_t size, smla_st_file *file,
                          smla_tool_error *error);
/* Reads the whole file at path and parses it (SMLA_ERR_IO when it cannot be read). */
smla_status smla_st_read_file(const char *path, smla_st_file *file, smla_tool_error *error);
void smla_st_file_free(smla_st_file *file);

/* Lookups: NULL when absent. */
const smla_st_tensor *smla_st_find_tensor(const smla_st_file *file, const char *name);
const char *smla_st_find_metadata(const smla_st_file *file, const char *key);

/* Serialises tensors (data in the given order) and metadata into a new malloc'd buffer. */
smla_status smla_st_encode(const smla_st_tensor *tensors, size_t num_tensors,
                           const smla_st_metadata *metadata, size_t num_metadata,
                           void **bytes, size_t *size, smla_tool_error *error);
/* smla_st_encode, then writes the bytes to path. */
smla_status smla_st_write_file(const char *path, const smla_st_tensor *tensors,
                               size_t num_tensors, const smla_st_metadata *metadata,
                               size_t num_metadata, smla_tool_error *error);

#endif
