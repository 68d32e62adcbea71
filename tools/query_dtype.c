/* The command line's names of the query types (query_dtype.h). */
#include "query_dtype.h"

#include <string.h>

smla_dtype smla_query_dtype_parse(const char *name)
{
    return !strcmp(name, "fp8")    ? SMLA_DTYPE_FP8_E4M3
           : !strcmp(name, "bf16") ? SMLA_DTYPE_BF16
                                   : SMLA_DTYPE_INVALID;
}

const char *smla_query_dtype_name(smla_dtype dtype)
{
    return dtype == SMLA_DTYPE_BF16 ? "bf16" : "fp8";
}
