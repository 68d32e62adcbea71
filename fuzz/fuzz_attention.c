/* Fuzzes smla_attention's argument validation with host memory: every descriptor field
 * (ranks, sizes, strides, dtypes, memory spaces, pool geometry, positions by cu_seqlens or
 * by a plan, scalars, backend, split) comes from the input, and every pointer is NULL, one
 * byte off, or a real buffer that covers exactly the view it describes (or, for views
 * too large to allocate, a small stand-in: such a case is validated, never run). A case
 * that validates, has real buffers and is small runs on the CPU reference, so indices,
 * lens and positions of every invalid kind are read under the sanitizers; it must succeed
 * and write nothing outside the out and lse views. A refused case must have a message. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "problem.h"
#include "rng.h"

#define MAX_BUFFER (1 << 18) /* bytes of one real buffer */
#define MAX_WORK 4096        /* tokens x heads x index columns run on the reference */
#define MAX_OWNED 24
#define OUT_POISON 0xA5

static smla_context *ctx;
static smla_plan *plan;
static _Alignas(64) uint8_t stand_in[64];

typedef struct fuzz_case {
    fuzz_input in;
    smla_tool_rng rng;      /* bulk values (q, pools, indices) */
    void *owned[MAX_OWNED];
    int num_owned;
    int runnable;           /* every pointer given is a real buffer covering its view */
} fuzz_case;

/* How int32 elements are filled: slot ids of a pool of `rows` rows, active lengths of
 * `width` columns, or `count` listed values. host_read: the validation reads the values
 * of a host view (cu_seqlens_q), so a view too large for a real buffer gets NULL, not
 * the stand-in (whose declared size would be a lie the caller's contract forbids). */
typedef enum fill_kind { FILL_BYTES, FILL_SLOTS, FILL_LENS, FILL_LIST } fill_kind;

typedef struct fill {
    fill_kind kind;
    int64_t rows, width;
    const int32_t *list;
    int64_t count;
    int host_read;
} fill;

static void *own(fuzz_case *c, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p || c->num_owned == MAX_OWNED)
        abort();
    c->owned[c->num_owned++] = p;
    return p;
}

static int32_t rng_int(fuzz_case *c, int64_t lo, int64_t hi)
{
    return (int32_t)smla_tool_rng_range(&c->rng, lo, hi);
}

static int32_t element(fuzz_case *c, const fill *f, int64_t i)
{
    const int k = rng_int(c, 0, 15);
    switch (f->kind) {
    case FILL_SLOTS: {
        const int32_t invalid[] = {-1, INT32_MIN, -2, (int32_t)f->rows, (int32_t)(f->rows + 1), INT32_MAX};
        if (k < 10 && f->rows > 0 && f->rows <= INT32_MAX)
            return rng_int(c, 0, f->rows - 1);
        return invalid[k % 6];
    }
    case FILL_LENS: {
        const int32_t odd[] = {0, -1, INT32_MIN, INT32_MAX, (int32_t)fuzz_add(f->width, 1), (int32_t)f->width};
        return k < 10 && f->width < INT32_MAX ? rng_int(c, 0, f->width) : odd[k % 6];
    }
    case FILL_LIST:
        return i < f->count && k < 14 ? f->list[i] : (int32_t)smla_tool_rng_next(&c->rng);
    default:
        return (int32_t)smla_tool_rng_next(&c->rng);
    }
}

/* Bytes from the data pointer to one past the last element of the view (all-zero strides:
 * contiguous); -1 when it cannot be a real buffer. */
static int64_t view_bytes(const smla_tensor *t)
{
    const int64_t elem = (int64_t)smla_dtype_size(t->dtype);
    if (elem == 0 || t->ndim < 0 || t->ndim > SMLA_MAX_DIMS)
        return -1;
    int all_zero = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0 || t->shape[i] > MAX_BUFFER || t->stride[i] < 0)
            return -1;
        all_zero &= t->stride[i] == 0;
    }
    int64_t last = 0, contiguous = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0)
            return 0;
        const int64_t stride = all_zero ? contiguous : t->stride[i];
        if (stride > 0 && t->shape[i] - 1 > (MAX_BUFFER - last) / stride)
            return -1;
        last += (t->shape[i] - 1) * stride;
        if (contiguous <= MAX_BUFFER)
            contiguous *= t->shape[i]; /* <= 2^40 */
    }
    return last + 1 > MAX_BUFFER / elem ? -1 : (last + 1) * elem;
}

/* A buffer of bytes (+ off), filled, for data that starts off bytes in. */
static void *real_buffer(fuzz_case *c, int64_t bytes, int off, const fill *f, size_t elem)
{
    uint8_t *b = own(c, (size_t)bytes + (size_t)off);
    uint8_t *data = b + off;
    if (f->kind == FILL_BYTES || elem != sizeof(int32_t)) {
        for (int64_t i = 0; i < bytes; i += 8) {
            const uint64_t word = smla_tool_rng_next(&c->rng);
            memcpy(data + i, &word, bytes - i < 8 ? (size_t)(bytes - i) : 8);
        }
    } else {
        for (int64_t i = 0; i < bytes / 4; i++) {
            const int32_t v = element(c, f, i);
            memcpy(data + 4 * i, &v, 4);
        }
    }
    return data;
}

/* The data pointer of a view: NULL, one byte off, or a real buffer (a stand-in when
 * the view cannot have one: the case then only validates). */
static void *view_data(fuzz_case *c, int64_t bytes, size_t elem, const fill *f)
{
    const int how = fuzz_choice(&c->in, 16);
    if (how == 1)
        return NULL;
    const int off = how == 2;
    if (bytes < 0) {
        c->runnable = 0;
        return f->host_read ? NULL : stand_in + off;
    }
    return real_buffer(c, bytes, off, f, elem);
}

/* A tensor of ndim dims of dtype with the given sizes, as a caller may get it wrong:
 * contiguous, row-major strides, a padded first stride or any strides; sometimes one field
 * broken (rank, dtype, a size, a stride, the memory space). */
static smla_tensor make_tensor(fuzz_case *c, int ndim, smla_dtype dtype, const int64_t *shape,
                               const fill *f)
{
    smla_tensor t;
    memset(&t, 0, sizeof t);
    t.ndim = ndim;
    t.dtype = dtype;
    t.memory = SMLA_MEMORY_HOST;
    for (int i = 0; i < ndim; i++)
        t.shape[i] = shape[i];
    const int layout = fuzz_choice(&c->in, 4);
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0 && layout > 0; i--) {
        const int64_t strides[] = {stride, 0, 1, 512};
        t.stride[i] = layout == 3 ? fuzz_i64_from(&c->in, strides, 4) : stride;
        if (layout == 2 && i == 0 && ndim > 1)
            t.stride[0] = fuzz_add(t.stride[0], fuzz_choice(&c->in, 9));
        stride *= shape[i] > 0 && shape[i] < MAX_BUFFER ? shape[i] : 1;
    }
    const int dim = fuzz_choice(&c->in, SMLA_MAX_DIMS);
    switch (fuzz_choice(&c->in, 12)) {
    case 1: {
        const int32_t ranks[] = {0, 1, 2, 3, 4, -1, 5};
        t.ndim = fuzz_i32_from(&c->in, ranks, 7);
        break;
    }
    case 2: {
        const int32_t dtypes[] = {SMLA_DTYPE_INVALID, SMLA_DTYPE_BF16, SMLA_DTYPE_FP8_E4M3,
                                  SMLA_DTYPE_F32, SMLA_DTYPE_I32, SMLA_DTYPE_U8};
        t.dtype = (smla_dtype)fuzz_i32_from(&c->in, dtypes, 6);
        break;
    }
    case 3: {
        const int64_t sizes[] = {0, 1, -1, fuzz_add(t.shape[dim], 1), fuzz_add(t.shape[dim], -1), INT64_MAX};
        t.shape[dim] = fuzz_i64_from(&c->in, sizes, 6);
        break;
    }
    case 4: {
        const int64_t strides[] = {-1, 0, 1, 2, INT64_MAX / 2, fuzz_add(t.stride[dim], 1)};
        t.stride[dim] = fuzz_i64_from(&c->in, strides, 6);
        break;
    }
    case 5: {
        const int32_t spaces[] = {SMLA_MEMORY_DEVICE};
        t.memory = (smla_memory)fuzz_i32_from(&c->in, spaces, 1);
        break;
    }
    default:
        break;
    }
    t.data = view_data(c, view_bytes(&t), smla_dtype_size(t.dtype), f);
    return t;
}

static smla_kv_pool make_pool(fuzz_case *c)
{
    const int32_t formats[] = {SMLA_KV_FP8, SMLA_KV_BF16, SMLA_KV_FP8_DS_MLA, SMLA_KV_INVALID};
    const int32_t block_sizes[] = {16, 1, 2, 64, 0, -1};
    const int64_t block_counts[] = {2, 1, 0, 5, -1};
    smla_kv_pool pool = smla_kv_pool_make(NULL, (smla_kv_format)fuzz_i32_from(&c->in, formats, 4),
                                          fuzz_i64_from(&c->in, block_counts, 5),
                                          fuzz_i32_from(&c->in, block_sizes, 6),
                                          SMLA_MEMORY_HOST);
    const int64_t strides[] = {pool.block_stride, pool.block_stride + 16,
                               pool.block_stride + 1, pool.block_stride - 1, 0};
    pool.block_stride = fuzz_i64_from(&c->in, strides, 5);
    if (fuzz_choice(&c->in, 16) == 15)
        pool.memory = SMLA_MEMORY_DEVICE;
    const int sane = pool.num_blocks >= 0 && pool.block_stride >= 0 &&
                     (pool.num_blocks == 0 || pool.block_stride <= MAX_BUFFER / pool.num_blocks);
    const fill bytes = {FILL_BYTES, 0, 0, NULL, 0, 0};
    pool.data = view_data(c, sane ? pool.num_blocks * pool.block_stride : -1, 1, &bytes);
    return pool;
}

static int64_t pool_rows(const smla_kv_pool *pool)
{
    return pool->block_size > 0 && pool->num_blocks >= 0 &&
                   pool->num_blocks <= INT32_MAX / pool->block_size
               ? pool->num_blocks * pool->block_size
               : 0;
}

/* An index set [T][W] over pool, with optional lens [T]. */
static void make_index_set(fuzz_case *c, int64_t tokens, const smla_kv_pool *pool,
                           smla_tensor *indices, smla_tensor *lens)
{
    const int64_t widths[] = {3, 0, 1, 16, 128, 129, 512};
    const int64_t width = fuzz_i64_from(&c->in, widths, 7);
    const int64_t shape[2] = {tokens, width};
    const fill slots = {FILL_SLOTS, pool_rows(pool), 0, NULL, 0, 0};
    *indices = make_tensor(c, 2, SMLA_DTYPE_I32, shape, &slots);
    memset(lens, 0, sizeof *lens);
    if (fuzz_choice(&c->in, 2)) {
        const fill active = {FILL_LENS, 0, width, NULL, 0, 0};
        *lens = make_tensor(c, 1, SMLA_DTYPE_I32, shape, &active);
    }
}

/* cu_seqlens_q [B+1] and seq_lens [B]: ascending starts within the tokens (sometimes not)
 * and lengths around the query lengths (sometimes shorter, negative or huge). */
static void make_positions(fuzz_case *c, int64_t tokens, smla_attention_args *a)
{
    const int64_t counts[] = {1, 2, 0, 3, 8};
    const int64_t seqs = fuzz_i64_from(&c->in, counts, 5);
    const int64_t n = seqs >= 0 && seqs < 64 ? seqs : 0;
    int32_t cu[65], lens[64];
    cu[0] = 0;
    for (int64_t b = 0; b < n; b++) {
        const int32_t step = fuzz_choice(&c->in, 8) == 7 ? (int32_t)fuzz_u32(&c->in)
                                                           : fuzz_choice(&c->in, 4);
        cu[b + 1] = (int32_t)fuzz_add(cu[b], step);
        const int64_t prefixes[] = {0, 5, 200, -1, INT32_MAX, INT32_MIN};
        lens[b] = (int32_t)fuzz_add(step, fuzz_i64_from(&c->in, prefixes, 6));
    }
    if (n > 0 && fuzz_choice(&c->in, 4) == 0)
        cu[n] = (int32_t)tokens; /* every row positioned */
    const int64_t cu_shape[1] = {fuzz_add(seqs, 1)}, lens_shape[1] = {seqs};
    const fill cu_fill = {FILL_LIST, 0, 0, cu, n + 1, 1}, lens_fill = {FILL_LIST, 0, 0, lens, n, 0};
    a->cu_seqlens_q = make_tensor(c, 1, SMLA_DTYPE_I32, cu_shape, &cu_fill);
    a->seq_lens = make_tensor(c, 1, SMLA_DTYPE_I32, lens_shape, &lens_fill);
}

/* The shared host plan, rebuilt for a small batch (the build may fail: the plan then
 * keeps its last batch, which is fine to pass). */
static void build_plan(fuzz_case *c)
{
    int32_t qsl[9] = {0}, seq[8];
    const int32_t r = fuzz_choice(&c->in, 9);
    for (int32_t i = 0; i < r; i++) {
        const int32_t q = fuzz_choice(&c->in, 8);
        qsl[i + 1] = qsl[i] + q;
        seq[i] = q + fuzz_choice(&c->in, 200);
    }
    const int32_t caps[] = {SMLA_SEGMENT_CAP_DEFAULT, 0, 1, 2};
    const smla_batch batch = {r, qsl, seq, fuzz_choice(&c->in, 3),
                              fuzz_choice(&c->in, 2) ? SMLA_DTYPE_BF16 : SMLA_DTYPE_FP8_E4M3,
                              caps[fuzz_choice(&c->in, 4)]};
    smla_plan_build(plan, &batch, NULL);
}

static void make_scalars(fuzz_case *c, int64_t heads, smla_attention_args *a)
{
    const float scales[] = {0.0441941738f, 1.0f, 0.0f, -0.0f, NAN, INFINITY, -INFINITY,
                            FLT_MAX, 1e-40f};
    a->bmm1_scale = fuzz_float_from(&c->in, scales, 9);
    a->bmm2_scale = fuzz_float_from(&c->in, scales, 9);
    const int32_t windows[] = {0, 128, 1, 2, -1, INT32_MAX, INT32_MIN};
    a->window = fuzz_i32_from(&c->in, windows, 7);
    const int32_t backends[] = {SMLA_BACKEND_AUTO, SMLA_BACKEND_CPU, SMLA_BACKEND_CUDA};
    a->backend = (smla_backend)fuzz_i32_from(&c->in, backends, 3);
    const int32_t splits[] = {SMLA_SPLIT_AUTO, SMLA_SPLIT_FIXED, SMLA_SPLIT_NONE};
    a->split = (smla_split_mode)fuzz_i32_from(&c->in, splits, 3);
    if (fuzz_choice(&c->in, 2)) {
        const int64_t shape[1] = {heads};
        const fill bytes = {FILL_BYTES, 0, 0, NULL, 0, 0};
        a->sinks = make_tensor(c, 1, SMLA_DTYPE_F32, shape, &bytes);
    }
}

static smla_attention_args make_args(fuzz_case *c)
{
    smla_attention_args a = smla_attention_args_default();
    const int64_t token_counts[] = {2, 1, 0, 3, 5, 16, 64};
    const int64_t head_counts[] = {8, 16, 32, 64, 128, 0, 1, 7, 256, -8};
    const int64_t tokens = fuzz_i64_from(&c->in, token_counts, 7);
    const int64_t heads = fuzz_i64_from(&c->in, head_counts, 10);
    const fill bytes = {FILL_BYTES, 0, 0, NULL, 0, 0};
    const int64_t q_shape[3] = {tokens, heads, SMLA_HEAD_DIM};
    a.q = make_tensor(c, 3, fuzz_choice(&c->in, 2) ? SMLA_DTYPE_BF16 : SMLA_DTYPE_FP8_E4M3,
                      q_shape, &bytes);
    a.out = make_tensor(c, 3, SMLA_DTYPE_BF16, q_shape, &bytes);
    if (fuzz_choice(&c->in, 2))
        a.lse = make_tensor(c, 2, SMLA_DTYPE_F32, q_shape, &bytes);
    if (fuzz_choice(&c->in, 8) != 7)
        a.swa = make_pool(c);
    make_index_set(c, tokens, &a.swa, &a.swa_indices, &a.swa_lens);
    if (fuzz_choice(&c->in, 2)) {
        a.extra = make_pool(c);
        make_index_set(c, tokens, &a.extra, &a.extra_indices, &a.extra_lens);
    }
    const int positions = fuzz_choice(&c->in, 4);
    if (positions & 1)
        make_positions(c, tokens, &a);
    if (positions & 2) {
        build_plan(c);
        a.plan = plan;
    }
    make_scalars(c, heads, &a);
    return a;
}

/* Token x head x column work of a validated problem. */
static int64_t work(const smla_problem *p)
{
    return p->num_tokens * p->num_heads * ((int64_t)p->swa.width + p->extra.width + 1);
}

/* After a run: the bytes of the out and lse buffers outside their views kept their poison. */
static void check_outside_views(const smla_attention_args *a, const smla_problem *p)
{
    const uint8_t *out = a->out.data;
    const int64_t row = (int64_t)p->num_heads * SMLA_HEAD_DIM * 2;
    const int64_t stride = p->out_token_stride * 2;
    for (int64_t t = 0; t + 1 < a->out.shape[0]; t++)
        for (int64_t b = row; b < stride; b++)
            if (out[t * stride + b] != OUT_POISON)
                fuzz_fail("out: byte %lld of the gap after token %lld was written",
                          (long long)(b - row), (long long)t);
    if (!a->lse.data)
        return;
    const uint8_t *lse = a->lse.data;
    const int64_t lse_row = (int64_t)p->num_heads * 4, lse_stride = p->lse_token_stride * 4;
    for (int64_t t = 0; t + 1 < a->lse.shape[0]; t++)
        for (int64_t b = lse_row; b < lse_stride; b++)
            if (lse[t * lse_stride + b] != OUT_POISON)
                fuzz_fail("lse: the gap after token %lld was written", (long long)t);
}

static void poison_outputs(const smla_attention_args *a)
{
    const smla_tensor *views[2] = {&a->out, &a->lse};
    for (int i = 0; i < 2; i++)
        if (views[i]->data && views[i]->data != stand_in && views[i]->data != stand_in + 1) {
            const int64_t bytes = view_bytes(views[i]);
            if (bytes > 0)
                memset(views[i]->data, OUT_POISON, (size_t)bytes);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx) {
        const smla_plan_capacity capacity = {64, 8, 0};
        if (smla_context_create(&ctx) != SMLA_OK ||
            smla_plan_create(ctx, &capacity, SMLA_MEMORY_HOST, &plan) != SMLA_OK)
            abort();
        smla_context_set_num_threads(ctx, 1);
    }
    fuzz_case c;
    memset(&c, 0, sizeof c);
    c.in = (fuzz_input){data, size, 0};
    c.runnable = 1;
    smla_tool_rng_seed(&c.rng, fuzz_u64(&c.in));
    const smla_attention_args a = make_args(&c);
    smla_problem p;
    const smla_status st = smla_problem_from_args(ctx, &a, &p);
    if (st != SMLA_OK) {
        if (st >= SMLA_STATUS_COUNT || !smla_context_last_error(ctx)[0])
            fuzz_fail("refused with status %d and message '%s'", (int)st,
                      smla_context_last_error(ctx));
    } else if (c.runnable && p.memory == SMLA_MEMORY_HOST && work(&p) <= MAX_WORK) {
        poison_outputs(&a);
        const smla_status ran = smla_attention(ctx, &a);
        if (ran != SMLA_OK)
            fuzz_fail("a validated case failed: %s: %s", smla_status_string(ran),
                      smla_context_last_error(ctx));
        check_outside_views(&a, &p);
    }
    for (int i = 0; i < c.num_owned; i++)
        free(c.owned[i]);
    return 0;
}
