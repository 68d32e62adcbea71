/* Validation of smla_attention's arguments (DESIGN section 2, smla.h): each bad argument
 * gets its own status and a message naming it; on success, a filled smla_problem.
 *
 * Order of the checks: each tensor's own layout, then the relations between them, then
 * the memory space (which picks the backend), then alignment for that space, and last
 * the values that can be read on the host. */
#include <math.h>
#include <string.h>

#include "kv_format.h"
#include "plan.h"
#include "problem.h"
#include "validate_tensor.h"

#define DEVICE_ALIGN 16 /* the kernels' 16-byte vector loads */
#define MAX_POINTERS 16

/* Everything checked so far, for the later stages. */
typedef struct checked_args {
    smla_context *ctx;
    const smla_attention_args *args;
    smla_problem *problem;
    smla_checked_tensor q, out, lse, swa_indices, extra_indices, swa_lens, extra_lens;
    smla_checked_tensor cu_seqlens_q, seq_lens, sinks;
    int has_positions;
    const char *part_name[SMLA_MAX_POSITION_PARTS]; /* the query starts of each part */
    /* Every non-NULL pointer and the memory it claims, for the backend choice. */
    const char *pointer_name[MAX_POINTERS];
    smla_memory pointer_memory[MAX_POINTERS];
    int num_pointers;
} checked_args;

static void note_pointer(checked_args *c, const char *name, const void *data,
                         smla_memory memory)
{
    if (data == NULL)
        return;
    c->pointer_name[c->num_pointers] = name;
    c->pointer_memory[c->num_pointers] = memory;
    c->num_pointers++;
}

/* A required tensor may have no storage only when it has no elements. */
static smla_status require_tensor(checked_args *c, const char *name, const smla_tensor *t,
                                  int ndim)
{
    if (t->data == NULL && !smla_tensor_is_empty(t, ndim))
        return smla_fail(c->ctx, SMLA_ERR_NULL_POINTER, "%s is required but %s.data is NULL",
                         name, name);
    return SMLA_OK;
}

static int supported_heads(int64_t heads)
{
    return heads == 8 || heads == 16 || heads == 32 || heads == 64 || heads == 128;
}

/* A [T][H][512] tensor with unit dim stride, head stride 512 and a token stride of at
 * least one token's worth of heads. */
static smla_status check_token_rows(checked_args *c, smla_checked_tensor *t)
{
    smla_status st = smla_check_stride_eq(c->ctx, t, 2, 1);
    if (st == SMLA_OK)
        st = smla_check_stride_eq(c->ctx, t, 1, SMLA_HEAD_DIM);
    if (st == SMLA_OK)
        st = smla_check_stride_min(c->ctx, t, 0, t->shape[1] * SMLA_HEAD_DIM);
    return st;
}

static smla_status check_q(checked_args *c)
{
    const smla_tensor *q = &c->args->q;
    smla_status st = require_tensor(c, "q", q, 3);
    if (st == SMLA_OK)
        st = smla_check_tensor(c->ctx, "q", q, 3, SMLA_DTYPE_BF16, SMLA_DTYPE_FP8_E4M3, &c->q);
    if (st == SMLA_OK)
        st = smla_check_extent(c->ctx, &c->q, 2, SMLA_HEAD_DIM, "the head dim");
    if (st != SMLA_OK)
        return st;
    if (!supported_heads(c->q.shape[1]))
        return smla_fail(c->ctx, SMLA_ERR_HEADS,
                         "q: %lld heads; supported head counts are 8, 16, 32, 64 and 128",
                         (long long)c->q.shape[1]);
    note_pointer(c, "q", q->data, q->memory);
    return check_token_rows(c, &c->q);
}

/* Size of dim 0 is the token count of q; of dim 1 (when heads) the head count of q. */
static smla_status check_per_token(checked_args *c, smla_checked_tensor *t, int heads)
{
    smla_status st = smla_check_extent(c->ctx, t, 0, c->q.shape[0], "the token count of q");
    if (st == SMLA_OK && heads)
        st = smla_check_extent(c->ctx, t, 1, c->q.shape[1], "the head count of q");
    return st;
}

static smla_status check_outputs(checked_args *c)
{
    const smla_tensor *out = &c->args->out, *lse = &c->args->lse;
    smla_status st = require_tensor(c, "out", out, 3);
    if (st == SMLA_OK)
        st = smla_check_tensor(c->ctx, "out", out, 3, SMLA_DTYPE_BF16, SMLA_DTYPE_INVALID,
                               &c->out);
    if (st == SMLA_OK)
        st = check_per_token(c, &c->out, 1);
    if (st == SMLA_OK)
        st = smla_check_extent(c->ctx, &c->out, 2, SMLA_HEAD_DIM, "the head dim");
    if (st == SMLA_OK)
        st = check_token_rows(c, &c->out);
    if (st != SMLA_OK)
        return st;
    note_pointer(c, "out", out->data, out->memory);
    if (lse->data == NULL)
        return SMLA_OK;
    st = smla_check_tensor(c->ctx, "lse", lse, 2, SMLA_DTYPE_F32, SMLA_DTYPE_INVALID, &c->lse);
    if (st == SMLA_OK)
        st = check_per_token(c, &c->lse, 1);
    if (st == SMLA_OK)
        st = smla_check_stride_eq(c->ctx, &c->lse, 1, 1);
    if (st == SMLA_OK)
        st = smla_check_stride_min(c->ctx, &c->lse, 0, c->lse.shape[1]);
    note_pointer(c, "lse", lse->data, lse->memory);
    return st;
}

static smla_status check_pool(checked_args *c, const char *name, const smla_kv_pool *pool)
{
    const char *reason = NULL;
    if (smla_kv_pool_check(pool, &reason) != SMLA_OK)
        return smla_fail(c->ctx, SMLA_ERR_KV_FORMAT,
                         "%s: %s (format %d = %s, block_size %d, num_blocks %lld, "
                         "block_stride %lld)",
                         name, reason, (int)pool->format, smla_kv_format_name(pool->format),
                         (int)pool->block_size,
                         (long long)pool->num_blocks, (long long)pool->block_stride);
    const int64_t rows = smla_kv_pool_rows(pool);
    if (rows > INT32_MAX)
        return smla_fail(c->ctx, SMLA_ERR_KV_FORMAT,
                         "%s: %lld rows do not fit the int32 slot ids", name, (long long)rows);
    if (pool->data == NULL && rows > 0)
        return smla_fail(c->ctx, SMLA_ERR_NULL_POINTER, "%s: %lld rows but %s.data is NULL",
                         name, (long long)rows, name);
    note_pointer(c, name, pool->data, pool->memory);
    return SMLA_OK;
}

/* An index set [T][W] with unit column stride and its optional lengths [T]. */
static smla_status check_index_set(checked_args *c, const char *name, const smla_tensor *t,
                                   smla_checked_tensor *checked, const char *lens_name,
                                   const smla_tensor *lens, smla_checked_tensor *checked_lens)
{
    smla_status st = require_tensor(c, name, t, 2);
    if (st == SMLA_OK)
        st = smla_check_tensor(c->ctx, name, t, 2, SMLA_DTYPE_I32, SMLA_DTYPE_INVALID, checked);
    if (st == SMLA_OK)
        st = check_per_token(c, checked, 0);
    if (st != SMLA_OK)
        return st;
    if (checked->shape[1] > INT32_MAX)
        return smla_fail(c->ctx, SMLA_ERR_SHAPE, "%s: %lld columns, more than int32 can count",
                         name, (long long)checked->shape[1]);
    st = smla_check_stride_eq(c->ctx, checked, 1, 1);
    if (st == SMLA_OK)
        st = smla_check_stride_min(c->ctx, checked, 0, checked->shape[1]);
    if (st != SMLA_OK)
        return st;
    note_pointer(c, name, t->data, t->memory);
    if (lens->data == NULL)
        return SMLA_OK;
    st = smla_check_tensor(c->ctx, lens_name, lens, 1, SMLA_DTYPE_I32, SMLA_DTYPE_INVALID,
                           checked_lens);
    if (st == SMLA_OK)
        st = check_per_token(c, checked_lens, 0);
    if (st == SMLA_OK)
        st = smla_check_stride_min(c->ctx, checked_lens, 0, 1);
    note_pointer(c, lens_name, lens->data, lens->memory);
    return st;
}

static void fill_index_set(smla_index_set *set, const smla_kv_pool *pool,
                           const smla_checked_tensor *indices, const smla_checked_tensor *lens)
{
    set->indices = indices->data;
    set->row_stride = indices->stride[0];
    set->width = (int32_t)indices->shape[1];
    set->lens = lens->data;
    set->lens_stride = lens->data ? lens->stride[0] : 0;
    set->pool = *pool;
    set->pool_rows = smla_kv_pool_rows(pool);
}

static smla_status check_kv(checked_args *c)
{
    const smla_attention_args *a = c->args;
    if (a->swa.data == NULL && a->swa.format == SMLA_KV_INVALID)
        return smla_fail(c->ctx, SMLA_ERR_NULL_POINTER, "swa: the SWA pool is required");
    smla_status st = check_pool(c, "swa", &a->swa);
    if (st == SMLA_OK)
        st = check_index_set(c, "swa_indices", &a->swa_indices, &c->swa_indices, "swa_lens",
                             &a->swa_lens, &c->swa_lens);
    if (st != SMLA_OK)
        return st;
    fill_index_set(&c->problem->swa, &a->swa, &c->swa_indices, &c->swa_lens);
    if (a->extra.data == NULL) { /* SWA-only: nothing of the extra set may be given */
        if (a->extra_indices.data != NULL || a->extra_lens.data != NULL)
            return smla_fail(c->ctx, SMLA_ERR_NULL_POINTER, "%s given but extra.data is NULL",
                             a->extra_indices.data ? "extra_indices" : "extra_lens");
        return SMLA_OK;
    }
    st = check_pool(c, "extra", &a->extra);
    if (st == SMLA_OK)
        st = check_index_set(c, "extra_indices", &a->extra_indices, &c->extra_indices,
                             "extra_lens", &a->extra_lens, &c->extra_lens);
    if (st == SMLA_OK)
        fill_index_set(&c->problem->extra, &a->extra, &c->extra_indices, &c->extra_lens);
    return st;
}

/* Parts with no sequence or no token compute nothing and are left out. */
static void add_part(checked_args *c, const char *name, const int32_t *cu,
                     const int32_t *seq_lens, int32_t num_seqs, int64_t token_offset,
                     int64_t num_tokens)
{
    smla_problem *p = c->problem;
    if (num_seqs <= 0 || num_tokens <= 0)
        return;
    c->part_name[p->num_parts] = name;
    smla_positions *part = &p->parts[p->num_parts++];
    part->cu = cu;
    part->seq_lens = seq_lens;
    part->num_seqs = num_seqs;
    part->token_offset = token_offset;
    part->num_tokens = num_tokens;
}

static smla_status check_cu_seqlens(checked_args *c)
{
    const smla_attention_args *a = c->args;
    smla_status st = smla_check_tensor(c->ctx, "cu_seqlens_q", &a->cu_seqlens_q, 1,
                                       SMLA_DTYPE_I32, SMLA_DTYPE_INVALID, &c->cu_seqlens_q);
    if (st != SMLA_OK)
        return st;
    const int64_t num_seqs = c->cu_seqlens_q.shape[0] - 1;
    if (num_seqs < 0 || num_seqs > INT32_MAX)
        return smla_fail(c->ctx, SMLA_ERR_SHAPE,
                         "cu_seqlens_q: %lld entries; it needs B + 1 with 0 <= B <= INT32_MAX",
                         (long long)c->cu_seqlens_q.shape[0]);
    st = smla_check_stride_eq(c->ctx, &c->cu_seqlens_q, 0, 1);
    if (st == SMLA_OK)
        st = smla_check_tensor(c->ctx, "seq_lens", &a->seq_lens, 1, SMLA_DTYPE_I32,
                               SMLA_DTYPE_INVALID, &c->seq_lens);
    if (st == SMLA_OK)
        st = smla_check_extent(c->ctx, &c->seq_lens, 0, num_seqs,
                               "the sequence count of cu_seqlens_q");
    if (st == SMLA_OK)
        st = smla_check_stride_eq(c->ctx, &c->seq_lens, 0, 1);
    if (st != SMLA_OK)
        return st;
    note_pointer(c, "cu_seqlens_q", a->cu_seqlens_q.data, a->cu_seqlens_q.memory);
    note_pointer(c, "seq_lens", a->seq_lens.data, a->seq_lens.memory);
    add_part(c, "cu_seqlens_q", a->cu_seqlens_q.data, a->seq_lens.data, (int32_t)num_seqs, 0,
             c->q.shape[0]);
    return SMLA_OK;
}

/* Plan part 0: the decode tokens from token 0; part 1: the prefill segments after them. */
static smla_status check_plan(checked_args *c)
{
    if (!c->args->plan->built)
        return smla_fail(c->ctx, SMLA_ERR_VALUE,
                         "plan: it has never been built (smla_plan_build), so it positions "
                         "no token");
    smla_plan_view view;
    const smla_status st = smla_plan_get_view(c->args->plan, &view);
    if (st != SMLA_OK)
        return smla_fail(c->ctx, st, "plan: its view cannot be read (%s)",
                         smla_status_string(st));
    const int64_t planned = (int64_t)view.num_decode_tokens + view.num_prefill_tokens;
    if (c->q.shape[0] < planned)
        return smla_fail(c->ctx, SMLA_ERR_SHAPE,
                         "plan: %d decode + %d prefill tokens, but q has only %lld tokens",
                         view.num_decode_tokens, view.num_prefill_tokens,
                         (long long)c->q.shape[0]);
    note_pointer(c, "plan", c->args->plan, view.memory);
    c->problem->has_plan = 1;
    c->problem->plan = view;
    add_part(c, "plan decode_query_starts", view.decode_query_starts, view.decode_seq_lens,
             view.num_decodes, 0, view.num_decode_tokens);
    add_part(c, "plan segment_query_starts", view.segment_query_starts,
             view.segment_seq_lens, view.num_segments, view.num_decode_tokens,
             view.num_prefill_tokens);
    return SMLA_OK;
}

static smla_status check_positions(checked_args *c)
{
    const smla_attention_args *a = c->args;
    const int has_cu = a->cu_seqlens_q.data != NULL, has_seq = a->seq_lens.data != NULL;
    smla_status st = SMLA_OK;
    if (a->plan != NULL && (has_cu || has_seq))
        return smla_fail(c->ctx, SMLA_ERR_VALUE,
                         "plan and cu_seqlens_q/seq_lens both given: position tokens by one");
    if (has_cu != has_seq)
        return smla_fail(c->ctx, SMLA_ERR_NULL_POINTER, "%s is required with %s",
                         has_cu ? "seq_lens" : "cu_seqlens_q",
                         has_cu ? "cu_seqlens_q" : "seq_lens");
    if (has_cu)
        st = check_cu_seqlens(c);
    else if (a->plan != NULL)
        st = check_plan(c);
    c->has_positions = has_cu || a->plan != NULL;
    return st;
}

static smla_status check_scalars(checked_args *c)
{
    const smla_attention_args *a = c->args;
    if (a->sinks.data != NULL) {
        smla_status st = smla_check_tensor(c->ctx, "sinks", &a->sinks, 1, SMLA_DTYPE_F32,
                                           SMLA_DTYPE_INVALID, &c->sinks);
        if (st == SMLA_OK)
            st = smla_check_extent(c->ctx, &c->sinks, 0, c->q.shape[1], "the head count of q");
        if (st == SMLA_OK)
            st = smla_check_stride_eq(c->ctx, &c->sinks, 0, 1);
        if (st != SMLA_OK)
            return st;
        note_pointer(c, "sinks", a->sinks.data, a->sinks.memory);
    }
    if (!isfinite(a->bmm1_scale))
        return smla_fail(c->ctx, SMLA_ERR_VALUE, "bmm1_scale is %g; it must be finite",
                         (double)a->bmm1_scale);
    if (!isfinite(a->bmm2_scale))
        return smla_fail(c->ctx, SMLA_ERR_VALUE, "bmm2_scale is %g; it must be finite",
                         (double)a->bmm2_scale);
    if (a->window < 0)
        return smla_fail(c->ctx, SMLA_ERR_VALUE, "window is %d; it must be >= 0 (0 means %d)",
                         (int)a->window, SMLA_DEFAULT_WINDOW);
    return SMLA_OK;
}

static const char *memory_name(smla_memory memory)
{
    return memory == SMLA_MEMORY_DEVICE ? "device" : "host";
}

/* Every pointer in one valid space; the backend asked for decides which. */
static smla_status choose_memory(checked_args *c)
{
    const smla_backend backend = c->args->backend;
    if (backend != SMLA_BACKEND_AUTO && backend != SMLA_BACKEND_CPU &&
        backend != SMLA_BACKEND_CUDA)
        return smla_fail(c->ctx, SMLA_ERR_VALUE, "backend: unknown value %d", (int)backend);
    const smla_split_mode split = c->args->split;
    if (split != SMLA_SPLIT_AUTO && split != SMLA_SPLIT_FIXED && split != SMLA_SPLIT_NONE)
        return smla_fail(c->ctx, SMLA_ERR_VALUE, "split: unknown value %d", (int)split);
#ifndef SMLA_WITH_CUDA
    if (backend == SMLA_BACKEND_CUDA)
        return smla_fail(c->ctx, SMLA_ERR_BACKEND,
                         "backend: CUDA requested but this smla was built without CUDA");
#endif
    for (int i = 0; i < c->num_pointers; i++)
        if (c->pointer_memory[i] != SMLA_MEMORY_HOST &&
            c->pointer_memory[i] != SMLA_MEMORY_DEVICE)
            return smla_fail(c->ctx, SMLA_ERR_MEMORY_SPACE,
                             "%s: memory is %d, neither host nor device", c->pointer_name[i],
                             (int)c->pointer_memory[i]);
    smla_memory memory = SMLA_MEMORY_HOST;
    if (backend == SMLA_BACKEND_CUDA)
        memory = SMLA_MEMORY_DEVICE;
    else if (backend == SMLA_BACKEND_AUTO && c->num_pointers > 0)
        memory = c->pointer_memory[0];
    for (int i = 0; i < c->num_pointers; i++) {
        if (c->pointer_memory[i] == memory)
            continue;
        if (backend == SMLA_BACKEND_AUTO)
            return smla_fail(c->ctx, SMLA_ERR_MEMORY_SPACE,
                             "%s is in %s memory but %s is in %s memory: spaces are mixed",
                             c->pointer_name[i], memory_name(c->pointer_memory[i]),
                             c->pointer_name[0], memory_name(memory));
        return smla_fail(c->ctx, SMLA_ERR_MEMORY_SPACE,
                         "%s is in %s memory but the %s backend needs %s memory",
                         c->pointer_name[i], memory_name(c->pointer_memory[i]),
                         backend == SMLA_BACKEND_CPU ? "CPU" : "CUDA", memory_name(memory));
    }
    c->problem->memory = memory;
    return SMLA_OK;
}

static smla_status check_pool_alignment(checked_args *c, const char *name,
                                        const smla_kv_pool *pool)
{
    if ((uintptr_t)pool->data % DEVICE_ALIGN != 0 || pool->block_stride % DEVICE_ALIGN != 0)
        return smla_fail(c->ctx, SMLA_ERR_ALIGNMENT,
                         "%s: data %p and block_stride %lld must be multiples of %d bytes",
                         name, pool->data, (long long)pool->block_stride, DEVICE_ALIGN);
    return SMLA_OK;
}

/* Device kernels load q, out and KV rows 16 bytes at a time; the rest, and everything on
 * the host, needs only the natural alignment of its element type. (Host pools are read
 * byte by byte, so they need none.) */
static smla_status check_alignment(checked_args *c)
{
    const int device = c->problem->memory == SMLA_MEMORY_DEVICE;
    smla_checked_tensor *rows[] = {&c->q, &c->out};
    smla_checked_tensor *elems[] = {&c->lse,        &c->swa_indices,  &c->extra_indices,
                                    &c->swa_lens,   &c->extra_lens,   &c->cu_seqlens_q,
                                    &c->seq_lens,   &c->sinks};
    smla_status st = SMLA_OK;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0] && st == SMLA_OK; i++)
        st = device ? smla_check_alignment(c->ctx, rows[i], DEVICE_ALIGN, 1u)
                    : smla_check_alignment(c->ctx, rows[i], rows[i]->elem_size, 0u);
    for (size_t i = 0; i < sizeof elems / sizeof elems[0] && st == SMLA_OK; i++)
        if (elems[i]->data != NULL)
            st = smla_check_alignment(c->ctx, elems[i], elems[i]->elem_size, 0u);
    if (st != SMLA_OK || !device)
        return st;
    st = check_pool_alignment(c, "swa", &c->args->swa);
    if (st == SMLA_OK && c->args->extra.data != NULL)
        st = check_pool_alignment(c, "extra", &c->args->extra);
    return st;
}

/* Host query starts must be usable to find a token's sequence: from >= 0, non-decreasing,
 * ending within the part's tokens. (Device values cannot be read here; the kernels treat
 * them safely whatever they are.) Sequence lengths are not checked: one shorter than its
 * query length only gives its first tokens positions < 0, so no active SWA column, in the
 * reference and in the kernels alike. */
static smla_status check_host_part(checked_args *c, const smla_positions *part,
                                   const char *name)
{
    if (part->cu[0] < 0)
        return smla_fail(c->ctx, SMLA_ERR_VALUE, "%s[0] is %d; it must be >= 0", name,
                         (int)part->cu[0]);
    for (int32_t b = 0; b < part->num_seqs; b++)
        if (part->cu[b + 1] < part->cu[b])
            return smla_fail(c->ctx, SMLA_ERR_VALUE, "%s decreases: [%d] = %d < [%d] = %d",
                             name, (int)(b + 1), (int)part->cu[b + 1], (int)b,
                             (int)part->cu[b]);
    if (part->cu[part->num_seqs] > part->num_tokens)
        return smla_fail(c->ctx, SMLA_ERR_VALUE, "%s[%d] = %d is past the %lld tokens", name,
                         (int)part->num_seqs, (int)part->cu[part->num_seqs],
                         (long long)part->num_tokens);
    return SMLA_OK;
}

static smla_status check_host_positions(checked_args *c)
{
    const smla_problem *p = c->problem;
    smla_status st = SMLA_OK;
    if (p->memory != SMLA_MEMORY_HOST)
        return SMLA_OK;
    for (int i = 0; i < p->num_parts && st == SMLA_OK; i++)
        st = check_host_part(c, &p->parts[i], c->part_name[i]);
    return st;
}

static void fill_problem(checked_args *c)
{
    const smla_attention_args *a = c->args;
    smla_problem *p = c->problem;
    p->num_tokens = c->q.shape[0];
    /* Positions whose parts hold no sequence leave every row padding: nothing to do. */
    if (c->has_positions && p->num_parts == 0)
        p->num_tokens = 0;
    p->num_heads = (int32_t)c->q.shape[1];
    p->q = c->q.data;
    p->q_dtype = a->q.dtype;
    p->q_token_stride = c->q.stride[0];
    p->window = a->window == 0 ? SMLA_DEFAULT_WINDOW : a->window;
    p->sinks = a->sinks.data;
    p->bmm1_scale = a->bmm1_scale;
    p->bmm2_scale = a->bmm2_scale;
    p->out = c->out.data;
    p->out_token_stride = c->out.stride[0];
    p->lse = a->lse.data;
    p->lse_token_stride = a->lse.data ? c->lse.stride[0] : 0;
    p->stream = a->stream;
    p->split = a->split;
}

smla_status smla_problem_from_args(smla_context *ctx, const smla_attention_args *args,
                                   smla_problem *problem)
{
    if (args == NULL || problem == NULL)
        return smla_fail(ctx, SMLA_ERR_NULL_POINTER, "%s is NULL", args ? "problem" : "args");
    memset(problem, 0, sizeof *problem);
    checked_args c;
    memset(&c, 0, sizeof c);
    c.ctx = ctx;
    c.args = args;
    c.problem = problem;
    smla_status st = check_q(&c);
    if (st == SMLA_OK)
        st = check_outputs(&c);
    if (st == SMLA_OK)
        st = check_kv(&c);
    if (st == SMLA_OK)
        st = check_positions(&c);
    if (st == SMLA_OK)
        st = check_scalars(&c);
    if (st == SMLA_OK)
        st = choose_memory(&c);
    if (st == SMLA_OK)
        st = check_alignment(&c);
    if (st == SMLA_OK)
        st = check_host_positions(&c);
    if (st != SMLA_OK)
        return st;
    fill_problem(&c);
    return smla_succeed(ctx);
}
