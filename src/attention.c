/* The attention entry point: validate, then dispatch to a backend. */
#include <string.h>

#include "problem.h"

smla_attention_args smla_attention_args_default(void)
{
    smla_attention_args a;
    memset(&a, 0, sizeof a);
    a.bmm1_scale = 1.0f;
    a.bmm2_scale = 1.0f;
    a.window = SMLA_DEFAULT_WINDOW;
    return a;
}

smla_status smla_attention(smla_context *ctx, const smla_attention_args *args)
{
    if (!ctx)
        return SMLA_ERR_NULL_POINTER;
    if (!args)
        return smla_fail(ctx, SMLA_ERR_NULL_POINTER, "args is NULL");
    smla_problem problem;
    smla_status st = smla_problem_from_args(ctx, args, &problem);
    if (st != SMLA_OK)
        return st;
    if (problem.memory == SMLA_MEMORY_HOST)
        return smla_ref_attention(ctx, &problem);
#ifdef SMLA_WITH_CUDA
    if (!ctx->has_cuda)
        return smla_fail(ctx, SMLA_ERR_BACKEND, "device memory given but no usable GPU");
    return smla_cuda_attention(ctx, &problem);
#else
    return smla_fail(ctx, SMLA_ERR_BACKEND, "this smla was built without CUDA");
#endif
}
