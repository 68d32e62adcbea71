#include "head_tile_choice.h"

int smla_heads_per_cta(int64_t tokens, int heads, int64_t work_slots, int max_tile)
{
    int tile = heads < max_tile ? heads : max_tile;
    while (tile > 8 && tokens * (heads / (tile / 2)) <= work_slots)
        tile /= 2;
    return tile;
}
