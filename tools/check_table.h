/* `smla check`'s summary table: a row per configuration, beside the kernel's errors the
 * quantisation floor's (DESIGN section 8), for flat and for peaked logits apart. */
#ifndef SMLA_TOOLS_CHECK_TABLE_H
#define SMLA_TOOLS_CHECK_TABLE_H

#include <stdio.h>

#include "check_compare.h"
#include "check_problem.h"

/* A configuration's figures over its problems; [0] flat logits, [1] peaked. */
typedef struct smla_check_row {
    int problems[2];
    double out[2];       /* the worst kernel error of out (rel_fro) */
    double floor[2];     /* the smallest floor of out; NAN: none (no FP8-query problem) */
    double lse;          /* the worst kernel LSE error, both classes */
    double lse_floor[2]; /* the smallest LSE floor; NAN: none */
} smla_check_row;

void smla_check_row_init(smla_check_row *row);
/* One problem of class logits (FLAT or PEAKED): its kernel result and its floor (NULL:
 * none). */
void smla_check_row_add(smla_check_row *row, smla_check_logits logits, const smla_check_result *kernel,
                        const smla_check_result *floor);

/* The legend and the column heads. */
void smla_check_table_header(FILE *f);
void smla_check_table_row(FILE *f, const smla_check_config *config, const smla_check_row *row, int failures);

#endif
