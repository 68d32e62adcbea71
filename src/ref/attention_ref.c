/* The CPU reference of the attention operation (DESIGN section 2): the oracle of every
 * GPU test and the CPU backend. Written for clarity, with double accumulation. Threads
 * take contiguous chunks of tokens; a token's result depends on its own inputs only, so
 * it is bit-identical whatever the thread count or the chunking. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"

#define D SMLA_HEAD_DIM

/* One thread's scratch for one token. */
typedef struct token_scratch {
    float *rows;     /* [entries][D] the decoded KV rows of the token's valid entries */
    double *q_t;     /* [D][H] the token's queries, heads innermost */
    double *weights; /* [entries][H] scores, then softmax numerators */
    double *acc;     /* [H][D] weighted row sums */
    double *factor;  /* [H] bmm2_scale / softmax denominator; 0 writes zeros */
} token_scratch;

/* Rounds a double to the nearest BF16, ties to even. Going through float first could
 * round twice: when the float lands exactly halfway between two BF16 values but the
 * double is not halfway, the double's side decides. */
static uint16_t double_to_bf16(double x)
{
    const float f = (float)x;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0xFFFFu) == 0x8000u && isfinite(f) && (double)f != x)
        return (uint16_t)((bits >> 16) + (fabs(x) > fabs((double)f) ? 1u : 0u));
    return smla_float_to_bf16(f);
}

/* Sets *pos to token t's absolute position and returns 1, or returns 0 when t is padding
 * (in no sequence of any part). A sequence's query length may exceed its seq_len; its
 * first tokens then get positions < 0 and so no active SWA column. */
static int token_position(const smla_problem *p, int64_t t, int64_t *pos)
{
    for (int i = 0; i < p->num_parts; i++) {
        const smla_positions *part = &p->parts[i];
        const int64_t rel = t - part->token_offset;
        if (rel < 0 || rel >= part->num_tokens)
            continue;
        /* b: the last sequence starting at or before rel (cu is non-decreasing); if any
         * sequence holds rel, it is that one. */
        int32_t lo = 0, hi = part->num_seqs - 1, b = -1;
        while (lo <= hi) {
            const int32_t mid = lo + (hi - lo) / 2;
            if (part->cu[mid] <= rel) {
                b = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        if (b < 0 || rel >= part->cu[b + 1])
            return 0;
        const int64_t query_len = (int64_t)part->cu[b + 1] - part->cu[b];
        *pos = (int64_t)part->seq_lens[b] - query_len + (rel - part->cu[b]);
        return 1;
    }
    return 0;
}

/* Active columns of token t's row: its length (or the full width), clamped to [0, width]. */
static int64_t active_columns(const smla_index_set *set, int64_t t)
{
    int64_t n = set->lens ? set->lens[t * set->lens_stride] : set->width;
    if (n < 0)
        n = 0;
    if (n > set->width)
        n = set->width;
    return n;
}

/* Decodes the valid entries among the first count columns of token t's row into rows,
 * after the *n already there. Invalid slot ids are skipped, never read. */
static smla_status gather_rows(const smla_index_set *set, int64_t t, int64_t count,
                               float *rows, int64_t *n)
{
    if (count <= 0) /* also an absent set, whose indices are NULL */
        return SMLA_OK;
    const int32_t *ids = set->indices + t * set->row_stride;
    for (int64_t j = 0; j < count; j++) {
        if (ids[j] < 0 || ids[j] >= set->pool_rows)
            continue;
        const smla_status st = smla_kv_unpack_slot(&set->pool, ids[j], rows + *n * D);
        if (st != SMLA_OK)
            return st;
        (*n)++;
    }
    return SMLA_OK;
}

static void load_queries(const smla_problem *p, int64_t t, double *q_t)
{
    const int32_t heads = p->num_heads;
    for (int32_t h = 0; h < heads; h++) {
        const int64_t first = t * p->q_token_stride + (int64_t)h * D;
        for (int d = 0; d < D; d++) {
            const int64_t i = first + d;
            q_t[d * heads + h] =
                p->q_dtype == SMLA_DTYPE_BF16
                    ? smla_bf16_to_float(((const uint16_t *)p->q)[i])
                    : smla_e4m3_to_float(((const uint8_t *)p->q)[i]);
        }
    }
}

/* weights[j][h] = bmm1_scale * (q_h . k_j). The loop runs heads innermost so that every
 * (j, h) sum still adds d in order 0..D-1. */
static void compute_scores(const smla_problem *p, const token_scratch *s, int64_t n)
{
    const int32_t heads = p->num_heads;
    for (int64_t j = 0; j < n; j++) {
        double *score = s->weights + j * heads;
        const float *k = s->rows + j * D;
        for (int32_t h = 0; h < heads; h++)
            score[h] = 0.0;
        for (int d = 0; d < D; d++) {
            const double kd = k[d];
            const double *q = s->q_t + d * heads;
            for (int32_t h = 0; h < heads; h++)
                score[h] += q[h] * kd;
        }
        for (int32_t h = 0; h < heads; h++)
            score[h] *= p->bmm1_scale;
    }
}

/* Head h's softmax over the n scores: replaces them by e^(s_j - m), sets the head's
 * output factor and returns its lse = log sum_j e^(s_j) (n >= 1; the sink not included). */
static double softmax_head(const smla_problem *p, const token_scratch *s, int64_t n,
                           int32_t h)
{
    const int32_t heads = p->num_heads;
    double max_score = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (s->weights[j * heads + h] > max_score)
            max_score = s->weights[j * heads + h];
    double lse_sum = 0.0;
    for (int64_t j = 0; j < n; j++)
        lse_sum += exp(s->weights[j * heads + h] - max_score);
    const double sink = p->sinks ? p->sinks[h] : -INFINITY; /* -inf: no sink */
    const double m = sink > max_score ? sink : max_score;
    double denominator = 0.0;
    for (int64_t j = 0; j < n; j++) {
        double *w = &s->weights[j * heads + h];
        *w = exp(*w - m);
        denominator += *w;
    }
    denominator += exp(sink - m);
    /* A +inf sink takes the whole softmax: out = 0. (Computed, it would be NaN, as
     * e^(sink - m) = e^(inf - inf).) */
    s->factor[h] = sink == INFINITY ? 0.0 : p->bmm2_scale / denominator;
    return max_score + log(lse_sum);
}

static void write_token(const smla_problem *p, int64_t t, const token_scratch *s,
                        const double *lse)
{
    const int32_t heads = p->num_heads;
    uint16_t *out = p->out + t * p->out_token_stride;
    for (int32_t h = 0; h < heads; h++)
        for (int d = 0; d < D; d++)
            out[(int64_t)h * D + d] =
                s->factor[h] == 0.0
                    ? 0
                    : double_to_bf16(s->acc[(int64_t)h * D + d] * s->factor[h]);
    if (p->lse)
        for (int32_t h = 0; h < heads; h++)
            p->lse[t * p->lse_token_stride + h] = (float)lse[h];
}

/* out and lse of token t from its n decoded rows. */
static void attend_rows(const smla_problem *p, int64_t t, token_scratch *s, int64_t n,
                        double *lse)
{
    const int32_t heads = p->num_heads;
    if (n == 0) { /* no active entry: out = 0, lse = -inf */
        for (int32_t h = 0; h < heads; h++) {
            s->factor[h] = 0.0;
            lse[h] = -INFINITY;
        }
        write_token(p, t, s, lse);
        return;
    }
    load_queries(p, t, s->q_t);
    compute_scores(p, s, n);
    for (int32_t h = 0; h < heads; h++)
        lse[h] = softmax_head(p, s, n, h);
    memset(s->acc, 0, sizeof(double) * (size_t)heads * D);
    for (int64_t j = 0; j < n; j++) {
        const float *k = s->rows + j * D;
        for (int32_t h = 0; h < heads; h++) {
            const double w = s->weights[j * heads + h];
            double *acc = s->acc + (int64_t)h * D;
            for (int d = 0; d < D; d++)
                acc[d] += w * k[d];
        }
    }
    write_token(p, t, s, lse);
}

static smla_status attend_token(const smla_problem *p, int64_t t, token_scratch *s,
                                double *lse)
{
    int64_t swa_count = active_columns(&p->swa, t);
    if (p->num_parts > 0) {
        int64_t pos;
        if (!token_position(p, t, &pos))
            return SMLA_OK; /* padding: neither out nor lse is written */
        int64_t in_window = pos + 1 < p->window ? pos + 1 : p->window;
        if (in_window < 0)
            in_window = 0;
        if (swa_count > in_window)
            swa_count = in_window;
    }
    int64_t n = 0;
    smla_status st = gather_rows(&p->swa, t, swa_count, s->rows, &n);
    if (st == SMLA_OK)
        st = gather_rows(&p->extra, t, active_columns(&p->extra, t), s->rows, &n);
    if (st == SMLA_OK)
        attend_rows(p, t, s, n, lse);
    return st;
}

/* The most entries a token of [begin, end) reads: the scratch's size. (Sized by the index
 * widths it could be far larger than any token needs: wide index rows with short lens.) */
static size_t most_active_entries(const smla_problem *p, int64_t begin, int64_t end)
{
    int64_t most = 0;
    for (int64_t t = begin; t < end; t++) {
        const int64_t n = active_columns(&p->swa, t) + active_columns(&p->extra, t);
        if (n > most)
            most = n;
    }
    return (size_t)most;
}

/* Tokens [begin, end) with their own scratch. */
static smla_status attend_tokens(const smla_problem *p, int64_t begin, int64_t end)
{
    const size_t heads = (size_t)p->num_heads;
    const size_t entries = most_active_entries(p, begin, end);
    token_scratch s;
    s.rows = malloc(sizeof(float) * (entries ? entries : 1) * D);
    s.q_t = malloc(sizeof(double) * D * heads);
    s.weights = malloc(sizeof(double) * (entries ? entries : 1) * heads);
    s.acc = malloc(sizeof(double) * heads * D);
    s.factor = malloc(sizeof(double) * heads);
    double *lse = malloc(sizeof(double) * heads);
    smla_status st = SMLA_OK;
    if (!s.rows || !s.q_t || !s.weights || !s.acc || !s.factor || !lse)
        st = SMLA_ERR_OUT_OF_MEMORY;
    for (int64_t t = begin; t < end && st == SMLA_OK; t++)
        st = attend_token(p, t, &s, lse);
    free(s.rows);
    free(s.q_t);
    free(s.weights);
    free(s.acc);
    free(s.factor);
    free(lse);
    return st;
}

typedef struct token_chunk {
    const smla_problem *problem;
    int64_t begin, end;
    smla_status status;
    pthread_t thread;
    int started;
} token_chunk;

static void *run_chunk(void *arg)
{
    token_chunk *chunk = arg;
    chunk->status = attend_tokens(chunk->problem, chunk->begin, chunk->end);
    return NULL;
}

smla_status smla_ref_attention(smla_context *ctx, const smla_problem *problem)
{
    const int64_t tokens = problem->num_tokens;
    int64_t threads = ctx && ctx->num_threads > 1 ? ctx->num_threads : 1;
    if (threads > tokens)
        threads = tokens > 0 ? tokens : 1;
    token_chunk *chunks = calloc((size_t)threads, sizeof *chunks);
    if (!chunks)
        return smla_fail(ctx, SMLA_ERR_OUT_OF_MEMORY, "reference attention: no memory");
    for (int64_t i = 0; i < threads; i++) {
        token_chunk *c = &chunks[i];
        c->problem = problem;
        c->begin = tokens * i / threads;
        c->end = tokens * (i + 1) / threads;
        /* Chunk 0 runs on this thread; so does any chunk whose thread cannot start. */
        c->started = i > 0 && pthread_create(&c->thread, NULL, run_chunk, c) == 0;
    }
    for (int64_t i = 0; i < threads; i++)
        if (!chunks[i].started)
            run_chunk(&chunks[i]);
    smla_status st = SMLA_OK;
    for (int64_t i = 0; i < threads; i++) {
        if (chunks[i].started)
            pthread_join(chunks[i].thread, NULL);
        if (st == SMLA_OK)
            st = chunks[i].status;
    }
    free(chunks);
    if (st != SMLA_OK)
        return smla_fail(ctx, st, "reference attention: %s (scratch memory or a KV row)",
                         smla_status_string(st));
    return smla_succeed(ctx);
}
