/* The quantisation floor (check_floor.h). */
#include "check_floor.h"

smla_status smla_check_floor(smla_context *ctx, const smla_check_problem *p, smla_check_result *floor)
{
    if (!p->unquantised.q.data)
        return SMLA_ERR_DTYPE;
    smla_attention_args exact = p->unquantised;
    exact.backend = SMLA_BACKEND_CPU;
    const smla_status st = smla_attention(ctx, &exact);
    if (st != SMLA_OK)
        return st;
    const smla_attention_args *a = &p->args;
    smla_check_compare(a->out.data, exact.out.data, a->out.stride[0], a->lse.data, exact.lse.data,
                       a->lse.data ? a->lse.stride[0] : 0, a->q.shape[0], (int)a->q.shape[1], floor);
    return SMLA_OK;
}

int smla_check_floor_holds(const smla_check_problem *p, const smla_check_result *result,
                           const smla_check_result *floor)
{
    if (p->args.q.dtype != SMLA_DTYPE_FP8_E4M3 || p->logits != SMLA_CHECK_LOGITS_PEAKED)
        return 1;
    return result->rel_fro <= floor->rel_fro;
}
