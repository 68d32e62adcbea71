/* smla attend: one attention problem from a safetensors file, its result to another. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "device_args.h"
#include "file_identity.h"
#include "problem_file.h"

static const char usage_text[] =
    "usage: smla attend --in PROBLEM.safetensors --out RESULT.safetensors "
    "[--backend cpu|cuda]\n"
    "\n"
    "Runs the sparse MLA attention (DESIGN section 2) on one problem and writes its result.\n"
    "Example: smla attend --in examples/problem.safetensors --out result.safetensors\n"
    "(examples/make_problem.py writes that file and says what it holds).\n"
    "\n"
    "  --backend  cpu: the CPU reference; cuda: the GPU (each tensor is copied to the\n"
    "             device). Default: cuda when built with CUDA and a GPU is present, else cpu.\n"
    "\n"
    "Input tensors (T tokens, H heads; any other tensor name is refused):\n"
    "  q              BF16 or F8_E4M3 [T, H, 512]                      required\n"
    "  swa_cache      KV pool (below)                                  required\n"
    "  swa_indices    I32 [T, Wswa] slot ids                           required\n"
    "  extra_cache    KV pool, with extra_indices I32 [T, Wext]        optional (SWA-only)\n"
    "  swa_lens, extra_lens   I32 [T] active columns per row           optional\n"
    "  cu_seqlens_q   I32 [B+1], with seq_lens I32 [B]: positions      optional\n"
    "  sinks          F32 [H]                                          optional\n"
    "  A KV pool is [num_blocks, block_size, 512] BF16 (kv_format bf16) or F8_E4M3 (fp8),\n"
    "  or for fp8_ds_mla U8 [num_blocks, block_bytes]: the raw blocks, block_bytes (the\n"
    "  block stride) at least the format's block size.\n"
    "Input metadata (strings):\n"
    "  kv_format      bf16 | fp8 | fp8_ds_mla                          required\n"
    "  block_size     tokens per block: required for fp8_ds_mla; for bf16/fp8 optional and\n"
    "                 then equal to the pools' dim 1\n"
    "  bmm1_scale, bmm2_scale   float32 (default 1)\n"
    "  window         SWA window with positions (default 128)\n"
    "  Other keys are ignored with a warning.\n"
    "\n"
    "Output tensors: out BF16 [T, H, 512] and lse F32 [T, H] (natural log, sink excluded);\n"
    "metadata backend = cpu | cuda.\n"
    "Rows that are not computed (padding: tokens outside every sequence of cu_seqlens_q)\n"
    "keep the initial values: out = 0 and lse = NaN. A token with no active entry gets\n"
    "out = 0 and lse = -inf.\n"
    "\n"
    "--out must not be the input file (the same path, or another path to that file).\n"
    "\n"
    "Exit status: 0 on success; 2 on any error (bad arguments, unreadable, malformed or\n"
    "inconsistent input, a failed run), with a message on stderr naming the culprit.\n";

typedef struct attend_options {
    const char *in, *out;
    smla_backend backend; /* AUTO: chosen from the context */
} attend_options;

/* Returns -1 when the command should run, else its exit code. */
static int parse_options(int argc, char **argv, attend_options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (i + 1 == argc || (strcmp(arg, "--in") && strcmp(arg, "--out") &&
                              strcmp(arg, "--backend"))) {
            fprintf(stderr, "smla attend: %s '%s'\n\n%s",
                    i + 1 == argc ? "missing value after" : "unknown option", arg, usage_text);
            return 2;
        }
        const char *value = argv[++i];
        if (!strcmp(arg, "--in")) {
            o->in = value;
        } else if (!strcmp(arg, "--out")) {
            o->out = value;
        } else if (!strcmp(value, "cpu") || !strcmp(value, "cuda")) {
            o->backend = value[1] == 'p' ? SMLA_BACKEND_CPU : SMLA_BACKEND_CUDA;
        } else {
            fprintf(stderr, "smla attend: --backend must be cpu or cuda, not '%s'\n", value);
            return 2;
        }
    }
    if (!o->in || !o->out) {
        fprintf(stderr, "smla attend: --in and --out are required\n\n%s", usage_text);
        return 2;
    }
    if (smla_tool_same_file(o->in, o->out)) {
        fprintf(stderr, "smla attend: --out '%s' is the input file --in '%s'; writing the "
                "result there would destroy the problem: give another --out\n", o->out, o->in);
        return 2;
    }
    return -1;
}

/* The result buffers: out zero-filled, lse NaN-filled, so that rows the operation does not
 * write are recognisable in the output file. */
typedef struct attend_outputs {
    uint16_t *out;
    float *lse;
    int64_t tokens;
    int32_t heads;
} attend_outputs;

static int outputs_make(smla_attention_args *a, attend_outputs *o)
{
    o->tokens = a->q.shape[0];
    o->heads = (int32_t)a->q.shape[1];
    const size_t rows = (size_t)o->tokens * (size_t)o->heads;
    o->out = calloc(rows * SMLA_HEAD_DIM + 1, sizeof *o->out);
    o->lse = malloc((rows + 1) * sizeof *o->lse);
    if (!o->out || !o->lse)
        return 0;
    for (size_t i = 0; i < rows; i++)
        o->lse[i] = NAN;
    a->out = smla_tensor_3d(o->out, SMLA_DTYPE_BF16, o->tokens, o->heads, SMLA_HEAD_DIM,
                            SMLA_MEMORY_HOST);
    a->lse = smla_tensor_2d(o->lse, SMLA_DTYPE_F32, o->tokens, o->heads, SMLA_MEMORY_HOST);
    return 1;
}

static smla_status write_outputs(const char *path, const attend_outputs *o,
                                 const char *backend, smla_tool_error *error)
{
    const size_t rows = (size_t)o->tokens * (size_t)o->heads;
    smla_st_tensor tensors[2] = {
        {"out", SMLA_DTYPE_BF16, 3, {o->tokens, o->heads, SMLA_HEAD_DIM}, o->out,
         rows * SMLA_HEAD_DIM * sizeof *o->out},
        {"lse", SMLA_DTYPE_F32, 2, {o->tokens, o->heads}, o->lse, rows * sizeof *o->lse},
    };
    const smla_st_metadata metadata[1] = {{"backend", backend}};
    return smla_st_write_file(path, tensors, 2, metadata, 1, error);
}

/* Runs args on the CUDA backend from its host tensors; the outputs come back to host. */
static smla_status run_cuda(smla_context *ctx, smla_attention_args *args,
                            smla_tool_error *error)
{
#ifdef SMLA_WITH_CUDA
    if (!smla_context_has_cuda(ctx))
        return smla_tool_fail(error, SMLA_ERR_BACKEND,
                              "--backend cuda: no usable GPU is present");
    smla_device_args device;
    smla_status st = smla_device_args_upload(args, &device, error);
    if (st != SMLA_OK)
        return st;
    device.args.backend = SMLA_BACKEND_CUDA;
    st = smla_attention(ctx, &device.args);
    if (st != SMLA_OK)
        smla_tool_fail(error, st, "%s: %s", smla_status_string(st),
                       smla_context_last_error(ctx));
    else
        st = smla_device_args_download(&device, args, error);
    smla_device_args_free(&device);
    return st;
#else
    (void)ctx;
    (void)args;
    return smla_tool_fail(error, SMLA_ERR_BACKEND,
                          "--backend cuda: this smla was built without CUDA");
#endif
}

static smla_status run(smla_context *ctx, smla_attention_args *args, smla_tool_error *error)
{
    if (args->backend == SMLA_BACKEND_CUDA)
        return run_cuda(ctx, args, error);
    smla_status st = smla_attention(ctx, args);
    if (st != SMLA_OK)
        smla_tool_fail(error, st, "%s: %s", smla_status_string(st),
                       smla_context_last_error(ctx));
    return st;
}

static void warn_unknown_metadata(const char *path, const smla_st_file *file)
{
    for (size_t i = 0; i < file->num_metadata; i++)
        if (!smla_problem_file_knows_metadata(file->metadata[i].key))
            fprintf(stderr, "smla attend: warning: %s: ignoring unknown metadata key '%.80s'\n",
                    path, file->metadata[i].key);
}

/* Reads the problem; warns about metadata it ignores. */
static smla_status read_problem(const char *path, smla_problem_file *problem,
                                smla_tool_error *error)
{
    smla_st_file file;
    memset(problem, 0, sizeof *problem);
    smla_status st = smla_st_read_file(path, &file, error);
    if (st == SMLA_OK)
        st = smla_problem_file_load(&file, problem, error);
    if (st == SMLA_OK)
        warn_unknown_metadata(path, &file);
    smla_st_file_free(&file);
    return st;
}

/* Runs the loaded problem on the chosen backend and writes the result file. */
static smla_status attend(const attend_options *opt, smla_problem_file *problem,
                          attend_outputs *outputs, const char **backend,
                          smla_tool_error *error)
{
    smla_attention_args *args = &problem->args;
    smla_context *ctx = NULL;
    if (!outputs_make(args, outputs))
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "out of memory for the outputs");
    if (smla_context_create(&ctx) != SMLA_OK)
        return smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "cannot create a context");
    args->backend = opt->backend;
    if (opt->backend == SMLA_BACKEND_AUTO)
        args->backend = smla_context_has_cuda(ctx) ? SMLA_BACKEND_CUDA : SMLA_BACKEND_CPU;
    *backend = args->backend == SMLA_BACKEND_CUDA ? "cuda" : "cpu";
    smla_status st = run(ctx, args, error);
    smla_context_destroy(ctx);
    if (st == SMLA_OK)
        st = write_outputs(opt->out, outputs, *backend, error);
    return st;
}

int smla_cmd_attend(int argc, char **argv)
{
    attend_options opt;
    const int code = parse_options(argc, argv, &opt);
    if (code >= 0)
        return code;
    smla_tool_error error = {{0}};
    smla_problem_file problem;
    attend_outputs outputs = {0};
    const char *backend = "";
    smla_status st = read_problem(opt.in, &problem, &error);
    if (st == SMLA_OK)
        st = attend(&opt, &problem, &outputs, &backend, &error);
    if (st == SMLA_OK)
        printf("smla attend: wrote %s: out [%lld, %d, %d] BF16, lse [%lld, %d] F32 (%s)\n",
               opt.out, (long long)outputs.tokens, (int)outputs.heads, SMLA_HEAD_DIM,
               (long long)outputs.tokens, (int)outputs.heads, backend);
    else
        fprintf(stderr, "smla attend: %s: %s\n", opt.in, error.message);
    smla_problem_file_free(&problem);
    free(outputs.out);
    free(outputs.lse);
    return st == SMLA_OK ? 0 : 2;
}
