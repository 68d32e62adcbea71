/* Random adversarial attention problems for `smla check`: ragged sizes, every kind of
 * invalid index, active lengths out of range, empty rows, sinks of +-inf, positions that
 * leave padding rows, strided outputs and the engine's shared index layout; flat or peaked
 * logits; for FP8 queries, the same problem over the values before quantisation. */
#ifndef SMLA_TOOLS_CHECK_PROBLEM_H
#define SMLA_TOOLS_CHECK_PROBLEM_H

#include "rng.h"
#include "smla.h"

typedef enum smla_check_positions {
    SMLA_CHECK_POSITIONS_NONE,     /* no positions: every row computed */
    SMLA_CHECK_POSITIONS_SEQLENS,  /* cu_seqlens_q + seq_lens, some padding rows */
    SMLA_CHECK_POSITIONS_PLAN,     /* requests (decodes first) to be planned */
    SMLA_CHECK_POSITIONS_DECODE    /* a plan of decode requests only, 1-4 tokens each */
} smla_check_positions;

/* The spread of the logits. q and the KV rows are unit normal draws, so a logit's standard
 * deviation is bmm1_scale * sqrt(512). */
typedef enum smla_check_logits {
    SMLA_CHECK_LOGITS_ANY,    /* flat or peaked, even odds (a config only) */
    SMLA_CHECK_LOGITS_FLAT,   /* logit std 0.05-0.2: nearly uniform weights */
    SMLA_CHECK_LOGITS_PEAKED  /* logit std 0.5-2.5 */
} smla_check_logits;

typedef struct smla_check_config {
    int num_heads;
    smla_dtype q_dtype;
    smla_kv_format swa_format;
    smla_kv_format extra_format;   /* SMLA_KV_INVALID: SWA-only problems */
    smla_check_positions positions;
    int max_tokens;
    int min_tokens;                /* tokens are drawn from [min_tokens, max_tokens] */
    smla_check_logits logits;
} smla_check_config;

#define SMLA_CHECK_BUFFERS 24

/* Output poison: every untouched element keeps exactly these bits. */
#define SMLA_CHECK_OUT_POISON 0xFFFFu      /* a BF16 NaN */
#define SMLA_CHECK_LSE_POISON 0x7FC0BEEFu  /* an F32 NaN */

typedef struct smla_check_problem {
    smla_attention_args args;      /* host tensors; out and lse poisoned; positions (if
                                      any) as cu_seqlens_q/seq_lens, one per request */
    void *buffers[SMLA_CHECK_BUFFERS];
    int num_buffers;
    /* The batch behind the positions, for planning (PLAN mode). */
    int32_t num_requests;
    int32_t *query_start_loc;      /* host [num_requests + 1] */
    int32_t *seq_lens;             /* host [num_requests] */
    int32_t decode_threshold;
    int32_t segment_cap;
    int64_t out_elements;          /* bytes / 2 of the out buffer (with row padding) */
    smla_check_logits logits;      /* FLAT or PEAKED */
    double logit_std;              /* bmm1_scale * sqrt(512) */
    /* FP8 queries only (else unquantised.q.data is NULL): args over the values before
     * quantisation, for the quantisation floor: q the BF16 of the normal draws, each pool a
     * bf16 pool of its float rows (same blocks, so a slot id names the same row), its own
     * out and lse (poisoned, args' strides); every other tensor is args'. */
    smla_attention_args unquantised;
    char description[240];
} smla_check_problem;

smla_status smla_check_problem_make(const smla_check_config *config, smla_tool_rng *rng,
                                    smla_check_problem *problem);
/* The problem's split mode, drawn at random by make, set to `split` (the description
 * follows). */
void smla_check_problem_set_split(smla_check_problem *problem, smla_split_mode split);
/* Refills out and lse (args' and unquantised's) with the poison. */
void smla_check_problem_poison(const smla_check_problem *problem);
void smla_check_problem_free(smla_check_problem *problem);

#endif
