/* The head tile of the 8-32-head kernels (src/head_tile_choice.c): the decode and prefill
 * decisions on the H200's 132 SMs (docs/perf/LOG.md), and over random launches the properties
 * every choice must have: a power-of-two tile of 8..min(heads, max), no smaller tile than
 * fills the GPU when the largest does, and no tile halved into a second wave. */
#include "head_tile_choice.h"
#include "testutil.h"

static void test_decisions(void)
{
    /* fp8wg at 16 heads: two WGs per CTA, 264 slots; decode batches x 2 tokens. */
    CHECK(smla_heads_per_cta(4, 16, 264, 32) == 8);    /* b2: more items, one wave */
    CHECK(smla_heads_per_cta(128, 16, 264, 32) == 8);  /* b64: 256 items, one wave */
    CHECK(smla_heads_per_cta(256, 16, 264, 32) == 16); /* b128: 512 items would be two waves */
    CHECK(smla_heads_per_cta(512, 16, 264, 32) == 16);
    CHECK(smla_heads_per_cta(8192, 16, 264, 32) == 16); /* prefill */
    /* 32 heads: halved while the items fit one wave. */
    CHECK(smla_heads_per_cta(4, 32, 264, 32) == 8);
    CHECK(smla_heads_per_cta(64, 32, 264, 32) == 8);   /* 256 items at 8 heads still fit */
    CHECK(smla_heads_per_cta(100, 32, 264, 32) == 16); /* 400 items at 8 heads would not */
    CHECK(smla_heads_per_cta(300, 32, 264, 32) == 32);
    /* 8 heads: nothing to halve. */
    CHECK(smla_heads_per_cta(1, 8, 132, 32) == 8);
}

static void test_properties(smla_rng *rng)
{
    static const int head_counts[] = {8, 16, 32};
    for (int i = 0; i < 20000; i++) {
        const int64_t tokens = 1 + (int64_t)smla_rng_range(rng, 0, 2000);
        const int heads = head_counts[smla_rng_range(rng, 0, 2)];
        const int64_t slots = 1 + (int64_t)smla_rng_range(rng, 0, 600);
        const int max_tile = 8 << smla_rng_range(rng, 0, 2);
        const int largest = heads < max_tile ? heads : max_tile;
        const int tile = smla_heads_per_cta(tokens, heads, slots, max_tile);
        CHECK(tile >= 8 && tile <= largest && (tile & (tile - 1)) == 0);
        if (tokens * (heads / largest) >= slots)
            CHECK(tile == largest); /* the largest tile fills the GPU */
        if (tile < largest)
            CHECK(tokens * (heads / tile) <= slots); /* halving added no wave */
        if (tile > 8)
            CHECK(tokens * (heads / (tile / 2)) > slots); /* halving once more would */
    }
}

int main(void)
{
    smla_rng rng;
    smla_rng_seed(&rng, smla_test_seed("test_head_tile_choice"));
    test_decisions();
    test_properties(&rng);
    return smla_test_finish("test_head_tile_choice");
}
