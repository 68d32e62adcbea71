/* The command line's names of the query types, "fp8" and "bf16" (smla bench --q, smla
 * check --q, smla plan --dtype). */
#ifndef SMLA_TOOLS_QUERY_DTYPE_H
#define SMLA_TOOLS_QUERY_DTYPE_H

#include "smla.h"

/* SMLA_DTYPE_FP8_E4M3 or SMLA_DTYPE_BF16; SMLA_DTYPE_INVALID for any other name. */
smla_dtype smla_query_dtype_parse(const char *name);
/* "bf16" for BF16, "fp8" otherwise. */
const char *smla_query_dtype_name(smla_dtype dtype);

#endif
