/* Heads per work item of the 8-32-head kernels (fp8wg: per warpgroup; the BF16
   entries-on-M kernel: per CTA). */
#ifndef SMLA_HEAD_TILE_CHOICE_H
#define SMLA_HEAD_TILE_CHOICE_H
#include <stdint.h>

/* tokens x (heads / tile) work items; work_slots: how many the GPU runs at once. Returns
   the largest tile (<= max_tile, <= heads) whose items fill the GPU, or, when a batch is
   too small for that, the smallest tile (>= 8) whose items still run in one wave:
   halving the tile halves each item's heads but not its time (the rows gathered and the
   tiles walked stay the same), so it only pays while it adds no wave. */
int smla_heads_per_cta(int64_t tokens, int heads, int64_t work_slots, int max_tile);

#endif
