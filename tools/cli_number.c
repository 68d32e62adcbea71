/* The CLI's integer options (cli_number.h). */
#include "cli_number.h"

int smla_cli_parse_uint(const char *text, size_t len, uint64_t min, uint64_t max,
                        uint64_t *value)
{
    if (len == 0)
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return 0;
        const unsigned digit = (unsigned)(text[i] - '0');
        if (digit > max || v > (max - digit) / 10) /* v * 10 + digit > max */
            return 0;
        v = v * 10 + digit;
    }
    if (v < min)
        return 0;
    *value = v;
    return 1;
}
