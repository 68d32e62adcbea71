/* Safetensors reader and writer (format and guarantees: safetensors.h). */
#include "safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define METADATA_KEY "__metadata__"
#define NAME_SHOWN "%.80s" /* names in messages are cut: a hostile header may hold megabytes */
#define MAX_EXACT_INTEGER 9007199254740992.0 /* 2^53: JSON numbers are doubles in cJSON */

static const struct {
    const char *name;
    smla_dtype dtype;
} dtype_names[] = {
    {"BF16", SMLA_DTYPE_BF16}, {"F8_E4M3", SMLA_DTYPE_FP8_E4M3}, {"F32", SMLA_DTYPE_F32},
    {"I32", SMLA_DTYPE_I32},   {"U8", SMLA_DTYPE_U8},
};

const char *smla_st_dtype_name(smla_dtype dtype)
{
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (dtype_names[i].dtype == dtype)
            return dtype_names[i].name;
    return NULL;
}

static smla_dtype dtype_parse(const char *name)
{
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (!strcmp(dtype_names[i].name, name))
            return dtype_names[i].dtype;
    return SMLA_DTYPE_INVALID;
}

int smla_st_tensor_bytes(smla_dtype dtype, int ndim, const int64_t *shape, size_t *nbytes)
{
    size_t n = smla_dtype_size(dtype);
    if (!n || ndim < 0 || ndim > SMLA_ST_MAX_DIMS)
        return 0;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) { /* an empty tensor, whatever its other sizes */
            *nbytes = 0;
            return 1;
        }
    }
    for (int i = 0; i < ndim; i++) {
        if ((uint64_t)shape[i] > SIZE_MAX / n)
            return 0;
        n *= (size_t)shape[i];
    }
    *nbytes = n;
    return 1;
}

/* ---------------------------------------------------------------- reader */

/* A JSON number holding a non-negative integer that a double represents exactly. */
static int json_uint(const cJSON *item, uint64_t *value)
{
    if (!cJSON_IsNumber(item))
        return 0;
    double d = item->valuedouble;
    if (!(d >= 0.0 && d <= MAX_EXACT_INTEGER))
        return 0;
    uint64_t u = (uint64_t)d;
    if ((double)u != d)
        return 0;
    *value = u;
    return 1;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fails with status on the first name that occurs twice (names is reordered). */
static smla_status check_unique(const char **names, size_t count, const char *what,
                                smla_status status, smla_tool_error *error)
{
    qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 1; i < count; i++)
        if (!strcmp(names[i - 1], names[i]))
            return smla_tool_fail(error, status, "duplicate %s '" NAME_SHOWN "'", what, names[i]);
    return SMLA_OK;
}

/* Where a tensor's bytes lie in the data region. */
typedef struct span {
    uint64_t begin, end;
    const char *name;
} span;

static int compare_spans(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

static smla_status check_no_overlap(span *spans, size_t count, smla_tool_error *error)
{
    qsort(spans, count, sizeof *spans, compare_spans);
    for (size_t i = 1; i < count; i++)
        if (spans[i].begin < spans[i - 1].end)
            return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                                  "tensors '" NAME_SHOWN "' and '" NAME_SHOWN
                                  "' overlap in the data region",
                                  spans[i - 1].name, spans[i].name);
    return SMLA_OK;
}

static smla_status parse_dtype(const char *name, const cJSON *item, smla_dtype *dtype,
                               smla_tool_error *error)
{
    if (!cJSON_IsString(item))
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': dtype is not a string", name);
    *dtype = dtype_parse(item->valuestring);
    if (*dtype == SMLA_DTYPE_INVALID)
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': unsupported dtype '%.32s' "
                              "(supported: BF16, F8_E4M3, F32, I32, U8)",
                              name, item->valuestring);
    return SMLA_OK;
}

static smla_status parse_shape(const char *name, const cJSON *item, smla_st_tensor *t,
                               smla_tool_error *error)
{
    if (!cJSON_IsArray(item))
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': shape is not an array", name);
    int ndim = 0;
    for (const cJSON *dim = item->child; dim; dim = dim->next) {
        uint64_t size;
        if (ndim == SMLA_ST_MAX_DIMS)
            return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                                  "tensor '" NAME_SHOWN "': more than %d dimensions", name,
                                  SMLA_ST_MAX_DIMS);
        if (!json_uint(dim, &size))
            return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                                  "tensor '" NAME_SHOWN "': shape[%d] is not a non-negative "
                                  "integer below 2^53",
                                  name, ndim);
        t->shape[ndim++] = (int64_t)size;
    }
    t->ndim = ndim;
    return SMLA_OK;
}

static smla_status parse_offsets(const char *name, const cJSON *item, span *s,
                                 smla_tool_error *error)
{
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2 ||
        !json_uint(item->child, &s->begin) || !json_uint(item->child->next, &s->end))
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': data_offsets is not a pair of "
                              "non-negative integers",
                              name);
    return SMLA_OK;
}

/* One header entry {"dtype", "shape", "data_offsets"} -> tensor t and its span. */
static smla_status parse_tensor(const cJSON *entry, const unsigned char *data,
                                size_t data_size, smla_st_tensor *t, span *s,
                                smla_tool_error *error)
{
    const char *name = entry->string;
    if (!name[0])
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT, "a tensor has an empty name");
    if (!cJSON_IsObject(entry))
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': header entry is not an object", name);
    const cJSON *fields[3] = {NULL, NULL, NULL};
    static const char *const field_names[3] = {"dtype", "shape", "data_offsets"};
    for (const cJSON *f = entry->child; f; f = f->next) {
        int k = 0;
        while (k < 3 && strcmp(f->string, field_names[k]))
            k++;
        if (k == 3)
            return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                                  "tensor '" NAME_SHOWN "': unknown field '%.32s'", name,
                                  f->string);
        if (fields[k])
            return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                                  "tensor '" NAME_SHOWN "': duplicate field '%s'", name,
                                  field_names[k]);
        fields[k] = f;
    }
    for (int k = 0; k < 3; k++)
        if (!fields[k])
            return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                                  "tensor '" NAME_SHOWN "': missing field '%s'", name,
                                  field_names[k]);
    smla_status st;
    if ((st = parse_dtype(name, fields[0], &t->dtype, error)) != SMLA_OK ||
        (st = parse_shape(name, fields[1], t, error)) != SMLA_OK ||
        (st = parse_offsets(name, fields[2], s, error)) != SMLA_OK)
        return st;
    if (s->begin > s->end)
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': data_offsets begin %llu > end %llu",
                              name, (unsigned long long)s->begin, (unsigned long long)s->end);
    if (s->end > data_size)
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': data_offsets end %llu is past the %zu "
                              "bytes of the data region (truncated file?)",
                              name, (unsigned long long)s->end, data_size);
    size_t nbytes;
    if (!smla_st_tensor_bytes(t->dtype, t->ndim, t->shape, &nbytes))
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': byte size of its shape overflows", name);
    if (nbytes != s->end - s->begin)
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "tensor '" NAME_SHOWN "': data_offsets hold %llu bytes but its "
                              "%s shape needs %zu",
                              name, (unsigned long long)(s->end - s->begin),
                              smla_st_dtype_name(t->dtype), nbytes);
    t->name = name;
    t->data = data + s->begin;
    t->nbytes = nbytes;
    s->name = name;
    return SMLA_OK;
}

static smla_status parse_metadata(const cJSON *entry, smla_st_file *file,
                                  smla_tool_error *error)
{
    if (!cJSON_IsObject(entry))
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT, METADATA_KEY " is not an object");
    size_t count = 0;
    for (const cJSON *m = entry->child; m; m = m->next)
        count++;
    file->metadata = calloc(count ? count : 1, sizeof *file->metadata);
    const char **keys = calloc(count ? count : 1, sizeof *keys);
    if (!file->metadata || !keys) {
        free(keys);
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "out of memory for the metadata");
    }
    smla_status st = SMLA_OK;
    for (const cJSON *m = entry->child; m && st == SMLA_OK; m = m->next) {
        if (!cJSON_IsString(m)) {
            st = smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                                "metadata '" NAME_SHOWN "' is not a string", m->string);
            break;
        }
        file->metadata[file->num_metadata].key = m->string;
        file->metadata[file->num_metadata].value = m->valuestring;
        keys[file->num_metadata++] = m->string;
    }
    if (st == SMLA_OK)
        st = check_unique(keys, count, "metadata key", SMLA_ERR_FILE_FORMAT, error);
    free(keys);
    return st;
}

/* Parses the JSON text of the header, which must be one object followed only by spaces. */
static smla_status parse_json(const unsigned char *text, size_t length, cJSON **root,
                              smla_tool_error *error)
{
    /* A NUL-terminated copy with slack: cJSON then never reads past our allocation, even
     * if a header is cut inside an escape sequence. */
    char *copy = calloc(length + 16, 1);
    if (!copy)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY,
                              "out of memory for a %zu-byte header", length);
    memcpy(copy, text, length);
    const char *end = NULL;
    *root = cJSON_ParseWithOpts(copy, &end, 0);
    if (!*root) {
        const ptrdiff_t at = end ? end - copy : 0;
        free(copy);
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "header is not valid JSON (error near header byte %td)", at);
    }
    smla_status st = SMLA_OK;
    for (const char *p = end; p < copy + length && st == SMLA_OK; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            st = smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                                "header has bytes after its JSON object (header byte %td)",
                                p - copy);
    if (st == SMLA_OK && !cJSON_IsObject(*root))
        st = smla_tool_fail(error, SMLA_ERR_FILE_FORMAT, "header is not a JSON object");
    free(copy);
    return st;
}

/* Fills file from the parsed header; the data region is data[0, data_size). */
static smla_status parse_entries(const cJSON *root, const unsigned char *data,
                                 size_t data_size, smla_st_file *file, smla_tool_error *error)
{
    size_t count = 0;
    for (const cJSON *e = root->child; e; e = e->next)
        count++;
    file->tensors = calloc(count ? count : 1, sizeof *file->tensors);
    span *spans = calloc(count ? count : 1, sizeof *spans);
    const char **names = calloc(count ? count : 1, sizeof *names);
    if (!file->tensors || !spans || !names) {
        free(spans);
        free(names);
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "out of memory for %zu tensors",
                              count);
    }
    smla_status st = SMLA_OK;
    size_t num_names = 0, num_spans = 0;
    const cJSON *metadata = NULL;
    for (const cJSON *e = root->child; e && st == SMLA_OK; e = e->next) {
        names[num_names++] = e->string;
        if (!strcmp(e->string, METADATA_KEY)) {
            metadata = e;
            continue;
        }
        smla_st_tensor *t = &file->tensors[file->num_tensors];
        st = parse_tensor(e, data, data_size, t, &spans[num_spans], error);
        if (st == SMLA_OK) {
            file->num_tensors++;
            if (t->nbytes) /* an empty tensor overlaps nothing */
                num_spans++;
        }
    }
    if (st == SMLA_OK)
        st = check_unique(names, num_names, "header key", SMLA_ERR_FILE_FORMAT, error);
    if (st == SMLA_OK)
        st = check_no_overlap(spans, num_spans, error);
    if (st == SMLA_OK && metadata)
        st = parse_metadata(metadata, file, error);
    free(spans);
    free(names);
    return st;
}

smla_status smla_st_parse(const void *bytes, size_t size, smla_st_file *file,
                          smla_tool_error *error)
{
    if (!file)
        return smla_tool_fail(error, SMLA_ERR_NULL_POINTER, "file is NULL");
    memset(file, 0, sizeof *file);
    if (!bytes && size)
        return smla_tool_fail(error, SMLA_ERR_NULL_POINTER, "bytes is NULL");
    if (size < 8)
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "file is %zu bytes: too short for the 8-byte header length", size);
    const unsigned char *p = bytes;
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; i--)
        header_bytes = header_bytes << 8 | p[i];
    if (header_bytes > SMLA_ST_MAX_HEADER_BYTES)
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "header length %llu is absurd (limit %llu): not a "
                              "safetensors file?",
                              (unsigned long long)header_bytes,
                              (unsigned long long)SMLA_ST_MAX_HEADER_BYTES);
    if (header_bytes > size - 8)
        return smla_tool_fail(error, SMLA_ERR_FILE_FORMAT,
                              "header length %llu exceeds the %zu bytes after it (truncated "
                              "or not a safetensors file)",
                              (unsigned long long)header_bytes, size - 8);
    cJSON *root = NULL;
    smla_status st = parse_json(p + 8, (size_t)header_bytes, &root, error);
    if (st == SMLA_OK)
        st = parse_entries(root, p + 8 + header_bytes, size - 8 - (size_t)header_bytes, file,
                           error);
    file->header = root;
    if (st != SMLA_OK)
        smla_st_file_free(file);
    return st;
}

smla_status smla_st_read_file(const char *path, smla_st_file *file, smla_tool_error *error)
{
    if (!path || !file)
        return smla_tool_fail(error, SMLA_ERR_NULL_POINTER, "path or file is NULL");
    memset(file, 0, sizeof *file);
    FILE *f = fopen(path, "rb");
    if (!f)
        return smla_tool_fail(error, SMLA_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    /* Read in growing chunks: works for pipes and reports a directory as unreadable. */
    size_t size = 0, capacity = 1 << 16;
    unsigned char *buffer = malloc(capacity);
    smla_status st = SMLA_OK;
    while (buffer) {
        size += fread(buffer + size, 1, capacity - size, f);
        if (size < capacity)
            break;
        unsigned char *grown = capacity <= SIZE_MAX / 2 ? realloc(buffer, capacity * 2) : NULL;
        if (!grown)
            free(buffer);
        buffer = grown;
        capacity *= 2;
    }
    if (!buffer)
        st = smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "out of memory reading '%s'", path);
    else if (ferror(f))
        st = smla_tool_fail(error, SMLA_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    fclose(f);
    if (st == SMLA_OK)
        st = smla_st_parse(buffer, size, file, error);
    if (st != SMLA_OK) {
        free(buffer);
        return st;
    }
    file->file_bytes = buffer;
    return SMLA_OK;
}

void smla_st_file_free(smla_st_file *file)
{
    if (!file)
        return;
    free(file->tensors);
    free(file->metadata);
    cJSON_Delete(file->header);
    free(file->file_bytes);
    memset(file, 0, sizeof *file);
}

const smla_st_tensor *smla_st_find_tensor(const smla_st_file *file, const char *name)
{
    for (size_t i = 0; i < file->num_tensors; i++)
        if (!strcmp(file->tensors[i].name, name))
            return &file->tensors[i];
    return NULL;
}

const char *smla_st_find_metadata(const smla_st_file *file, const char *key)
{
    for (size_t i = 0; i < file->num_metadata; i++)
        if (!strcmp(file->metadata[i].key, key))
            return file->metadata[i].value;
    return NULL;
}

/* ---------------------------------------------------------------- writer */

static smla_status check_writable(const smla_st_tensor *tensors, size_t num_tensors,
                                  const smla_st_metadata *metadata, size_t num_metadata,
                                  smla_tool_error *error)
{
    for (size_t i = 0; i < num_tensors; i++) {
        const smla_st_tensor *t = &tensors[i];
        size_t nbytes;
        if (!t->name || !t->name[0] || !strcmp(t->name, METADATA_KEY))
            return smla_tool_fail(error, SMLA_ERR_VALUE, "tensor %zu has no usable name", i);
        if (!smla_st_dtype_name(t->dtype))
            return smla_tool_fail(error, SMLA_ERR_DTYPE, "tensor '%s': invalid dtype %d",
                                  t->name, (int)t->dtype);
        if (!smla_st_tensor_bytes(t->dtype, t->ndim, t->shape, &nbytes))
            return smla_tool_fail(error, SMLA_ERR_SHAPE, "tensor '%s': invalid shape", t->name);
        if (nbytes != t->nbytes)
            return smla_tool_fail(error, SMLA_ERR_SHAPE,
                                  "tensor '%s': nbytes %zu but its shape needs %zu", t->name,
                                  t->nbytes, nbytes);
        if (nbytes && !t->data)
            return smla_tool_fail(error, SMLA_ERR_NULL_POINTER, "tensor '%s': data is NULL",
                                  t->name);
    }
    /* An empty key is a key (JSON and the reader allow it). */
    for (size_t i = 0; i < num_metadata; i++)
        if (!metadata[i].key || !metadata[i].value)
            return smla_tool_fail(error, SMLA_ERR_VALUE, "metadata entry %zu is incomplete", i);
    return SMLA_OK;
}


/* Tensor names and metadata keys must each be unique. */
static smla_status check_writable_names(const smla_st_tensor *tensors, size_t num_tensors,
                                        const smla_st_metadata *metadata,
                                        size_t num_metadata, smla_tool_error *error)
{
    size_t most = num_tensors > num_metadata ? num_tensors : num_metadata;
    const char **names = calloc(most ? most : 1, sizeof *names); /* check_unique sorts */
    if (!names)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < num_tensors; i++)
        names[i] = tensors[i].name;
    smla_status st = check_unique(names, num_tensors, "tensor name", SMLA_ERR_VALUE, error);
    for (size_t i = 0; i < num_metadata; i++)
        names[i] = metadata[i].key;
    if (st == SMLA_OK)
        st = check_unique(names, num_metadata, "metadata key", SMLA_ERR_VALUE, error);
    free(names);
    return st;
}

/* Adds an integer as raw JSON text: cJSON would print large doubles with an exponent. */
static int add_integer(cJSON *array, uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    cJSON *item = cJSON_CreateRaw(text);
    return item && cJSON_AddItemToArray(array, item);
}

static int add_tensor_entry(cJSON *root, const smla_st_tensor *t, uint64_t begin)
{
    cJSON *entry = cJSON_AddObjectToObject(root, t->name);
    if (!entry || !cJSON_AddStringToObject(entry, "dtype", smla_st_dtype_name(t->dtype)))
        return 0;
    cJSON *shape = cJSON_AddArrayToObject(entry, "shape");
    for (int d = 0; shape && d < t->ndim; d++)
        if (!add_integer(shape, (uint64_t)t->shape[d]))
            return 0;
    cJSON *offsets = cJSON_AddArrayToObject(entry, "data_offsets");
    return shape && offsets && add_integer(offsets, begin) &&
           add_integer(offsets, begin + t->nbytes);
}

/* The header text (unpadded), or NULL when out of memory. */
static char *header_text(const smla_st_tensor *tensors, size_t num_tensors,
                         const smla_st_metadata *metadata, size_t num_metadata)
{
    cJSON *root = cJSON_CreateObject();
    int ok = root != NULL;
    uint64_t offset = 0;
    for (size_t i = 0; ok && i < num_tensors; i++) {
        ok = add_tensor_entry(root, &tensors[i], offset);
        offset += tensors[i].nbytes;
    }
    if (ok && num_metadata) {
        cJSON *meta = cJSON_AddObjectToObject(root, METADATA_KEY);
        ok = meta != NULL;
        for (size_t i = 0; ok && i < num_metadata; i++)
            ok = cJSON_AddStringToObject(meta, metadata[i].key, metadata[i].value) != NULL;
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

smla_status smla_st_encode(const smla_st_tensor *tensors, size_t num_tensors,
                           const smla_st_metadata *metadata, size_t num_metadata,
                           void **bytes, size_t *size, smla_tool_error *error)
{
    if (!bytes || !size || (num_tensors && !tensors) || (num_metadata && !metadata))
        return smla_tool_fail(error, SMLA_ERR_NULL_POINTER, "a required pointer is NULL");
    *bytes = NULL;
    *size = 0;
    smla_status st = check_writable(tensors, num_tensors, metadata, num_metadata, error);
    if (st == SMLA_OK)
        st = check_writable_names(tensors, num_tensors, metadata, num_metadata, error);
    if (st != SMLA_OK)
        return st;
    size_t data_bytes = 0;
    for (size_t i = 0; i < num_tensors; i++) {
        if (tensors[i].nbytes > SIZE_MAX / 2 - data_bytes)
            return smla_tool_fail(error, SMLA_ERR_VALUE, "tensors too large for one file");
        data_bytes += tensors[i].nbytes;
    }
    char *text = header_text(tensors, num_tensors, metadata, num_metadata);
    if (!text)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "out of memory for the header");
    size_t text_bytes = strlen(text);
    size_t header_bytes = (text_bytes + 7) / 8 * 8; /* keeps the data region 8-aligned */
    unsigned char *out = malloc(8 + header_bytes + data_bytes);
    if (!out) {
        cJSON_free(text);
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "out of memory for %zu bytes",
                              8 + header_bytes + data_bytes);
    }
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)((uint64_t)header_bytes >> (8 * i));
    memcpy(out + 8, text, text_bytes);
    memset(out + 8 + text_bytes, ' ', header_bytes - text_bytes);
    cJSON_free(text);
    unsigned char *data = out + 8 + header_bytes;
    for (size_t i = 0; i < num_tensors; i++) {
        if (tensors[i].nbytes)
            memcpy(data, tensors[i].data, tensors[i].nbytes);
        data += tensors[i].nbytes;
    }
    *bytes = out;
    *size = 8 + header_bytes + data_bytes;
    return SMLA_OK;
}

smla_status smla_st_write_file(const char *path, const smla_st_tensor *tensors,
                               size_t num_tensors, const smla_st_metadata *metadata,
                               size_t num_metadata, smla_tool_error *error)
{
    if (!path)
        return smla_tool_fail(error, SMLA_ERR_NULL_POINTER, "path is NULL");
    void *bytes;
    size_t size;
    smla_status st = smla_st_encode(tensors, num_tensors, metadata, num_metadata, &bytes,
                                    &size, error);
    if (st != SMLA_OK)
        return st;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(bytes);
        return smla_tool_fail(error, SMLA_ERR_IO, "cannot create '%s': %s", path,
                              strerror(errno));
    }
    size_t written = fwrite(bytes, 1, size, f);
    int write_errno = errno;
    free(bytes);
    if (fclose(f) != 0 || written != size)
        return smla_tool_fail(error, SMLA_ERR_IO, "cannot write '%s': %s", path,
                              strerror(written != size ? write_errno : errno));
    return SMLA_OK;
}
