/* Host time to build the workload of every smla bench case (the generator must keep each
 * preset's setup well under 5 s). Prints one line per case. */
#include <stdio.h>

#include "bench_presets.h"
#include "bench_timer.h"

int main(void)
{
    int failures = 0;
    smla_bench_case cases[SMLA_BENCH_MAX_CASES];
    for (int p = 0; p < smla_bench_num_presets(); p++) {
        const int n = smla_bench_preset_cases(p, SMLA_DTYPE_INVALID, SMLA_KV_INVALID, NULL, 0, cases);
        for (int i = 0; i < n; i++) {
            smla_workload w;
            smla_tool_error error = {{0}};
            const double start = smla_wall_seconds();
            const smla_status st = smla_bench_case_workload(&cases[i], 1, &w, &error);
            const double seconds = smla_wall_seconds() - start;
            if (st != SMLA_OK) {
                fprintf(stderr, "bench_workload: %s: %s\n", cases[i].name, error.message);
                failures++;
                continue;
            }
            printf("bench_workload: %-36s %-10s %7d tokens %8.1f entries/token  %6.3f s\n",
                   cases[i].name, smla_kv_format_name(cases[i].kv_format), w.num_tokens,
                   (double)w.active_entries / w.num_tokens, seconds);
            smla_workload_free(&w);
        }
    }
    return failures ? 1 : 0;
}
