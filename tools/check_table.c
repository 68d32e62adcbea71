/* The summary table (check_table.h). */
#include "check_table.h"
#include "query_dtype.h"

#include <math.h>

void smla_check_row_init(smla_check_row *row)
{
    *row = (smla_check_row){{0, 0}, {0, 0}, {NAN, NAN}, 0, {NAN, NAN}};
}

void smla_check_row_add(smla_check_row *row, smla_check_logits logits, const smla_check_result *kernel,
                        const smla_check_result *floor)
{
    const int c = logits == SMLA_CHECK_LOGITS_PEAKED;
    row->problems[c]++;
    row->out[c] = fmax(row->out[c], kernel->rel_fro);
    row->lse = fmax(row->lse, kernel->lse_err);
    if (floor) { /* fmin takes the number over a NAN */
        row->floor[c] = fmin(row->floor[c], floor->rel_fro);
        row->lse_floor[c] = fmin(row->lse_floor[c], floor->lse_err);
    }
}

static const char *positions_name(smla_check_positions p)
{
    return p == SMLA_CHECK_POSITIONS_NONE      ? "none"
           : p == SMLA_CHECK_POSITIONS_SEQLENS ? "seqlens"
           : p == SMLA_CHECK_POSITIONS_PLAN    ? "plan"
                                               : "decode";
}

/* "%.2e" of value, or "-" when absent (NAN, or no problem). */
static const char *number(char buffer[16], double value, int present)
{
    if (!present || isnan(value))
        return "-";
    snprintf(buffer, 16, "%.2e", value);
    return buffer;
}

#define ROW_FORMAT "%-5s %-4s %-21s %-7s %5s  %9s %9s  %9s %9s  %9s  %9s %9s  %s\n"

void smla_check_table_header(FILE *f)
{
    const smla_check_limits fp8 = smla_check_tolerance(SMLA_DTYPE_FP8_E4M3);
    const smla_check_limits bf16 = smla_check_tolerance(SMLA_DTYPE_BF16);
    fprintf(f,
            "Errors against the CPU reference over the decoded inputs (out: relative Frobenius;\n"
            "lse: max abs), the worst of the row's problems. Floor: that reference against the\n"
            "reference over the unquantised values (FP8 queries), the row's smallest. Logits: flat\n"
            "std 0.05-0.2, peaked 0.5-2.5; a row's problems alternate (--cases 2 gives both).\n"
            "Limits: fp8 out %.0e lse %.0e, bf16 out %.0e lse %.0e; a peaked fp8 problem's out\n"
            "error <= its floor.\n",
            fp8.out, fp8.lse, bf16.out, bf16.lse);
    fprintf(f, "%48s%19s  %19s  %9s  %19s\n", "", "---- out error ----", "---- out floor ----", "lse error",
            "---- lse floor ----");
    fprintf(f, ROW_FORMAT, "heads", "q", "kv", "pos", "cases", "flat", "peaked", "flat", "peaked", "both", "flat",
            "peaked", "result");
}

void smla_check_table_row(FILE *f, const smla_check_config *c, const smla_check_row *row, int failures)
{
    char heads[8], kv[24], cases[8], n[7][16];
    snprintf(heads, sizeof heads, "%d", c->num_heads);
    snprintf(kv, sizeof kv, "%s+%s", smla_kv_format_name(c->swa_format),
             c->extra_format ? smla_kv_format_name(c->extra_format) : "-");
    snprintf(cases, sizeof cases, "%d", row->problems[0] + row->problems[1]);
    const int any = row->problems[0] + row->problems[1] > 0;
    fprintf(f, ROW_FORMAT, heads, smla_query_dtype_name(c->q_dtype), kv,
            positions_name(c->positions), cases, number(n[0], row->out[0], row->problems[0]),
            number(n[1], row->out[1], row->problems[1]), number(n[2], row->floor[0], 1),
            number(n[3], row->floor[1], 1), number(n[4], row->lse, any), number(n[5], row->lse_floor[0], 1),
            number(n[6], row->lse_floor[1], 1), failures ? "FAIL" : "pass");
}
