/* Random engine-style batches for the determinism tests (CPU and GPU) and the GPU soak:
 * requests in engine order (decodes first) over two paged host KV pools, one index buffer
 * in the engine layout [T][window + topk] (extra_indices is the same buffer `window`
 * columns on) holding invalid slot ids of every kind, active lengths (some out of range)
 * and sinks. A batch is sized for max_tokens and max_requests once and refilled in place;
 * the GPU tests copy its arrays into device buffers of the same layout. */
#ifndef SMLA_TESTS_ENGINE_BATCH_H
#define SMLA_TESTS_ENGINE_BATCH_H

#include "smla.h"
#include "testutil.h"

typedef struct smla_test_pools {
    smla_kv_pool swa, extra; /* host, rows ~ N(0, 1) packed in the format */
} smla_test_pools;

void smla_test_pools_create(smla_kv_format format, int64_t swa_rows, int64_t extra_rows,
                            int32_t block_size, smla_rng *rng, smla_test_pools *pools);
void smla_test_pools_free(smla_test_pools *pools);

typedef struct smla_test_batch_config {
    int32_t heads;
    smla_dtype q_dtype;
    int32_t window;       /* SWA index columns, also the call's window */
    int32_t topk;         /* extra index columns */
    int32_t max_tokens, max_requests;
} smla_test_batch_config;

typedef struct smla_test_batch {
    smla_test_batch_config cfg;
    const smla_test_pools *pools;
    void *q;                     /* [max_tokens][heads][512] in q_dtype */
    int32_t *indices;            /* [max_tokens][window + topk] */
    int32_t *swa_lens, *extra_lens; /* [max_tokens] */
    float *sinks;                /* [heads] */
    float bmm1_scale;
    int32_t num_requests, num_tokens;
    int32_t *query_start_loc;    /* [max_requests + 1] */
    int32_t *seq_lens;           /* [max_requests] */
} smla_test_batch;

/* Allocates the batch (no requests yet) and draws its sinks and scale. */
void smla_test_batch_create(const smla_test_batch_config *cfg, const smla_test_pools *pools,
                            smla_rng *rng, smla_test_batch *b);
void smla_test_batch_free(smla_test_batch *b);

/* The requests: query_lens[r] new tokens after prefixes[r] cached ones (seq_len = sum). */
void smla_test_batch_set_requests(smla_test_batch *b, int32_t num_requests,
                                  const int32_t *query_lens, const int32_t *prefixes);
/* Random requests of exactly num_tokens tokens: some decodes of 1..threshold tokens first,
 * then prefills longer than threshold; prefixes up to max_prefix. With probability
 * short_fraction a request's seq_len is shorter than its query (a bad engine value). */
void smla_test_batch_random_requests(smla_test_batch *b, smla_rng *rng, int32_t num_requests,
                                     int32_t num_tokens, int32_t threshold, int32_t max_prefix,
                                     double short_fraction);
/* Fresh q rows for every token the batch can hold (max_tokens). */
void smla_test_batch_fill_queries(smla_test_batch *b, smla_rng *rng);
/* Fresh index rows and lens for the batch's tokens. */
void smla_test_batch_fill_indices(smla_test_batch *b, smla_rng *rng);

/* The buffers of one side (host or device) with the batch's layout. */
typedef struct smla_test_buffers {
    void *q, *swa, *extra;
    int32_t *indices, *swa_lens, *extra_lens;
    float *sinks;
    uint16_t *out;               /* [tokens][heads][512] */
    float *lse;                  /* [tokens][heads] */
} smla_test_buffers;

/* The batch's host arrays, with the given outputs. */
smla_test_buffers smla_test_batch_host_buffers(const smla_test_batch *b, uint16_t *out,
                                               float *lse);
/* The call over `tokens` rows of buffers in memory, without positions (set plan or
 * cu_seqlens_q / seq_lens on the result). */
smla_attention_args smla_test_batch_args(const smla_test_batch *b, const smla_test_buffers *buf,
                                         int32_t tokens, smla_memory memory);

/* The token of the batch at index t: its request and absolute position. */
void smla_test_batch_token(const smla_test_batch *b, int32_t t, int32_t *request,
                           int64_t *position);
/* The CPU reference for the listed tokens only, each at its position in the batch: out
 * [n][heads][512] and lse [n][heads]. */
smla_status smla_test_batch_reference(smla_context *ctx, const smla_test_batch *b,
                                      const int32_t *tokens, int32_t n, uint16_t *out,
                                      float *lse);

/* How many of the batch's first requests have at most `threshold` query tokens (its
 * leading decodes). */
int32_t smla_test_batch_leading_decodes(const smla_test_batch *b, int32_t threshold);
/* A random order of b's requests that keeps its decodes (the leading requests of at most
 * threshold tokens) first, for smla_test_batch_reorder. */
void smla_test_batch_random_order(const smla_test_batch *b, smla_rng *rng, int32_t threshold,
                                  int32_t *order);
/* dst (created with src's config and pools) holds src's requests in the order
 * order[0..R) (dst request i is src request order[i]) with every token's q row, index row
 * and lens; token_map[src token] = dst token. */
void smla_test_batch_reorder(const smla_test_batch *src, const int32_t *order,
                             smla_test_batch *dst, int32_t *token_map);

/* A slot id of a pool of `rows` rows: mostly valid, sometimes one of each invalid kind
 * (-1, INT32_MIN, other negatives, rows, past rows, INT32_MAX). */
int32_t smla_test_random_slot(smla_rng *rng, int64_t rows);
/* An active length of a row of `columns` columns, sometimes out of range either side. */
int32_t smla_test_random_len(smla_rng *rng, int32_t columns);

#endif
