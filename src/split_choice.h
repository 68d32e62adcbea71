/* Split-KV in SMLA_SPLIT_AUTO mode: how many of a token's KV tiles each piece takes. */
#ifndef SMLA_SPLIT_CHOICE_H
#define SMLA_SPLIT_CHOICE_H
#include <stdint.h>

/* items: the launch's work items when unsplit (tokens x head groups); work_slots: how
   many the GPU runs at once; max_tiles: the most tiles a token has; tile_multiple: a
   piece takes whole multiples of it (the heads-on-M kernels take tiles in pairs).
   Returns the tiles per piece of the split that should finish first (waves of work items
   x tiles per piece, plus about a tile for the combine step when split), or max_tiles
   when one piece is best, always when items >= work_slots. */
int smla_auto_split_tiles(int64_t items, int64_t work_slots, int max_tiles, int tile_multiple);

#endif
