#include "split_choice.h"

int smla_auto_split_tiles(int64_t items, int64_t work_slots, int max_tiles, int tile_multiple)
{
    if (items <= 0 || work_slots <= 0 || max_tiles <= 1 || items >= work_slots)
        return max_tiles;
    const int multiple = tile_multiple > 0 ? tile_multiple : 1;
    int64_t best = -1;
    int best_tiles = max_tiles;
    for (int n = 1; n <= max_tiles; n++) {
        const int tiles = ((max_tiles + n - 1) / n + multiple - 1) / multiple * multiple;
        const int pieces = (max_tiles + tiles - 1) / tiles;
        const int64_t cost = (items * pieces + work_slots - 1) / work_slots * tiles + (pieces > 1 ? 1 : 0);
        if (best < 0 || cost < best) {
            best = cost;
            best_tiles = pieces > 1 ? tiles : max_tiles;
        }
    }
    return best_tiles;
}
