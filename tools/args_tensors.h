/* The tensor fields of smla_attention_args by name, for the tools that fill or copy them
 * all (problem files, device copies). */
#ifndef SMLA_TOOLS_ARGS_TENSORS_H
#define SMLA_TOOLS_ARGS_TENSORS_H

#include "smla.h"

#define SMLA_ARGS_INPUT_TENSORS 8

typedef struct smla_named_tensor {
    const char *name; /* the field's name, which is also its problem-file tensor name */
    smla_tensor *tensor;
} smla_named_tensor;

/* Fills fields with args' input tensors: q, swa_indices, extra_indices, swa_lens,
 * extra_lens, cu_seqlens_q, seq_lens, sinks (not the pools, not out and lse). */
void smla_args_input_tensors(smla_attention_args *args,
                             smla_named_tensor fields[SMLA_ARGS_INPUT_TENSORS]);

#endif
