/* smla: sparse MLA attention (DeepSeek-V4-class) on NVIDIA Hopper, with a CPU reference.
 *
 * One public header. Plain C11, opaque handles, status codes. No global state: every
 * call that can fail for a reason worth explaining records that reason on the context it
 * was given (smla_context_last_error). A context and the plans made from it are used by
 * one host thread at a time.
 *
 * Semantics of the attention operation: docs/API.md and DESIGN section 2.
 */
#ifndef SMLA_H
#define SMLA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SMLA_HEAD_DIM 512        /* D: width of q, k (= v) and out rows */
#define SMLA_DEFAULT_WINDOW 128  /* SWA window when positions are given */
#define SMLA_MAX_DIMS 4

/* The library's version, "MAJOR.MINOR.PATCH" (static; never NULL). */
const char *smla_version(void);

/* ---------------------------------------------------------------- status */

typedef enum smla_status {
    SMLA_OK = 0,
    SMLA_ERR_NULL_POINTER,       /* a required pointer is NULL */
    SMLA_ERR_DTYPE,              /* a tensor has a dtype the operation does not take */
    SMLA_ERR_SHAPE,              /* wrong rank, size or inconsistent sizes between tensors */
    SMLA_ERR_STRIDE,             /* a stride the operation cannot use (e.g. non-unit inner) */
    SMLA_ERR_ALIGNMENT,          /* a pointer or stride breaks the required byte alignment */
    SMLA_ERR_HEADS,              /* head count not in {8, 16, 32, 64, 128} */
    SMLA_ERR_KV_FORMAT,          /* unknown KV format, bad block size or block stride */
    SMLA_ERR_MEMORY_SPACE,       /* host and device pointers mixed, or wrong space for the backend */
    SMLA_ERR_VALUE,              /* a scalar or host-visible value out of range (NaN scale, ...) */
    SMLA_ERR_BACKEND,            /* the requested backend is not built or no GPU is present */
    SMLA_ERR_CAPACITY,           /* the batch does not fit the plan's capacity */
    SMLA_ERR_BATCH_ORDER,        /* a decode request follows a prefill request */
    SMLA_ERR_OUT_OF_MEMORY,      /* a host or device allocation failed */
    SMLA_ERR_CUDA,               /* a CUDA runtime call failed (message has the CUDA error) */
    SMLA_ERR_IO,                 /* a file could not be read or written */
    SMLA_ERR_FILE_FORMAT,        /* a file is malformed, truncated or inconsistent */
    SMLA_STATUS_COUNT
} smla_status;

/* A short static description of the code ("invalid head count", ...). Never NULL. */
const char *smla_status_string(smla_status status);

/* ---------------------------------------------------------------- context */

typedef struct smla_context smla_context;

/* Creates a context. It holds the last error message, the CPU thread count and, when a
 * GPU is present and CUDA is built in, the current device's properties. */
smla_status smla_context_create(smla_context **ctx);
void smla_context_destroy(smla_context *ctx);
/* The message of the last failed call made with ctx ("" after a success). */
const char *smla_context_last_error(const smla_context *ctx);
/* Threads for the CPU backend (default: the number of online processors). */
smla_status smla_context_set_num_threads(smla_context *ctx, int num_threads);
/* 1 when the library was built with CUDA and a usable GPU is present. */
int smla_context_has_cuda(const smla_context *ctx);

/* ---------------------------------------------------------------- tensors */

typedef enum smla_dtype {
    SMLA_DTYPE_INVALID = 0,
    SMLA_DTYPE_BF16,
    SMLA_DTYPE_FP8_E4M3,
    SMLA_DTYPE_F32,
    SMLA_DTYPE_I32,
    SMLA_DTYPE_U8
} smla_dtype;

size_t smla_dtype_size(smla_dtype dtype); /* bytes per element; 0 for INVALID */

typedef enum smla_memory {
    SMLA_MEMORY_HOST = 0,
    SMLA_MEMORY_DEVICE = 1
} smla_memory;

/* A strided view. stride[i] is in elements; a tensor whose strides are all zero is taken
 * as contiguous (row-major). data == NULL marks an optional tensor as absent. */
typedef struct smla_tensor {
    void *data;
    smla_dtype dtype;
    int ndim;
    int64_t shape[SMLA_MAX_DIMS];
    int64_t stride[SMLA_MAX_DIMS];
    smla_memory memory;
} smla_tensor;

/* Contiguous tensor helpers (they fill shape, row-major strides and the rest). */
smla_tensor smla_tensor_1d(void *data, smla_dtype dtype, int64_t n0, smla_memory memory);
smla_tensor smla_tensor_2d(void *data, smla_dtype dtype, int64_t n0, int64_t n1,
                           smla_memory memory);
smla_tensor smla_tensor_3d(void *data, smla_dtype dtype, int64_t n0, int64_t n1, int64_t n2,
                           smla_memory memory);

/* ---------------------------------------------------------------- KV cache formats */

typedef enum smla_kv_format {
    SMLA_KV_INVALID = 0,
    SMLA_KV_BF16,        /* 512 BF16 per token (1024 B) */
    SMLA_KV_FP8,         /* 512 E4M3 per token (512 B); per-tensor scale held by the caller */
    SMLA_KV_FP8_DS_MLA   /* 448 E4M3 + 64 BF16 data row (576 B) and 8 B scale row per token */
} smla_kv_format;

#define SMLA_DS_MLA_NOPE 448          /* E4M3 values per fp8_ds_mla token */
#define SMLA_DS_MLA_ROPE 64           /* BF16 values per fp8_ds_mla token */
#define SMLA_DS_MLA_TILE 64           /* NoPE values per UE8M0 scale */
#define SMLA_DS_MLA_DATA_BYTES 576    /* bytes of one data row */
#define SMLA_DS_MLA_SCALE_BYTES 8     /* bytes of one scale row (7 scales + 1 pad) */

/* "bf16", "fp8", "fp8_ds_mla" <-> enum; parse returns SMLA_KV_INVALID for anything else. */
const char *smla_kv_format_name(smla_kv_format format);
smla_kv_format smla_kv_format_parse(const char *name);
/* Bytes one token occupies (1024, 512, 584); 0 for an invalid format. */
size_t smla_kv_token_bytes(smla_kv_format format);
/* The natural byte size of one block of block_size tokens: token bytes x block_size, and
 * for fp8_ds_mla rounded up to a multiple of 576. 0 for an invalid format or size. */
int64_t smla_kv_block_bytes(smla_kv_format format, int32_t block_size);

/* A paged KV pool: num_blocks blocks of block_size token rows, block_stride bytes apart
 * (block_stride >= smla_kv_block_bytes). Slot s is row s % block_size of block
 * s / block_size; slots outside [0, num_blocks * block_size) are invalid. */
typedef struct smla_kv_pool {
    void *data;
    smla_kv_format format;
    int64_t num_blocks;
    int32_t block_size;
    int64_t block_stride;
    smla_memory memory;
} smla_kv_pool;

/* Fills a pool descriptor with the natural block stride. */
smla_kv_pool smla_kv_pool_make(void *data, smla_kv_format format, int64_t num_blocks,
                               int32_t block_size, smla_memory memory);

/* Pack float rows into a host pool and unpack them back (the reference quantiser: for fp8
 * a saturating round-to-nearest E4M3; for fp8_ds_mla a UE8M0 scale
 * 2^ceil(log2(amax/448)) per 64-value tile). rows holds 512 floats per token. */
smla_status smla_kv_pack_slot(const smla_kv_pool *pool, int64_t slot, const float *row);
smla_status smla_kv_unpack_slot(const smla_kv_pool *pool, int64_t slot, float *row);
smla_status smla_kv_pack(const smla_kv_pool *pool, const float *rows); /* every slot */
smla_status smla_kv_unpack(const smla_kv_pool *pool, float *rows);     /* every slot */

/* Scalar conversions (round to nearest even; E4M3 saturates to +-448, NaN stays NaN). */
float smla_bf16_to_float(uint16_t bits);
uint16_t smla_float_to_bf16(float value);
float smla_e4m3_to_float(uint8_t bits);
uint8_t smla_float_to_e4m3(float value);
float smla_ue8m0_to_float(uint8_t bits); /* 2^(bits - 127); 255 is NaN */

/* ---------------------------------------------------------------- batch planner */

typedef struct smla_plan smla_plan;

#define SMLA_SEGMENT_CAP_DEFAULT (-1) /* 1024 for FP8 queries, off for BF16 */
#define SMLA_DEFAULT_FP8_SEGMENT_CAP 1024

typedef struct smla_plan_capacity {
    int32_t max_tokens;    /* query tokens in one batch */
    int32_t max_requests;  /* requests in one batch */
    int32_t max_segments;  /* prefill segments; 0 = derived from the two above */
} smla_plan_capacity;

/* One model step's batch, requests in engine order: decodes first. */
typedef struct smla_batch {
    int32_t num_requests;            /* R */
    const int32_t *query_start_loc;  /* host, >= R+1 entries; only R+1 are read */
    const int32_t *seq_lens;         /* [R], KV length including the new tokens; device
                                        memory for a device plan, host for a host plan */
    int32_t decode_threshold;        /* query length <= this is a decode; 0 means 1 */
    smla_dtype query_dtype;          /* SMLA_DTYPE_FP8_E4M3 or SMLA_DTYPE_BF16 */
    int32_t segment_cap;             /* SMLA_SEGMENT_CAP_DEFAULT, 0 = off, or > 0 */
} smla_batch;

/* The plan's outputs. Array pointers live in the plan's memory (device for a device
 * plan) and keep their addresses for the plan's lifetime; host_* arrays are host copies
 * of the host-computed parts. */
typedef struct smla_plan_view {
    int32_t num_requests;
    int32_t num_decodes;          /* decode requests (the first num_decodes) */
    int32_t num_decode_tokens;
    int32_t num_prefill_tokens;
    int32_t num_segments;
    int32_t max_segment_len;      /* 0 when there are no segments */
    int32_t segment_cap;          /* the cap applied (0 = none) */
    smla_memory memory;
    int32_t *decode_query_starts; /* [num_decodes+1], from 0 */
    int32_t *decode_seq_lens;     /* [num_decodes], copied from the batch's seq_lens */
    int32_t *segment_query_starts;/* [num_segments+1], rebased to the first prefill token */
    int32_t *segment_seq_lens;    /* [num_segments], S - Q + segment end (computed on device) */
    int32_t *segment_requests;    /* [num_segments], request index in the batch */
    /* [2]: num_decodes and num_segments of the last build, in plan memory. Kernels read
     * them at run time, so a launch captured in a CUDA graph follows later builds. */
    const int32_t *counts;
    const int32_t *host_decode_query_starts;
    const int32_t *host_segment_query_starts;
    const int32_t *host_segment_requests;
    /* Device plans: [max_tokens], decode token t's position (its request's seq_len -
     * query length + its index in the request, at least -1), recomputed with the seq
     * lens, and SMLA_PLAN_NOT_DECODE for every other token (the attention kernels look a
     * token up there in one load). NULL for a host plan. */
    const int32_t *decode_token_positions;
    int32_t max_tokens;           /* the capacity in query tokens */
} smla_plan_view;

#define SMLA_PLAN_NOT_DECODE INT32_MIN /* decode_token_positions of a non-decode token */

/* memory: SMLA_MEMORY_DEVICE allocates device buffers and pinned host staging on the
 * current CUDA device; SMLA_MEMORY_HOST makes a host plan for the CPU backend. */
smla_status smla_plan_create(smla_context *ctx, const smla_plan_capacity *capacity,
                             smla_memory memory, smla_plan **plan);
void smla_plan_destroy(smla_plan *plan);
/* Builds the plan for batch. Device plans enqueue their device work on stream (a
 * cudaStream_t; NULL is the legacy default stream) and do not synchronise the host. */
smla_status smla_plan_build(smla_plan *plan, const smla_batch *batch, void *stream);
smla_status smla_plan_get_view(const smla_plan *plan, smla_plan_view *view);

/* ---------------------------------------------------------------- attention */

typedef enum smla_backend {
    SMLA_BACKEND_AUTO = 0,  /* from where the pointers live */
    SMLA_BACKEND_CPU,
    SMLA_BACKEND_CUDA
} smla_backend;

/* How the CUDA backend may split one token's KV entries across work items (split-KV,
 * merged by a combine step), to fill the GPU when a launch has few tokens. A plan's
 * prefill tokens are never split. */
typedef enum smla_split_mode {
    SMLA_SPLIT_AUTO = 0, /* split only launches too small to fill the GPU, into as many
                            pieces as fill it: fastest; a split token's last bits then
                            depend on the batch size */
    SMLA_SPLIT_FIXED,    /* split every token at fixed 512-entry boundaries: bit-identical
                            whatever the batch, at the cost of the partial results' traffic */
    SMLA_SPLIT_NONE      /* never split: bit-identical whatever the batch; small batches
                            leave most of the GPU idle */
} smla_split_mode;

/* Every input of the operation. Optional tensors are absent when their data is NULL.
 * Tokens are positioned by, at most one of: a plan (decode tokens first, then the
 * prefill segments), or cu_seqlens_q + seq_lens; with neither, every row is computed and
 * every SWA column up to its active length counts. */
typedef struct smla_attention_args {
    smla_tensor q;              /* [T][H][512] BF16 or FP8_E4M3 */
    smla_kv_pool swa;           /* required */
    smla_kv_pool extra;         /* optional (data NULL: SWA-only) */
    smla_tensor swa_indices;    /* [T][Wswa] I32 slot ids */
    smla_tensor extra_indices;  /* [T][Wext] I32, required iff extra is given */
    smla_tensor swa_lens;       /* optional [T] I32: active columns of each row */
    smla_tensor extra_lens;     /* optional [T] I32 */
    smla_tensor cu_seqlens_q;   /* optional [B+1] I32 */
    smla_tensor seq_lens;       /* optional [B] I32, required with cu_seqlens_q */
    const smla_plan *plan;      /* optional; built at least once (else SMLA_ERR_VALUE) */
    smla_tensor sinks;          /* optional [H] F32 */
    float bmm1_scale;           /* logit = bmm1_scale * (q . k) */
    float bmm2_scale;           /* out = bmm2_scale * sum p v */
    int32_t window;             /* SWA window with positions; 0 means 128 */
    smla_tensor out;            /* [T][H][512] BF16 */
    smla_tensor lse;            /* optional [T][H] F32 */
    smla_backend backend;
    void *stream;               /* cudaStream_t for the CUDA backend */
    smla_split_mode split;      /* CUDA backend only (the CPU reference never splits) */
} smla_attention_args;

/* Zero-initialised args with bmm2_scale = 1 and the default window. */
smla_attention_args smla_attention_args_default(void);

/* Validates every argument, then runs the operation on the chosen backend. */
smla_status smla_attention(smla_context *ctx, const smla_attention_args *args);

#ifdef __cplusplus
}
#endif

#endif /* SMLA_H */
