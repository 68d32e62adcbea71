/* smla_version: the CMake project version (CMakeLists.txt), the one place it is set. */
#include "smla.h"

const char *smla_version(void)
{
    return SMLA_VERSION;
}
