/* The tools' error messages (tool_error.h). */
#include "tool_error.h"

#include <stdarg.h>
#include <stdio.h>

smla_status smla_tool_fail(smla_tool_error *error, smla_status status, const char *fmt, ...)
{
    if (error) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(error->message, sizeof error->message, fmt, ap);
        va_end(ap);
    }
    return status;
}
