/* The tools' error messages: the library keeps its message on a context; the parts of
 * the CLI that work without one (file formats, device copies) fill one of these. */
#ifndef SMLA_TOOLS_TOOL_ERROR_H
#define SMLA_TOOLS_TOOL_ERROR_H

#include <stdarg.h>
#include <stdio.h>

#include "smla.h"

#define SMLA_TOOL_ERROR_BYTES 512

typedef struct smla_tool_error {
    char message[SMLA_TOOL_ERROR_BYTES];
} smla_tool_error;

/* Formats the message into error (when not NULL) and returns status. Inline, so that
 * static analysis sees that a failure's status is what the caller passed. */
static inline smla_status smla_tool_fail(smla_tool_error *error, smla_status status,
                                         const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline smla_status smla_tool_fail(smla_tool_error *error, smla_status status,
                                         const char *fmt, ...)
{
    if (error) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(error->message, sizeof error->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

#endif
