/* The safetensors reader and writer: random round trips (memory and disk), every class of
 * malformed header refused with SMLA_ERR_FILE_FORMAT and the culprit named, and every
 * truncation or random corruption of a valid file handled without a crash. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safetensors.h"
#include "testutil.h"

static const smla_dtype all_dtypes[] = {SMLA_DTYPE_BF16, SMLA_DTYPE_FP8_E4M3, SMLA_DTYPE_F32,
                                        SMLA_DTYPE_I32, SMLA_DTYPE_U8};

/* A random set of tensors (each with its own malloc'd data) and metadata. */
typedef struct random_file {
    smla_st_tensor tensors[12];
    char names[12][40];
    size_t num_tensors;
    smla_st_metadata metadata[4];
    char keys[4][32], values[4][40];
    size_t num_metadata;
} random_file;

static void random_file_make(random_file *f, smla_rng *rng, int allow_empty)
{
    memset(f, 0, sizeof *f);
    f->num_tensors = (size_t)smla_rng_range(rng, allow_empty ? 0 : 1, 12);
    for (size_t i = 0; i < f->num_tensors; i++) {
        smla_st_tensor *t = &f->tensors[i];
        snprintf(f->names[i], sizeof f->names[i], "t%zu_%d", i,
                 (int)smla_rng_range(rng, 0, 99));
        t->name = f->names[i];
        t->dtype = all_dtypes[smla_rng_range(rng, 0, 4)];
        t->ndim = (int)smla_rng_range(rng, 0, 4);
        for (int d = 0; d < t->ndim; d++)
            t->shape[d] = smla_rng_range(rng, allow_empty ? 0 : 1, 5);
        CHECK(smla_st_tensor_bytes(t->dtype, t->ndim, t->shape, &t->nbytes));
        unsigned char *data = smla_test_alloc(t->nbytes + 1);
        for (size_t b = 0; b < t->nbytes; b++)
            data[b] = (unsigned char)smla_rng_next(rng);
        t->data = data;
    }
    f->num_metadata = (size_t)smla_rng_range(rng, 0, 4);
    for (size_t i = 0; i < f->num_metadata; i++) {
        snprintf(f->keys[i], sizeof f->keys[i], "key%zu", i);
        snprintf(f->values[i], sizeof f->values[i], "v \"%llu\"\n",
                 (unsigned long long)smla_rng_next(rng));
        f->metadata[i].key = f->keys[i];
        f->metadata[i].value = f->values[i];
    }
}

static void random_file_free(random_file *f)
{
    for (size_t i = 0; i < f->num_tensors; i++)
        free((void *)f->tensors[i].data);
}

static void check_same(const random_file *want, const smla_st_file *got)
{
    CHECK(got->num_tensors == want->num_tensors);
    CHECK(got->num_metadata == want->num_metadata);
    for (size_t i = 0; i < want->num_tensors && i < got->num_tensors; i++) {
        const smla_st_tensor *w = &want->tensors[i], *g = &got->tensors[i];
        CHECK(!strcmp(w->name, g->name));
        CHECK(smla_st_find_tensor(got, w->name) == g);
        CHECK(w->dtype == g->dtype);
        CHECK(w->ndim == g->ndim);
        for (int d = 0; d < w->ndim; d++)
            CHECK(w->shape[d] == g->shape[d]);
        CHECK(w->nbytes == g->nbytes);
        CHECK(w->nbytes == 0 || !memcmp(w->data, g->data, w->nbytes));
    }
    for (size_t i = 0; i < want->num_metadata; i++) {
        const char *v = smla_st_find_metadata(got, want->metadata[i].key);
        CHECK(v && !strcmp(v, want->metadata[i].value));
    }
    CHECK(smla_st_find_tensor(got, "absent") == NULL);
    CHECK(smla_st_find_metadata(got, "absent") == NULL);
}

static void test_round_trips(smla_rng *rng)
{
    for (int iter = 0; iter < 200; iter++) {
        random_file f;
        random_file_make(&f, rng, 1);
        void *bytes;
        size_t size;
        smla_tool_error err;
        CHECK_STATUS(smla_st_encode(f.tensors, f.num_tensors, f.metadata, f.num_metadata,
                                    &bytes, &size, &err),
                     SMLA_OK);
        uint64_t header = 0;
        memcpy(&header, bytes, 8); /* little-endian host */
        CHECK((8 + header) % 8 == 0);
        smla_st_file got;
        CHECK_STATUS(smla_st_parse(bytes, size, &got, &err), SMLA_OK);
        check_same(&f, &got);
        smla_st_file_free(&got);
        free(bytes);
        random_file_free(&f);
    }
}

static void test_disk_round_trip(smla_rng *rng)
{
    char path[] = "/tmp/smla_test_safetensors_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    close(fd);
    random_file f;
    random_file_make(&f, rng, 0);
    smla_tool_error err;
    CHECK_STATUS(smla_st_write_file(path, f.tensors, f.num_tensors, f.metadata, f.num_metadata,
                                    &err),
                 SMLA_OK);
    smla_st_file got;
    CHECK_STATUS(smla_st_read_file(path, &got, &err), SMLA_OK);
    check_same(&f, &got);
    smla_st_file_free(&got);
    random_file_free(&f);
    unlink(path);
    CHECK_STATUS(smla_st_read_file(path, &got, &err), SMLA_ERR_IO);
    CHECK(strstr(err.message, path) != NULL);
    CHECK_STATUS(smla_st_read_file("/", &got, &err), SMLA_ERR_IO);
    CHECK_STATUS(smla_st_write_file("/nonexistent-dir/x.safetensors", NULL, 0, NULL, 0, &err),
                 SMLA_ERR_IO);
}

/* A file made of a header text (written as is) and data_bytes bytes of data. */
static unsigned char *raw_file(const char *header, size_t data_bytes, size_t *size)
{
    size_t n = strlen(header);
    *size = 8 + n + data_bytes;
    unsigned char *bytes = smla_test_zalloc(*size);
    for (int i = 0; i < 8; i++)
        bytes[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(bytes + 8, header, n);
    return bytes;
}

/* The header must be refused with SMLA_ERR_FILE_FORMAT and a message containing needle. */
static void expect_malformed(const char *header, size_t data_bytes, const char *needle)
{
    size_t size;
    unsigned char *bytes = raw_file(header, data_bytes, &size);
    smla_st_file file;
    smla_tool_error err;
    err.message[0] = '\0';
    smla_status st = smla_st_parse(bytes, size, &file, &err);
    if (st != SMLA_ERR_FILE_FORMAT || !strstr(err.message, needle)) {
        fprintf(stderr, "header %s\n  -> status %d, message '%s'; expected file format error "
                        "naming '%s'\n",
                header, (int)st, err.message, needle);
        smla_test_failures++;
    }
    CHECK(file.num_tensors == 0 && file.tensors == NULL && file.header == NULL);
    smla_st_file_free(&file);
    free(bytes);
}

static void test_malformed_headers(void)
{
    /* JSON-level problems */
    expect_malformed("{", 0, "not valid JSON");
    expect_malformed("", 0, "not valid JSON");
    expect_malformed("[1, 2]", 0, "not a JSON object");
    expect_malformed("\"q\"", 0, "not a JSON object");
    expect_malformed("{} x", 0, "after its JSON object");
    expect_malformed("{\"q\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]", 1,
                     "not valid JSON");
    /* entry structure */
    expect_malformed("{\"q\": 5}", 0, "'q': header entry is not an object");
    expect_malformed("{\"\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [0, 1]}}", 1,
                     "empty name");
    expect_malformed("{\"kv\": {\"shape\": [1], \"data_offsets\": [0, 1]}}", 1,
                     "'kv': missing field 'dtype'");
    expect_malformed("{\"kv\": {\"dtype\": \"U8\", \"data_offsets\": [0, 1]}}", 1,
                     "'kv': missing field 'shape'");
    expect_malformed("{\"kv\": {\"dtype\": \"U8\", \"shape\": [1]}}", 1,
                     "'kv': missing field 'data_offsets'");
    expect_malformed("{\"kv\": {\"dtype\": \"U8\", \"dtype\": \"U8\", \"shape\": [1], "
                     "\"data_offsets\": [0, 1]}}",
                     1, "'kv': duplicate field 'dtype'");
    expect_malformed("{\"kv\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1], "
                     "\"strides\": [1]}}",
                     1, "'kv': unknown field 'strides'");
    /* wrong types and values */
    expect_malformed("{\"a\": {\"dtype\": 5, \"shape\": [1], \"data_offsets\": [0, 1]}}", 1,
                     "'a': dtype is not a string");
    expect_malformed("{\"a\": {\"dtype\": \"F16\", \"shape\": [1], \"data_offsets\": [0, 2]}}",
                     2, "'a': unsupported dtype 'F16'");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": \"1\", \"data_offsets\": [0, 1]}}",
                     1, "'a': shape is not an array");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [-1], \"data_offsets\": [0, 1]}}",
                     1, "'a': shape[0]");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1, 1.5], \"data_offsets\": [0, 1]}}",
                     1, "'a': shape[1]");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1, \"2\"], "
                     "\"data_offsets\": [0, 2]}}",
                     2, "'a': shape[1]");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1e300], \"data_offsets\": [0, 1]}}",
                     1, "'a': shape[0]");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,1], "
                     "\"data_offsets\": [0, 1]}}",
                     1, "'a': more than 8 dimensions");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0]}}", 1,
                     "'a': data_offsets");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1, 2]}}",
                     2, "'a': data_offsets");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, \"1\"]}}",
                     1, "'a': data_offsets");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": {}}}", 1,
                     "'a': data_offsets");
    /* offsets and sizes */
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [2, 1]}}", 4,
                     "'a': data_offsets begin 2 > end 1");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [8], \"data_offsets\": [0, 8]}}", 7,
                     "'a': data_offsets end 8 is past");
    expect_malformed("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4]}}", 8,
                     "'a': data_offsets hold 4 bytes but its F32 shape needs 8");
    expect_malformed("{\"big\": {\"dtype\": \"F32\", \"shape\": [4503599627370496, "
                     "4503599627370496], \"data_offsets\": [0, 16]}}",
                     16, "'big': byte size of its shape overflows");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]}, "
                     "\"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [3, 7]}}",
                     8, "tensors 'a' and 'b' overlap");
    expect_malformed("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}, "
                     "\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [1, 2]}}",
                     2, "duplicate header key 'a'");
    /* metadata */
    expect_malformed("{\"__metadata__\": [1]}", 0, "__metadata__ is not an object");
    expect_malformed("{\"__metadata__\": {\"window\": 128}}", 0, "metadata 'window' is not a "
                                                               "string");
    expect_malformed("{\"__metadata__\": {\"k\": \"1\", \"k\": \"2\"}}", 0,
                     "duplicate metadata key 'k'");
    expect_malformed("{\"__metadata__\": {}, \"__metadata__\": {}}", 0,
                     "duplicate header key '__metadata__'");
}

static void expect_parse(const void *bytes, size_t size, smla_status want, const char *needle)
{
    smla_st_file file;
    smla_tool_error err;
    err.message[0] = '\0';
    smla_status st = smla_st_parse(bytes, size, &file, &err);
    if (st != want || !strstr(err.message, needle)) {
        fprintf(stderr, "%zu bytes -> status %d '%s'; expected %d naming '%s'\n", size, (int)st,
                err.message, (int)want, needle);
        smla_test_failures++;
    }
    smla_st_file_free(&file);
}

static void test_header_length(void)
{
    unsigned char bytes[16] = {0};
    expect_parse(bytes, 0, SMLA_ERR_FILE_FORMAT, "too short");
    expect_parse(bytes, 7, SMLA_ERR_FILE_FORMAT, "too short");
    bytes[0] = 9; /* 9 header bytes, 8 present */
    expect_parse(bytes, 16, SMLA_ERR_FILE_FORMAT, "exceeds the 8 bytes");
    memset(bytes, 0xff, 8);
    expect_parse(bytes, 16, SMLA_ERR_FILE_FORMAT, "absurd");
    memcpy(bytes, "{\"a\": 1", 8); /* a JSON text where a length should be */
    expect_parse(bytes, 16, SMLA_ERR_FILE_FORMAT, "absurd");
    expect_parse(NULL, 0, SMLA_ERR_FILE_FORMAT, "too short");
    expect_parse(NULL, 8, SMLA_ERR_NULL_POINTER, "NULL");
    /* the smallest valid file: an empty header object */
    unsigned char empty[10] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    expect_parse(empty, sizeof empty, SMLA_OK, "");
}

/* Every strict prefix of a file whose tensors are all non-empty is refused; random byte
 * corruptions are parsed or refused, never crash (the sanitizer build checks reads). */
static void test_truncation_and_corruption(smla_rng *rng)
{
    for (int iter = 0; iter < 20; iter++) {
        random_file f;
        random_file_make(&f, rng, 0);
        void *bytes;
        size_t size;
        CHECK_STATUS(smla_st_encode(f.tensors, f.num_tensors, f.metadata, f.num_metadata,
                                    &bytes, &size, NULL),
                     SMLA_OK);
        for (size_t cut = 0; cut < size; cut++) {
            unsigned char *prefix = smla_test_alloc(cut); /* exact size: ASan sees overreads */
            memcpy(prefix, bytes, cut);
            smla_st_file file;
            smla_status st = smla_st_parse(prefix, cut, &file, NULL);
            if (st != SMLA_ERR_FILE_FORMAT) {
                fprintf(stderr, "prefix of %zu of %zu bytes: status %d\n", cut, size, (int)st);
                smla_test_failures++;
            }
            smla_st_file_free(&file);
            free(prefix);
        }
        unsigned char *copy = smla_test_alloc(size);
        for (int k = 0; k < 300; k++) {
            memcpy(copy, bytes, size);
            int flips = (int)smla_rng_range(rng, 1, 4);
            for (int j = 0; j < flips; j++)
                copy[smla_rng_range(rng, 0, (int64_t)size - 1)] =
                    (unsigned char)smla_rng_next(rng);
            smla_st_file file;
            smla_status st = smla_st_parse(copy, size, &file, NULL);
            CHECK(st == SMLA_OK || st == SMLA_ERR_FILE_FORMAT);
            for (size_t i = 0; st == SMLA_OK && i < file.num_tensors; i++) {
                const unsigned char *d = file.tensors[i].data;
                CHECK(d >= copy && d + file.tensors[i].nbytes <= copy + size);
            }
            smla_st_file_free(&file);
        }
        free(copy);
        free(bytes);
        random_file_free(&f);
    }
}

static void expect_unwritable(const smla_st_tensor *tensors, size_t n,
                              const smla_st_metadata *meta, size_t nmeta, smla_status want,
                              const char *needle)
{
    void *bytes = NULL;
    size_t size = 0;
    smla_tool_error err;
    err.message[0] = '\0';
    smla_status st = smla_st_encode(tensors, n, meta, nmeta, &bytes, &size, &err);
    if (st != want || !strstr(err.message, needle)) {
        fprintf(stderr, "encode -> %d '%s'; expected %d naming '%s'\n", (int)st, err.message,
                (int)want, needle);
        smla_test_failures++;
    }
    CHECK(bytes == NULL);
}

static void test_writer_refusals(void)
{
    float data[4] = {0};
    smla_st_tensor t[2];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 2; i++) {
        t[i].name = "x";
        t[i].dtype = SMLA_DTYPE_F32;
        t[i].ndim = 1;
        t[i].shape[0] = 4;
        t[i].data = data;
        t[i].nbytes = sizeof data;
    }
    expect_unwritable(t, 2, NULL, 0, SMLA_ERR_VALUE, "duplicate tensor name 'x'");
    t[1].name = "__metadata__";
    expect_unwritable(t, 2, NULL, 0, SMLA_ERR_VALUE, "tensor 1 has no usable name");
    t[1].name = "y";
    t[1].nbytes = 12;
    expect_unwritable(t, 2, NULL, 0, SMLA_ERR_SHAPE, "'y': nbytes 12 but its shape needs 16");
    t[1].nbytes = 16;
    t[1].dtype = SMLA_DTYPE_INVALID;
    expect_unwritable(t, 2, NULL, 0, SMLA_ERR_DTYPE, "'y': invalid dtype");
    t[1].dtype = SMLA_DTYPE_F32;
    t[1].data = NULL;
    expect_unwritable(t, 2, NULL, 0, SMLA_ERR_NULL_POINTER, "'y': data is NULL");
    t[1].data = data;
    smla_st_metadata meta[2] = {{"k", "1"}, {"k", "2"}};
    expect_unwritable(t, 2, meta, 2, SMLA_ERR_VALUE, "duplicate metadata key 'k'");
    meta[1].value = NULL;
    expect_unwritable(t, 2, meta, 2, SMLA_ERR_VALUE, "metadata entry 1 is incomplete");
    meta[1].value = "2";
    meta[1].key = NULL;
    expect_unwritable(t, 2, meta, 2, SMLA_ERR_VALUE, "metadata entry 1 is incomplete");
}

/* An empty metadata key is read (valid JSON), so it is written back too (found by
   fuzz_safetensors: the writer refused it). */
static void test_empty_metadata_key(void)
{
    const smla_st_metadata meta[2] = {{"", "kv"}, {"k", ""}};
    void *bytes;
    size_t size;
    smla_tool_error err;
    CHECK_STATUS(smla_st_encode(NULL, 0, meta, 2, &bytes, &size, &err), SMLA_OK);
    smla_st_file got;
    CHECK_STATUS(smla_st_parse(bytes, size, &got, &err), SMLA_OK);
    const char *v = smla_st_find_metadata(&got, "");
    CHECK(got.num_metadata == 2 && v && !strcmp(v, "kv"));
    v = smla_st_find_metadata(&got, "k");
    CHECK(v && !strcmp(v, ""));
    smla_st_file_free(&got);
    free(bytes);
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_safetensors"));
    test_round_trips(&rng);
    test_disk_round_trip(&rng);
    test_header_length();
    test_malformed_headers();
    test_truncation_and_corruption(&rng);
    test_writer_refusals();
    test_empty_metadata_key();
    return smla_test_finish("test_safetensors");
}
