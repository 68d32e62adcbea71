/* Attention problems stored as safetensors files: the input of `smla attend`.
 *
 * Tensors (any other name is refused, so that a misspelled optional tensor cannot be
 * silently ignored):
 *   q              BF16 or F8_E4M3 [T, H, 512]                       required
 *   swa_cache      the SWA pool (below)                              required
 *   extra_cache    the extra pool (below); with extra_indices        optional
 *   swa_indices    I32 [T, Wswa]                                     required
 *   extra_indices  I32 [T, Wext]; with extra_cache                   optional
 *   swa_lens, extra_lens   I32 [T]                                   optional
 *   cu_seqlens_q   I32 [B+1], with seq_lens I32 [B]                  optional
 *   sinks          F32 [H]                                           optional
 * A pool is BF16 (kv_format bf16) or F8_E4M3 (kv_format fp8) [num_blocks, block_size,
 * 512], or U8 [num_blocks, block_bytes] for kv_format fp8_ds_mla: the raw blocks, whose
 * second size (>= smla_kv_block_bytes) is the block stride.
 * Metadata (strings): kv_format (bf16 | fp8 | fp8_ds_mla, required), block_size
 * (required for fp8_ds_mla; for bf16/fp8, if given, it must equal the pools' dim 1),
 * bmm1_scale and bmm2_scale (default 1), window (default 128). Other keys are ignored.
 *
 * The loader checks what it needs to build the arguments (names, q's shape, the pools
 * against kv_format and block_size, the metadata); smla_attention checks the rest (sizes
 * that must agree between tensors, dtypes, head counts) and names the tensor too. */
#ifndef SMLA_TOOLS_PROBLEM_FILE_H
#define SMLA_TOOLS_PROBLEM_FILE_H

#include "safetensors.h"
#include "smla.h"

#define SMLA_PROBLEM_FILE_TENSORS 10

typedef struct smla_problem_file {
    /* Host tensors in 64-byte-aligned copies; out and lse are left absent for the
     * caller; backend AUTO. */
    smla_attention_args args;
    void *buffers[SMLA_PROBLEM_FILE_TENSORS]; /* the copies, owned */
    int num_buffers;
} smla_problem_file;

/* Builds problem from a parsed file; SMLA_ERR_FILE_FORMAT with a message naming the
 * tensor or metadata key when the file does not describe a problem. */
smla_status smla_problem_file_load(const smla_st_file *file, smla_problem_file *problem,
                                   smla_tool_error *error);
void smla_problem_file_free(smla_problem_file *problem);

/* 1 when key is one of the metadata keys above. */
int smla_problem_file_knows_metadata(const char *key);

#endif
