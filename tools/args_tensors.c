/* The tensor fields of smla_attention_args by name (args_tensors.h). */
#include "args_tensors.h"

void smla_args_input_tensors(smla_attention_args *args,
                             smla_named_tensor fields[SMLA_ARGS_INPUT_TENSORS])
{
    const smla_named_tensor all[SMLA_ARGS_INPUT_TENSORS] = {
        {"q", &args->q},
        {"swa_indices", &args->swa_indices},
        {"extra_indices", &args->extra_indices},
        {"swa_lens", &args->swa_lens},
        {"extra_lens", &args->extra_lens},
        {"cu_seqlens_q", &args->cu_seqlens_q},
        {"seq_lens", &args->seq_lens},
        {"sinks", &args->sinks}};
    for (int i = 0; i < SMLA_ARGS_INPUT_TENSORS; i++)
        fields[i] = all[i];
}
