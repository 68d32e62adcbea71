/* Minimal smla call: 2 tokens, 8 heads, each attending to 3 rows of a BF16 cache. */
#include <stdio.h>
#include <stdlib.h>

#include "smla.h"

int main(void)
{
    enum { T = 2, H = 8, D = SMLA_HEAD_DIM, ROWS = 16 };
    static float rows[ROWS][D];
    for (int r = 0; r < ROWS; r++)
        for (int d = 0; d < D; d++)
            rows[r][d] = (float)((r * 7 + d) % 13) / 13.0f - 0.5f;
    static uint16_t q[T][H][D], out[T][H][D];
    for (int i = 0; i < T * H * D; i++)
        (&q[0][0][0])[i] = smla_float_to_bf16((float)(i % 5) * 0.1f);
    int32_t indices[T][3] = {{0, 5, 9}, {3, -1, 15}}; /* -1: skipped */

    void *cache = malloc((size_t)smla_kv_block_bytes(SMLA_KV_BF16, ROWS));
    smla_kv_pool pool = smla_kv_pool_make(cache, SMLA_KV_BF16, 1, ROWS, SMLA_MEMORY_HOST);
    smla_kv_pack(&pool, &rows[0][0]);

    smla_attention_args a = smla_attention_args_default();
    a.q = smla_tensor_3d(q, SMLA_DTYPE_BF16, T, H, D, SMLA_MEMORY_HOST);
    a.swa = pool;
    a.swa_indices = smla_tensor_2d(indices, SMLA_DTYPE_I32, T, 3, SMLA_MEMORY_HOST);
    a.bmm1_scale = 0.0441941738f; /* 512^-0.5: DeepSeek-V4's head_dim^-0.5, q and k 512 wide */
    a.out = smla_tensor_3d(out, SMLA_DTYPE_BF16, T, H, D, SMLA_MEMORY_HOST);

    smla_context *ctx;
    smla_context_create(&ctx);
    smla_status st = smla_attention(ctx, &a);
    if (st != SMLA_OK)
        fprintf(stderr, "smla: %s: %s\n", smla_status_string(st), smla_context_last_error(ctx));
    else
        printf("out[1][0][0..3] = %f %f %f %f\n", smla_bf16_to_float(out[1][0][0]),
               smla_bf16_to_float(out[1][0][1]), smla_bf16_to_float(out[1][0][2]),
               smla_bf16_to_float(out[1][0][3]));
    smla_context_destroy(ctx);
    free(cache);
    return st == SMLA_OK ? 0 : 1;
}
