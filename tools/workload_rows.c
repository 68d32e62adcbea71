/* Random-row workloads (workload.h): FlashMLA's prefill benchmark inputs. */
#include <stdlib.h>
#include <string.h>

#include "workload.h"
#include "workload_fill.h"

static smla_status check_spec(const smla_random_rows_spec *s, smla_tool_error *error)
{
    const char *bad = NULL;
    if (s->heads <= 0 || s->tokens <= 0)
        bad = "heads and tokens must be positive";
    else if (s->entries <= 0 || s->pool_rows < s->entries)
        bad = "entries must be positive and at most pool_rows";
    else if (!(s->invalid_fraction >= 0.0 && s->invalid_fraction <= 1.0))
        bad = "invalid_fraction must be in [0, 1]";
    else if (s->q_dtype != SMLA_DTYPE_BF16 && s->q_dtype != SMLA_DTYPE_FP8_E4M3)
        bad = "q_dtype must be BF16 or FP8_E4M3";
    else if (smla_kv_token_bytes(s->kv_format) == 0)
        bad = "kv_format is not a KV format";
    else if (s->block_size <= 0 || s->pool_rows > INT32_MAX - s->block_size)
        bad = "block_size must be positive";
    else if ((int64_t)s->tokens * s->heads > INT64_MAX / (4 * SMLA_HEAD_DIM))
        bad = "tokens x heads is too large";
    if (bad)
        return smla_tool_fail(error, SMLA_ERR_VALUE, "workload: %s", bad);
    return SMLA_OK;
}

/* Each token's row: `entries` distinct random rows (a partial Fisher-Yates shuffle of a
 * permutation of the pool's rows kept across tokens), some replaced by -1. Returns the
 * valid entries. */
static int64_t fill_indices(const smla_random_rows_spec *s, int32_t *idx, int32_t *rows,
                            smla_tool_rng *rng)
{
    const uint64_t invalid_below = (uint64_t)(s->invalid_fraction * 0x1.0p32);
    int64_t valid = 0;
    for (int32_t i = 0; i < s->pool_rows; i++)
        rows[i] = i;
    for (int64_t t = 0; t < s->tokens; t++) {
        int32_t *row = idx + t * s->entries;
        for (int32_t j = 0; j < s->entries; j++) {
            const uint32_t pick = j + smla_tool_rng_below(rng, (uint64_t)(s->pool_rows - j));
            const int32_t id = rows[pick];
            rows[pick] = rows[j];
            rows[j] = id;
            const int invalid = (smla_tool_rng_next(rng) >> 32) < invalid_below;
            row[j] = invalid ? -1 : id;
            valid += !invalid;
        }
    }
    return valid;
}

smla_status smla_workload_random_rows(const smla_random_rows_spec *spec, smla_workload *w,
                                      smla_tool_error *error)
{
    memset(w, 0, sizeof *w);
    smla_status st = check_spec(spec, error);
    if (st != SMLA_OK)
        return st;
    smla_tool_rng rng;
    smla_tool_rng_seed(&rng, spec->seed);
    const int64_t blocks = (spec->pool_rows + spec->block_size - 1) / spec->block_size;
    w->num_tokens = spec->tokens;
    w->args = smla_attention_args_default();
    w->args.swa = smla_workload_pool(w, spec->kv_format, blocks, spec->block_size);
    int32_t *idx = smla_workload_buffer(w, (size_t)spec->tokens * (size_t)spec->entries *
                                               sizeof(int32_t));
    int32_t *rows = malloc((size_t)spec->pool_rows * sizeof *rows);
    if (!w->args.swa.data || !idx || !rows) {
        st = smla_tool_fail(error, SMLA_ERR_OUT_OF_MEMORY, "workload: no memory for %d "
                            "tokens x %d entries over %d rows", spec->tokens, spec->entries,
                            spec->pool_rows);
    } else {
        const int64_t valid = fill_indices(spec, idx, rows, &rng);
        w->args.swa_indices = smla_tensor_2d(idx, SMLA_DTYPE_I32, spec->tokens, spec->entries,
                                             SMLA_MEMORY_HOST);
        st = smla_workload_finish(w, spec->heads, spec->q_dtype, valid, &rng, error);
    }
    free(rows);
    if (st != SMLA_OK)
        smla_workload_free(w);
    return st;
}
