/* The benchmark presets of smla bench (issues 4 and 6) and the workload of each case. */
#ifndef SMLA_TOOLS_BENCH_PRESETS_H
#define SMLA_TOOLS_BENCH_PRESETS_H

#include "workload.h"

#define SMLA_BENCH_MAX_CASES 32
#define SMLA_BENCH_MAX_BATCHES 8 /* decode batch sizes of one run (2 formats each) */

typedef enum smla_bench_kind {
    SMLA_BENCH_PREFILL,     /* engine batch: one request, fresh or after a prefix */
    SMLA_BENCH_DECODE,      /* engine batch: requests of 2 query tokens (speculative) */
    SMLA_BENCH_RANDOM_ROWS  /* FlashMLA's prefill inputs: one random index set */
} smla_bench_kind;

typedef struct smla_bench_case {
    char name[64];
    smla_bench_kind kind;
    int32_t heads;
    int32_t topk;            /* engine: extra columns; random rows: entries per token */
    int32_t num_requests, query_len, prefix_len; /* engine */
    int32_t tokens, pool_rows;                   /* random rows */
    smla_dtype q_dtype;
    smla_kv_format kv_format;
    int32_t swa_block_size, extra_block_size;
} smla_bench_case;

int smla_bench_num_presets(void);
const char *smla_bench_preset_name(int index);
int smla_bench_preset_is_prefill(int index); /* run by `smla bench` without --preset */
/* Index of the preset called name, or -1. */
int smla_bench_find_preset(const char *name);

/* Fills cases (SMLA_BENCH_MAX_CASES at most) with the cases of the preset; q_dtype and
 * kv_format replace the preset's defaults unless SMLA_DTYPE_INVALID / SMLA_KV_INVALID;
 * decode presets run num_batches batch sizes (SMLA_BENCH_MAX_BATCHES at most; 0: the
 * default 2, 64, 128, 256 requests). Returns the number of cases. */
int smla_bench_preset_cases(int index, smla_dtype q_dtype, smla_kv_format kv_format,
                            const int32_t *decode_batches, int num_batches,
                            smla_bench_case *cases);

/* The plan's decode threshold for a case's batch: decode requests have query_len tokens. */
int32_t smla_bench_decode_threshold(const smla_bench_case *c);

/* Names in the bench's tables and JSON: "auto", "fixed" or "none" (query types:
 * query_dtype.h). */
const char *smla_bench_split_name(smla_split_mode split);
/* The split mode called name into *split; 0 when there is none. */
int smla_bench_split_parse(const char *name, smla_split_mode *split);
/* A plan's segment cap as printed: the number, "off" (0), or "-" (< 0: no plan). */
void smla_bench_cap_text(int32_t cap, char *buf, size_t bytes);

/* Builds the case's host workload. */
smla_status smla_bench_case_workload(const smla_bench_case *c, uint64_t seed,
                                     smla_workload *w, smla_tool_error *error);

#endif
