/* The split-KV choice of SMLA_SPLIT_AUTO (src/split_choice.c): the decisions measured on
 * the H200 (docs/perf/LOG.md, v6.2), and over random launches the properties every choice
 * must have: no split once the work items fill the GPU, whole multiples of the tile
 * multiple, and no piece count that the cost model says finishes earlier. */
#include "split_choice.h"
#include "testutil.h"

/* Waves of work items x tiles per piece, plus a tile for the combine when split. */
static int64_t cost(int64_t items, int64_t slots, int max_tiles, int tiles)
{
    const int pieces = (max_tiles + tiles - 1) / tiles;
    return (items * pieces + slots - 1) / slots * tiles + (pieces > 1 ? 1 : 0);
}

static void test_measured_cases(void)
{
    /* 64 heads on fp8m (132 slots, 640 entries = 10 tiles, pairs of tiles). */
    CHECK(smla_auto_split_tiles(4, 132, 10, 2) == 2);    /* batch 2 x 2 tokens: 5 pieces */
    CHECK(smla_auto_split_tiles(128, 132, 10, 2) == 10); /* batch 64: one wave unsplit */
    CHECK(smla_auto_split_tiles(256, 132, 10, 2) == 10); /* batch 128 fills the GPU */
    /* 128 heads (two head groups per token), 1152 entries = 18 tiles. */
    CHECK(smla_auto_split_tiles(8, 132, 18, 2) == 2);
    /* 16 heads on fp8wg (264 slots: two WGs per CTA), single tiles. */
    CHECK(smla_auto_split_tiles(128, 264, 10, 1) == 5);
    CHECK(smla_auto_split_tiles(4, 264, 10, 1) == 1);
    /* Nothing to split. */
    CHECK(smla_auto_split_tiles(4, 132, 1, 2) == 1);
    CHECK(smla_auto_split_tiles(0, 132, 10, 2) == 10);
}

static void test_properties(smla_rng *rng)
{
    for (int i = 0; i < 20000; i++) {
        const int64_t slots = 1 + (int64_t)smla_rng_range(rng, 0, 600);
        const int64_t items = 1 + (int64_t)smla_rng_range(rng, 0, 800);
        const int max_tiles = 1 + (int)smla_rng_range(rng, 0, 300);
        const int multiple = 1 + (int)smla_rng_range(rng, 0, 3);
        const int tiles = smla_auto_split_tiles(items, slots, max_tiles, multiple);
        CHECK(tiles >= 1 && tiles <= max_tiles);
        if (items >= slots)
            CHECK(tiles == max_tiles);
        if (tiles < max_tiles)
            CHECK(tiles % multiple == 0);
        /* No whole-multiple piece size finishes earlier by the cost model. */
        for (int t = multiple; t < max_tiles + multiple && items < slots; t += multiple) {
            const int size = t < max_tiles ? t : max_tiles;
            if (cost(items, slots, max_tiles, size) < cost(items, slots, max_tiles, tiles)) {
                fprintf(stderr, "items %lld slots %lld tiles %d x%d: %d tiles cost %lld < %d tiles' %lld\n",
                        (long long)items, (long long)slots, max_tiles, multiple, size,
                        (long long)cost(items, slots, max_tiles, size), tiles,
                        (long long)cost(items, slots, max_tiles, tiles));
                smla_test_failures++;
                break;
            }
        }
    }
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_split_choice"));
    test_measured_cases();
    test_properties(&rng);
    return smla_test_finish("test_split_choice");
}
