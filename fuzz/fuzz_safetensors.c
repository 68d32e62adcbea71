/* Fuzzes the safetensors reader and the problem-file loader: the input is a file's bytes.
 * A parsed file must have every tensor's bytes inside the input and must survive a
 * round trip through the writer unchanged; a file that describes a problem is run, as
 * `smla attend` runs it, on the CPU reference when small. */
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "problem_file.h"

#define MAX_WORK (1 << 14) /* tokens x heads x index columns run on the reference */

static smla_context *ctx;

static void touch_tensors(const smla_st_file *file, const uint8_t *data, size_t size)
{
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < file->num_tensors; i++) {
        const smla_st_tensor *t = &file->tensors[i];
        const uint8_t *p = t->data;
        if (t->nbytes && (p < data || p + t->nbytes > data + size))
            fuzz_fail("tensor '%s' points outside the input", t->name);
        for (size_t k = 0; k < t->nbytes; k++)
            sink ^= p[k];
    }
    for (size_t i = 0; i < file->num_metadata; i++)
        sink ^= (uint8_t)strlen(file->metadata[i].key) ^ (uint8_t)strlen(file->metadata[i].value);
    (void)sink;
}

static int same_tensor(const smla_st_tensor *a, const smla_st_tensor *b)
{
    return !strcmp(a->name, b->name) && a->dtype == b->dtype && a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) &&
           a->nbytes == b->nbytes && (!a->nbytes || !memcmp(a->data, b->data, a->nbytes));
}

/* Writer then reader: the same tensors and metadata. */
static void check_round_trip(const smla_st_file *file)
{
    void *bytes;
    size_t size;
    smla_tool_error error;
    if (smla_st_encode(file->tensors, file->num_tensors, file->metadata, file->num_metadata,
                       &bytes, &size, &error) != SMLA_OK)
        fuzz_fail("the writer refused a parsed file: %s", error.message);
    smla_st_file again;
    if (smla_st_parse(bytes, size, &again, &error) != SMLA_OK)
        fuzz_fail("the reader refused the writer's output: %s", error.message);
    if (again.num_tensors != file->num_tensors || again.num_metadata != file->num_metadata)
        fuzz_fail("round trip: %zu tensors and %zu metadata, expected %zu and %zu",
                  again.num_tensors, again.num_metadata, file->num_tensors, file->num_metadata);
    for (size_t i = 0; i < file->num_tensors; i++)
        if (!same_tensor(&file->tensors[i], &again.tensors[i]))
            fuzz_fail("round trip changed tensor '%s'", file->tensors[i].name);
    for (size_t i = 0; i < file->num_metadata; i++)
        if (strcmp(smla_st_find_metadata(&again, file->metadata[i].key), file->metadata[i].value))
            fuzz_fail("round trip changed metadata '%s'", file->metadata[i].key);
    smla_st_file_free(&again);
    free(bytes);
}

static int64_t columns(const smla_tensor *indices)
{
    return indices->data && indices->ndim == 2 ? indices->shape[1] : 0;
}

/* The problem on the CPU reference, as `smla attend` runs it, when it is small. */
static void run_problem(smla_problem_file *problem)
{
    smla_attention_args *a = &problem->args;
    const int64_t tokens = a->q.shape[0], heads = a->q.shape[1];
    const int64_t work = tokens * heads * (columns(&a->swa_indices) + columns(&a->extra_indices) + 1);
    if (heads > 128 || tokens > MAX_WORK || work > MAX_WORK)
        return;
    uint16_t *out = malloc((size_t)(tokens * heads * SMLA_HEAD_DIM) * sizeof *out + 1);
    float *lse = malloc((size_t)(tokens * heads) * sizeof *lse + 1);
    if (!out || !lse)
        abort();
    a->out = smla_tensor_3d(out, SMLA_DTYPE_BF16, tokens, heads, SMLA_HEAD_DIM, SMLA_MEMORY_HOST);
    a->lse = smla_tensor_2d(lse, SMLA_DTYPE_F32, tokens, heads, SMLA_MEMORY_HOST);
    const smla_status st = smla_attention(ctx, a);
    if (st != SMLA_OK && (st >= SMLA_STATUS_COUNT || !smla_context_last_error(ctx)[0]))
        fuzz_fail("smla_attention: status %d without a message", (int)st);
    free(out);
    free(lse);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx) {
        if (smla_context_create(&ctx) != SMLA_OK)
            abort();
        smla_context_set_num_threads(ctx, 1);
    }
    smla_st_file file;
    smla_tool_error error = {{0}};
    const smla_status st = smla_st_parse(data, size, &file, &error);
    if (st != SMLA_OK) {
        if (st != SMLA_ERR_FILE_FORMAT && st != SMLA_ERR_OUT_OF_MEMORY)
            fuzz_fail("smla_st_parse: status %d", (int)st);
        if (!error.message[0] || file.num_tensors || file.tensors || file.header)
            fuzz_fail("smla_st_parse failed without a message or left a file");
        smla_st_file_free(&file);
        return 0;
    }
    touch_tensors(&file, data, size);
    check_round_trip(&file);
    smla_problem_file problem;
    if (smla_problem_file_load(&file, &problem, &error) == SMLA_OK) {
        run_problem(&problem);
        smla_problem_file_free(&problem);
    } else if (!error.message[0]) {
        fuzz_fail("smla_problem_file_load failed without a message");
    }
    smla_st_file_free(&file);
    return 0;
}
