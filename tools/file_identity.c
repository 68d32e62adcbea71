/* Whether two paths name one file (file_identity.h). */
#define _POSIX_C_SOURCE 200809L
#include "file_identity.h"

#include <sys/stat.h>

int smla_tool_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
