/* The staging copy engines make before a BF16 sparse prefill over fp8_ds_mla caches (smla
 * bench --staging): every token's selected rows decoded to BF16 into a workspace of
 * [tokens][entries][512] BF16. The kernel is bench/staging_gather.cu; built with CUDA only. */
#ifndef SMLA_TOOLS_STAGING_GATHER_H
#define SMLA_TOOLS_STAGING_GATHER_H

#ifdef SMLA_WITH_CUDA

#include <cuda_runtime.h>

#include "smla.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One index set of the call and its fp8_ds_mla device pool; width 0 when absent. */
typedef struct smla_staging_source {
    smla_kv_pool pool;
    const int32_t *indices; /* [tokens][width], row_stride elements apart */
    int64_t row_stride;
    int32_t width;
    const int32_t *lens;    /* optional [tokens]: active columns of each row */
} smla_staging_source;

/* For token t and column c (swa's columns, then extra's: entries = swa->width +
 * extra->width), decodes the row of an active valid slot to 512 BF16 at workspace row
 * t * entries + c; rows of inactive or invalid columns are not written. Asynchronous on
 * stream; returns the launch's error. */
cudaError_t smla_staging_gather(const smla_staging_source *swa, const smla_staging_source *extra,
                                int64_t tokens, uint16_t *workspace, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
#endif
