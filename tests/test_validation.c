/* Argument validation of smla_attention: from one valid call, each rule broken alone
 * gives its own status, a message that starts with the argument's name, and leaves the
 * outputs untouched; valid variants (empty problems, contiguous shorthand strides, the
 * engine index layout, optional tensors left out) pass and fill the problem as
 * documented. Device-memory cases never reach a kernel: they fail validation, or meet
 * SMLA_ERR_BACKEND when no GPU is usable. */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "problem.h"
#include "testutil.h"

#define D SMLA_HEAD_DIM
enum { T = 3, H = 8, W = 4, WX = 5, BLOCK = 4, BLOCKS = 2, SEQS = 2 };

/* Every buffer of the base call, each 16-byte aligned as device kernels need. */
typedef struct buffers {
    _Alignas(16) uint16_t q[T][H][D];
    _Alignas(16) uint16_t out[T][H][D];
    _Alignas(16) float lse[T][H];
    _Alignas(16) uint8_t swa_pool[BLOCKS * BLOCK * 1024];
    _Alignas(16) uint8_t extra_pool[BLOCKS * BLOCK * 512];
    _Alignas(16) int32_t swa_indices[T][W + WX]; /* the engine layout: [window | extra] */
    _Alignas(16) int32_t swa_lens[T];
    _Alignas(16) int32_t extra_lens[T];
    _Alignas(16) int32_t cu[SEQS + 1];
    _Alignas(16) int32_t seq_lens[SEQS];
    _Alignas(16) float sinks[H];
} buffers;

static buffers g_buf;
static smla_context *g_ctx;
static smla_plan *g_host_plan; /* one decode token, then a prefill of two */

/* A valid host call using every optional input. */
static smla_attention_args base_args(void)
{
    buffers *b = &g_buf;
    smla_attention_args a = smla_attention_args_default();
    a.q = smla_tensor_3d(b->q, SMLA_DTYPE_BF16, T, H, D, SMLA_MEMORY_HOST);
    a.swa = smla_kv_pool_make(b->swa_pool, SMLA_KV_BF16, BLOCKS, BLOCK, SMLA_MEMORY_HOST);
    a.extra = smla_kv_pool_make(b->extra_pool, SMLA_KV_FP8, BLOCKS, BLOCK, SMLA_MEMORY_HOST);
    a.swa_indices = smla_tensor_2d(b->swa_indices, SMLA_DTYPE_I32, T, W, SMLA_MEMORY_HOST);
    a.swa_indices.stride[0] = W + WX;
    a.extra_indices = smla_tensor_2d(&b->swa_indices[0][W], SMLA_DTYPE_I32, T, WX,
                                     SMLA_MEMORY_HOST);
    a.extra_indices.stride[0] = W + WX;
    a.swa_lens = smla_tensor_1d(b->swa_lens, SMLA_DTYPE_I32, T, SMLA_MEMORY_HOST);
    a.extra_lens = smla_tensor_1d(b->extra_lens, SMLA_DTYPE_I32, T, SMLA_MEMORY_HOST);
    a.cu_seqlens_q = smla_tensor_1d(b->cu, SMLA_DTYPE_I32, SEQS + 1, SMLA_MEMORY_HOST);
    a.seq_lens = smla_tensor_1d(b->seq_lens, SMLA_DTYPE_I32, SEQS, SMLA_MEMORY_HOST);
    a.sinks = smla_tensor_1d(b->sinks, SMLA_DTYPE_F32, H, SMLA_MEMORY_HOST);
    a.bmm1_scale = 0.04f;
    a.out = smla_tensor_3d(b->out, SMLA_DTYPE_BF16, T, H, D, SMLA_MEMORY_HOST);
    a.lse = smla_tensor_2d(b->lse, SMLA_DTYPE_F32, T, H, SMLA_MEMORY_HOST);
    return a;
}

/* Every memory field set to device. */
static void all_device(smla_attention_args *a)
{
    smla_tensor *tensors[] = {&a->q,        &a->swa_indices,  &a->extra_indices,
                              &a->swa_lens, &a->extra_lens,   &a->cu_seqlens_q,
                              &a->seq_lens, &a->sinks,        &a->out,
                              &a->lse};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
        tensors[i]->memory = SMLA_MEMORY_DEVICE;
    a->swa.memory = a->extra.memory = SMLA_MEMORY_DEVICE;
}

static void fill_inputs(smla_rng *rng)
{
    buffers *b = &g_buf;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < H * D; i++)
            b->q[t][i / D][i % D] = smla_float_to_bf16((float)smla_rng_normal(rng));
        for (int j = 0; j < W + WX; j++)
            b->swa_indices[t][j] = (int32_t)smla_rng_range(rng, -1, BLOCKS * BLOCK - 1);
        b->swa_lens[t] = (int32_t)smla_rng_range(rng, 0, W);
        b->extra_lens[t] = (int32_t)smla_rng_range(rng, 0, WX);
    }
    for (size_t i = 0; i < sizeof b->swa_pool / 2; i++) {
        const uint16_t v = smla_float_to_bf16((float)smla_rng_normal(rng));
        memcpy(b->swa_pool + 2 * i, &v, 2);
    }
    for (size_t i = 0; i < sizeof b->extra_pool; i++)
        b->extra_pool[i] = smla_float_to_e4m3((float)smla_rng_normal(rng));
    for (int h = 0; h < H; h++)
        b->sinks[h] = (float)smla_rng_normal(rng);
    b->cu[0] = 0;
    b->cu[1] = 2;
    b->cu[2] = 3;
    b->seq_lens[0] = 40;
    b->seq_lens[1] = 7;
}

/* ------------------------------------------------------------------ bad arguments */

typedef struct bad_case {
    const char *what;
    void (*edit)(smla_attention_args *a);
    smla_status status;
    const char *name; /* the message starts with it */
} bad_case;

/* One edit per rule. */
static void q_null(smla_attention_args *a) { a->q.data = NULL; }
static void out_null(smla_attention_args *a) { a->out.data = NULL; }
static void swa_absent(smla_attention_args *a) { memset(&a->swa, 0, sizeof a->swa); }
static void swa_data_null(smla_attention_args *a) { a->swa.data = NULL; }
static void swa_indices_null(smla_attention_args *a) { a->swa_indices.data = NULL; }
static void extra_indices_null(smla_attention_args *a) { a->extra_indices.data = NULL; }
static void extra_pool_null(smla_attention_args *a) { a->extra.data = NULL; }
static void extra_lens_alone(smla_attention_args *a)
{
    a->extra.data = NULL;
    a->extra_indices.data = NULL;
}
static void seq_lens_null(smla_attention_args *a) { a->seq_lens.data = NULL; }
static void cu_null(smla_attention_args *a) { a->cu_seqlens_q.data = NULL; }

static void q_f32(smla_attention_args *a) { a->q.dtype = SMLA_DTYPE_F32; }
static void out_fp8(smla_attention_args *a) { a->out.dtype = SMLA_DTYPE_FP8_E4M3; }
static void lse_bf16(smla_attention_args *a) { a->lse.dtype = SMLA_DTYPE_BF16; }
static void swa_indices_f32(smla_attention_args *a) { a->swa_indices.dtype = SMLA_DTYPE_F32; }
static void extra_indices_u8(smla_attention_args *a) { a->extra_indices.dtype = SMLA_DTYPE_U8; }
static void swa_lens_f32(smla_attention_args *a) { a->swa_lens.dtype = SMLA_DTYPE_F32; }
static void extra_lens_bf16(smla_attention_args *a) { a->extra_lens.dtype = SMLA_DTYPE_BF16; }
static void cu_f32(smla_attention_args *a) { a->cu_seqlens_q.dtype = SMLA_DTYPE_F32; }
static void seq_lens_u8(smla_attention_args *a) { a->seq_lens.dtype = SMLA_DTYPE_U8; }
static void sinks_bf16(smla_attention_args *a) { a->sinks.dtype = SMLA_DTYPE_BF16; }

static void q_rank(smla_attention_args *a) { a->q.ndim = 2; }
static void q_dim(smla_attention_args *a) { a->q.shape[2] = 256; }
static void q_negative(smla_attention_args *a) { a->q.shape[0] = -1; }
static void q_overflow(smla_attention_args *a) { a->q.stride[0] = INT64_MAX / 2; }
static void out_tokens(smla_attention_args *a) { a->out.shape[0] = T - 1; }
static void out_heads(smla_attention_args *a) { a->out.shape[1] = H / 2; }
static void out_dim(smla_attention_args *a) { a->out.shape[2] = 576; }
static void lse_heads(smla_attention_args *a) { a->lse.shape[1] = H + 1; }
static void swa_indices_tokens(smla_attention_args *a) { a->swa_indices.shape[0] = T + 1; }
static void extra_indices_tokens(smla_attention_args *a) { a->extra_indices.shape[0] = 1; }
static void swa_lens_tokens(smla_attention_args *a) { a->swa_lens.shape[0] = T - 1; }
static void cu_empty(smla_attention_args *a) { a->cu_seqlens_q.shape[0] = 0; }
static void seq_lens_count(smla_attention_args *a) { a->seq_lens.shape[0] = SEQS + 1; }
static void sinks_count(smla_attention_args *a) { a->sinks.shape[0] = H - 1; }
static void plan_too_many_tokens(smla_attention_args *a)
{
    a->cu_seqlens_q.data = a->seq_lens.data = NULL;
    a->plan = g_host_plan;
    a->q.shape[0] = a->out.shape[0] = a->lse.shape[0] = 1;
    a->swa_indices.shape[0] = a->extra_indices.shape[0] = 1;
    a->swa_lens.shape[0] = a->extra_lens.shape[0] = 1;
}

static void q_dim_stride(smla_attention_args *a) { a->q.stride[2] = 2; }
static void q_head_stride(smla_attention_args *a) { a->q.stride[1] = 2 * D; }
static void q_token_stride(smla_attention_args *a) { a->q.stride[0] = (H - 1) * D; }
static void q_negative_stride(smla_attention_args *a) { a->q.stride[0] = -H * D; }
static void out_head_stride(smla_attention_args *a) { a->out.stride[1] = D + 8; }
static void out_token_stride(smla_attention_args *a) { a->out.stride[0] = H * D - 1; }
static void lse_head_stride(smla_attention_args *a) { a->lse.stride[1] = 2; }
static void lse_token_stride(smla_attention_args *a) { a->lse.stride[0] = H - 1; }
static void swa_indices_column_stride(smla_attention_args *a) { a->swa_indices.stride[1] = 2; }
static void swa_indices_row_stride(smla_attention_args *a) { a->swa_indices.stride[0] = W - 1; }
static void extra_indices_row_stride(smla_attention_args *a) { a->extra_indices.stride[0] = 1; }
static void swa_lens_negative_stride(smla_attention_args *a) { a->swa_lens.stride[0] = -1; }
static void cu_stride(smla_attention_args *a) { a->cu_seqlens_q.stride[0] = 2; }
static void seq_lens_stride(smla_attention_args *a) { a->seq_lens.stride[0] = 3; }
static void sinks_stride(smla_attention_args *a) { a->sinks.stride[0] = 2; }

static void q_misaligned(smla_attention_args *a) { a->q.data = (char *)a->q.data + 1; }
static void out_misaligned(smla_attention_args *a) { a->out.data = (char *)a->out.data + 1; }
static void lse_misaligned(smla_attention_args *a) { a->lse.data = (char *)a->lse.data + 2; }
static void swa_indices_misaligned(smla_attention_args *a)
{
    a->swa_indices.data = (char *)a->swa_indices.data + 2;
}
static void sinks_misaligned(smla_attention_args *a) { a->sinks.data = (char *)a->sinks.data + 1; }
static void device_q_misaligned(smla_attention_args *a)
{
    all_device(a);
    a->q.data = (char *)a->q.data + 2;
}
static void device_q_token_stride(smla_attention_args *a)
{
    all_device(a);
    a->q.stride[0] = H * D + 4; /* 8 bytes more than a token */
}
static void device_out_misaligned(smla_attention_args *a)
{
    all_device(a);
    a->out.data = (char *)a->out.data + 8;
}
static void device_pool_misaligned(smla_attention_args *a)
{
    all_device(a);
    a->extra.data = (char *)a->extra.data + 8;
}
static void device_block_stride(smla_attention_args *a)
{
    all_device(a);
    a->swa.block_stride += 8;
}
static void device_indices_misaligned(smla_attention_args *a)
{
    all_device(a);
    a->extra_indices.data = (char *)a->extra_indices.data + 2;
}

static void heads_3(smla_attention_args *a)
{
    a->q.shape[1] = a->out.shape[1] = a->lse.shape[1] = a->sinks.shape[0] = 3;
}
static void heads_256(smla_attention_args *a)
{
    a->q.shape[0] = 1;
    a->q.shape[1] = 256;
}

static void swa_format(smla_attention_args *a) { a->swa.format = (smla_kv_format)7; }
static void swa_block_size(smla_attention_args *a) { a->swa.block_size = 0; }
static void swa_block_stride(smla_attention_args *a) { a->swa.block_stride = 1023 * BLOCK; }
static void swa_num_blocks(smla_attention_args *a) { a->swa.num_blocks = -1; }
static void swa_too_many_rows(smla_attention_args *a) { a->swa.num_blocks = (1ll << 31) / BLOCK; }
static void extra_format(smla_attention_args *a) { a->extra.format = SMLA_KV_INVALID; }

static void mixed_spaces(smla_attention_args *a) { a->swa_indices.memory = SMLA_MEMORY_DEVICE; }
static void mixed_pool(smla_attention_args *a) { a->extra.memory = SMLA_MEMORY_DEVICE; }
static void cpu_backend_device(smla_attention_args *a)
{
    all_device(a);
    a->backend = SMLA_BACKEND_CPU;
}
static void bad_memory_value(smla_attention_args *a) { a->lse.memory = (smla_memory)5; }
static void host_plan_device_tensors(smla_attention_args *a)
{
    all_device(a);
    a->cu_seqlens_q.data = a->seq_lens.data = NULL;
    a->plan = g_host_plan;
}

static void bmm1_nan(smla_attention_args *a) { a->bmm1_scale = NAN; }
static void bmm2_inf(smla_attention_args *a) { a->bmm2_scale = -INFINITY; }
static void window_negative(smla_attention_args *a) { a->window = -1; }
static void plan_and_cu(smla_attention_args *a) { a->plan = g_host_plan; }
static void cu_decreasing(smla_attention_args *a)
{
    static int32_t cu[] = {0, 2, 1};
    a->cu_seqlens_q.data = cu;
}
static void cu_negative_start(smla_attention_args *a)
{
    static int32_t cu[] = {-1, 2, 3};
    a->cu_seqlens_q.data = cu;
}
static void cu_past_tokens(smla_attention_args *a)
{
    static int32_t cu[] = {0, 2, T + 1};
    a->cu_seqlens_q.data = cu;
}
static void backend_unknown(smla_attention_args *a) { a->backend = (smla_backend)7; }

#ifdef SMLA_WITH_CUDA
#define CUDA_ON_HOST SMLA_ERR_MEMORY_SPACE /* built with CUDA: host pointers are wrong */
#define CUDA_ON_HOST_NAME "q"
#else
#define CUDA_ON_HOST SMLA_ERR_BACKEND
#define CUDA_ON_HOST_NAME "backend"
#endif
static void backend_cuda(smla_attention_args *a) { a->backend = SMLA_BACKEND_CUDA; }

static const bad_case bad_cases[] = {
    {"q.data NULL", q_null, SMLA_ERR_NULL_POINTER, "q"},
    {"out.data NULL", out_null, SMLA_ERR_NULL_POINTER, "out"},
    {"no swa pool", swa_absent, SMLA_ERR_NULL_POINTER, "swa"},
    {"swa.data NULL with rows", swa_data_null, SMLA_ERR_NULL_POINTER, "swa"},
    {"swa_indices NULL", swa_indices_null, SMLA_ERR_NULL_POINTER, "swa_indices"},
    {"extra pool without extra_indices", extra_indices_null, SMLA_ERR_NULL_POINTER,
     "extra_indices"},
    {"extra_indices without extra pool", extra_pool_null, SMLA_ERR_NULL_POINTER,
     "extra_indices"},
    {"extra_lens without extra set", extra_lens_alone, SMLA_ERR_NULL_POINTER, "extra_lens"},
    {"cu_seqlens_q without seq_lens", seq_lens_null, SMLA_ERR_NULL_POINTER, "seq_lens"},
    {"seq_lens without cu_seqlens_q", cu_null, SMLA_ERR_NULL_POINTER, "cu_seqlens_q"},

    {"q f32", q_f32, SMLA_ERR_DTYPE, "q"},
    {"out fp8", out_fp8, SMLA_ERR_DTYPE, "out"},
    {"lse bf16", lse_bf16, SMLA_ERR_DTYPE, "lse"},
    {"swa_indices f32", swa_indices_f32, SMLA_ERR_DTYPE, "swa_indices"},
    {"extra_indices u8", extra_indices_u8, SMLA_ERR_DTYPE, "extra_indices"},
    {"swa_lens f32", swa_lens_f32, SMLA_ERR_DTYPE, "swa_lens"},
    {"extra_lens bf16", extra_lens_bf16, SMLA_ERR_DTYPE, "extra_lens"},
    {"cu_seqlens_q f32", cu_f32, SMLA_ERR_DTYPE, "cu_seqlens_q"},
    {"seq_lens u8", seq_lens_u8, SMLA_ERR_DTYPE, "seq_lens"},
    {"sinks bf16", sinks_bf16, SMLA_ERR_DTYPE, "sinks"},

    {"q rank 2", q_rank, SMLA_ERR_SHAPE, "q"},
    {"q head dim 256", q_dim, SMLA_ERR_SHAPE, "q"},
    {"q negative size", q_negative, SMLA_ERR_SHAPE, "q"},
    {"q past int64 bytes", q_overflow, SMLA_ERR_SHAPE, "q"},
    {"out tokens", out_tokens, SMLA_ERR_SHAPE, "out"},
    {"out heads", out_heads, SMLA_ERR_SHAPE, "out"},
    {"out dim", out_dim, SMLA_ERR_SHAPE, "out"},
    {"lse heads", lse_heads, SMLA_ERR_SHAPE, "lse"},
    {"swa_indices tokens", swa_indices_tokens, SMLA_ERR_SHAPE, "swa_indices"},
    {"extra_indices tokens", extra_indices_tokens, SMLA_ERR_SHAPE, "extra_indices"},
    {"swa_lens tokens", swa_lens_tokens, SMLA_ERR_SHAPE, "swa_lens"},
    {"cu_seqlens_q empty", cu_empty, SMLA_ERR_SHAPE, "cu_seqlens_q"},
    {"seq_lens count", seq_lens_count, SMLA_ERR_SHAPE, "seq_lens"},
    {"sinks count", sinks_count, SMLA_ERR_SHAPE, "sinks"},
    {"plan tokens past q", plan_too_many_tokens, SMLA_ERR_SHAPE, "plan"},

    {"q dim stride", q_dim_stride, SMLA_ERR_STRIDE, "q"},
    {"q head stride", q_head_stride, SMLA_ERR_STRIDE, "q"},
    {"q token stride", q_token_stride, SMLA_ERR_STRIDE, "q"},
    {"q negative stride", q_negative_stride, SMLA_ERR_STRIDE, "q"},
    {"out head stride", out_head_stride, SMLA_ERR_STRIDE, "out"},
    {"out token stride", out_token_stride, SMLA_ERR_STRIDE, "out"},
    {"lse head stride", lse_head_stride, SMLA_ERR_STRIDE, "lse"},
    {"lse token stride", lse_token_stride, SMLA_ERR_STRIDE, "lse"},
    {"swa_indices column stride", swa_indices_column_stride, SMLA_ERR_STRIDE, "swa_indices"},
    {"swa_indices row stride", swa_indices_row_stride, SMLA_ERR_STRIDE, "swa_indices"},
    {"extra_indices row stride", extra_indices_row_stride, SMLA_ERR_STRIDE, "extra_indices"},
    {"swa_lens negative stride", swa_lens_negative_stride, SMLA_ERR_STRIDE, "swa_lens"},
    {"cu_seqlens_q stride", cu_stride, SMLA_ERR_STRIDE, "cu_seqlens_q"},
    {"seq_lens stride", seq_lens_stride, SMLA_ERR_STRIDE, "seq_lens"},
    {"sinks stride", sinks_stride, SMLA_ERR_STRIDE, "sinks"},

    {"host q odd address", q_misaligned, SMLA_ERR_ALIGNMENT, "q"},
    {"host out odd address", out_misaligned, SMLA_ERR_ALIGNMENT, "out"},
    {"host lse 2-byte address", lse_misaligned, SMLA_ERR_ALIGNMENT, "lse"},
    {"host swa_indices 2-byte address", swa_indices_misaligned, SMLA_ERR_ALIGNMENT,
     "swa_indices"},
    {"host sinks odd address", sinks_misaligned, SMLA_ERR_ALIGNMENT, "sinks"},
    {"device q 2-byte address", device_q_misaligned, SMLA_ERR_ALIGNMENT, "q"},
    {"device q token stride 8 bytes off", device_q_token_stride, SMLA_ERR_ALIGNMENT, "q"},
    {"device out 8-byte address", device_out_misaligned, SMLA_ERR_ALIGNMENT, "out"},
    {"device extra pool 8-byte address", device_pool_misaligned, SMLA_ERR_ALIGNMENT, "extra"},
    {"device swa block_stride 8 bytes off", device_block_stride, SMLA_ERR_ALIGNMENT, "swa"},
    {"device extra_indices 2-byte address", device_indices_misaligned, SMLA_ERR_ALIGNMENT,
     "extra_indices"},

    {"3 heads", heads_3, SMLA_ERR_HEADS, "q"},
    {"256 heads", heads_256, SMLA_ERR_HEADS, "q"},

    {"swa unknown format", swa_format, SMLA_ERR_KV_FORMAT, "swa"},
    {"swa block_size 0", swa_block_size, SMLA_ERR_KV_FORMAT, "swa"},
    {"swa block_stride short", swa_block_stride, SMLA_ERR_KV_FORMAT, "swa"},
    {"swa negative num_blocks", swa_num_blocks, SMLA_ERR_KV_FORMAT, "swa"},
    {"swa rows past int32", swa_too_many_rows, SMLA_ERR_KV_FORMAT, "swa"},
    {"extra invalid format", extra_format, SMLA_ERR_KV_FORMAT, "extra"},

    {"auto, indices on device", mixed_spaces, SMLA_ERR_MEMORY_SPACE, "swa_indices"},
    {"auto, extra pool on device", mixed_pool, SMLA_ERR_MEMORY_SPACE, "extra"},
    {"cpu backend, device memory", cpu_backend_device, SMLA_ERR_MEMORY_SPACE, "q"},
    {"memory value 5", bad_memory_value, SMLA_ERR_MEMORY_SPACE, "lse"},
    {"host plan, device tensors", host_plan_device_tensors, SMLA_ERR_MEMORY_SPACE, "plan"},

    {"bmm1_scale NaN", bmm1_nan, SMLA_ERR_VALUE, "bmm1_scale"},
    {"bmm2_scale -inf", bmm2_inf, SMLA_ERR_VALUE, "bmm2_scale"},
    {"window -1", window_negative, SMLA_ERR_VALUE, "window"},
    {"plan and cu_seqlens_q", plan_and_cu, SMLA_ERR_VALUE, "plan"},
    {"cu_seqlens_q decreasing", cu_decreasing, SMLA_ERR_VALUE, "cu_seqlens_q"},
    {"cu_seqlens_q starts below 0", cu_negative_start, SMLA_ERR_VALUE, "cu_seqlens_q"},
    {"cu_seqlens_q past T", cu_past_tokens, SMLA_ERR_VALUE, "cu_seqlens_q"},
    {"unknown backend", backend_unknown, SMLA_ERR_VALUE, "backend"},

    {"cuda backend, host memory", backend_cuda, CUDA_ON_HOST, CUDA_ON_HOST_NAME},
};

/* The message starts with the argument's name, followed by a character that cannot
 * continue the name ("swa" does not match "swa_indices ..."). */
static int names_argument(const char *message, const char *name)
{
    const size_t n = strlen(name);
    return strncmp(message, name, n) == 0 && message[n] != '_' &&
           !isalnum((unsigned char)message[n]);
}

static void test_bad_arguments(void)
{
    static uint16_t before[T][H][D];
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        for (size_t k = 0; k < sizeof before / sizeof(uint16_t); k++)
            (&g_buf.out[0][0][0])[k] = (uint16_t)(0xFFC1u + k);
        memcpy(before, g_buf.out, sizeof before);
        smla_attention_args a = base_args();
        c->edit(&a);
        const smla_status st = smla_attention(g_ctx, &a);
        const char *message = smla_context_last_error(g_ctx);
        if (st != c->status || !names_argument(message, c->name)) {
            fprintf(stderr, "case '%s': status %d (%s), message \"%s\"; expected %d (%s) and "
                            "a message starting with \"%s\"\n",
                    c->what, (int)st, smla_status_string(st), message, (int)c->status,
                    smla_status_string(c->status), c->name);
            smla_test_failures++;
        }
        CHECK(memcmp(before, g_buf.out, sizeof before) == 0);
    }
    /* Before any argument can be looked at. */
    CHECK_STATUS(smla_attention(NULL, NULL), SMLA_ERR_NULL_POINTER);
    CHECK_STATUS(smla_attention(g_ctx, NULL), SMLA_ERR_NULL_POINTER);
    CHECK(names_argument(smla_context_last_error(g_ctx), "args"));
}

/* ------------------------------------------------------------------ valid variants */

static smla_status problem_of(const smla_attention_args *a, smla_problem *p)
{
    return smla_problem_from_args(g_ctx, a, p);
}

static void test_valid_variants(void)
{
    smla_problem p;
    smla_attention_args a = base_args();
    CHECK_STATUS(smla_attention(g_ctx, &a), SMLA_OK);
    CHECK(smla_context_last_error(g_ctx)[0] == '\0');
    CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
    CHECK(p.num_tokens == T && p.num_heads == H && p.memory == SMLA_MEMORY_HOST);
    CHECK(p.swa.width == W && p.swa.row_stride == W + WX && p.swa.pool_rows == BLOCKS * BLOCK);
    CHECK(p.extra.indices == &g_buf.swa_indices[0][W] && p.extra.width == WX);
    CHECK(p.num_parts == 1 && p.parts[0].num_seqs == SEQS && p.parts[0].num_tokens == T);
    CHECK(p.window == SMLA_DEFAULT_WINDOW && p.lse_token_stride == H);

    /* window 0 means the default; explicit windows pass through */
    a.window = 0;
    CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
    CHECK(p.window == SMLA_DEFAULT_WINDOW);
    a.window = 3;
    CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
    CHECK(p.window == 3);

    /* all-zero strides: contiguous; a settable out row stride */
    a = base_args();
    memset(a.q.stride, 0, sizeof a.q.stride);
    memset(a.sinks.stride, 0, sizeof a.sinks.stride);
    a.out.shape[0] = a.lse.shape[0] = 2;
    a.q.shape[0] = a.swa_indices.shape[0] = a.extra_indices.shape[0] = 2;
    a.swa_lens.shape[0] = a.extra_lens.shape[0] = 2;
    a.out.stride[0] = H * D + H * D / 2;
    a.cu_seqlens_q.shape[0] = 2;
    a.seq_lens.shape[0] = 1;
    CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
    CHECK(p.q_token_stride == H * D && p.out_token_stride == H * D + H * D / 2);

    /* optional inputs left out; SWA only; FP8 queries */
    a = base_args();
    a.lse.data = a.sinks.data = a.swa_lens.data = NULL;
    a.cu_seqlens_q.data = a.seq_lens.data = NULL;
    a.extra.data = a.extra_indices.data = a.extra_lens.data = NULL;
    a.q.dtype = SMLA_DTYPE_FP8_E4M3;
    CHECK_STATUS(smla_attention(g_ctx, &a), SMLA_OK);
    CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
    CHECK(p.num_parts == 0 && p.extra.indices == NULL && p.extra.width == 0 && !p.lse);

    /* T = 0: a no-op, with or without storage; zero-width index sets with no storage */
    a = base_args();
    a.q.shape[0] = a.out.shape[0] = a.lse.shape[0] = 0;
    a.swa_indices.shape[0] = a.extra_indices.shape[0] = 0;
    a.swa_lens.shape[0] = a.extra_lens.shape[0] = 0;
    a.cu_seqlens_q.shape[0] = 1;
    a.seq_lens.shape[0] = 0;
    a.q.data = a.out.data = NULL;
    CHECK_STATUS(smla_attention(g_ctx, &a), SMLA_OK);
    a = base_args();
    a.swa_indices.shape[1] = a.extra_indices.shape[1] = 0;
    a.swa_indices.data = a.extra_indices.data = NULL;
    CHECK_STATUS(smla_attention(g_ctx, &a), SMLA_OK);

    /* a pool with no rows needs no storage; positions with no sequence compute nothing */
    a = base_args();
    a.swa.num_blocks = 0;
    a.swa.data = NULL;
    a.cu_seqlens_q.shape[0] = 1;
    a.seq_lens.shape[0] = 0;
    CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
    CHECK(p.num_tokens == 0 && p.num_parts == 0);

    /* each pool in its own format, fp8_ds_mla included */
    static _Alignas(16) uint8_t ds_pool[2 * 1728]; /* 2 x 584 B padded to 3 x 576 B */
    a = base_args();
    a.extra = smla_kv_pool_make(ds_pool, SMLA_KV_FP8_DS_MLA, 2, 2, SMLA_MEMORY_HOST);
    CHECK_STATUS(smla_attention(g_ctx, &a), SMLA_OK);

    /* a host plan positions the tokens */
    a = base_args();
    a.cu_seqlens_q.data = a.seq_lens.data = NULL;
    a.plan = g_host_plan;
    CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
    CHECK(p.num_parts == 2 && p.parts[0].num_tokens == 1 && p.parts[1].token_offset == 1 &&
          p.parts[1].num_tokens == 2);

    /* device memory that passes validation: no GPU, so the backend is unavailable */
    if (!smla_context_has_cuda(g_ctx)) {
        a = base_args();
        all_device(&a);
        CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
        CHECK(p.memory == SMLA_MEMORY_DEVICE);
        CHECK_STATUS(smla_attention(g_ctx, &a), SMLA_ERR_BACKEND);
        CHECK(smla_context_last_error(g_ctx)[0] != '\0');
        /* device values are not read: a decreasing cu_seqlens_q is the kernels' business */
        static int32_t cu[] = {0, 3, 1};
        a.cu_seqlens_q.data = cu;
        CHECK_STATUS(problem_of(&a, &p), SMLA_OK);
    }
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_validation"));
    if (smla_context_create(&g_ctx) != SMLA_OK)
        return 1;
    fill_inputs(&rng);
    /* the host plan: a decode request of one token, then a prefill of two */
    const smla_plan_capacity capacity = {16, 4, 0};
    const int32_t qsl[] = {0, 1, 3};
    const int32_t seq_lens[] = {9, 30};
    const smla_batch batch = {2, qsl, seq_lens, 0, SMLA_DTYPE_BF16, 0};
    CHECK_STATUS(smla_plan_create(g_ctx, &capacity, SMLA_MEMORY_HOST, &g_host_plan), SMLA_OK);
    CHECK_STATUS(smla_plan_build(g_host_plan, &batch, NULL), SMLA_OK);
    test_bad_arguments();
    test_valid_variants();
    smla_plan_destroy(g_host_plan);
    smla_context_destroy(g_ctx);
    return smla_test_finish("test_validation");
}
