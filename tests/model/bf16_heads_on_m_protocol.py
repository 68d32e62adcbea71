#!/usr/bin/env python3
"""Model check of the synchronisation protocol of src/cuda/prefill/bf16_heads_on_m.cuh
(not its arithmetic). The agents are the producer warpgroup and the two compute
warpgroups (each one agent: their threads move together between barriers); cp.async
completions land at random later times. The producer publishes every half by the copies'
own arrivals; with raw rows (E4M3, fp8_ds_mla) the compute WG that scores a tile widens
both its halves in place before anyone reads them. Over many random
interleavings it checks that nothing deadlocks, that no mbarrier wait is satisfied by a
phase other than the one it means (parity aliasing), that no buffer half is refilled
while a reader still needs it, that every read of a tile's row set (its rows' addresses
and tags, read by the producer's copies and the widening, and its valid bits, read by the
mask) finds the pair it means though the producer writes pair k + 1's sets during pair k.
(The epilogue keeps O in registers: it touches no tile.) It also models the walking CTA (the
kernel's kWalk, over BF16 rows; the model also walks with raw rows): the producer hands
the consumers item after item (an item slot and its Q, loaded once both WGs' last S of
the item before is done), pairs and barrier phases run on across items, and the
producer fills the next item's first pair while the consumers finish the item. It then
breaks the protocol on purpose and checks that each break is caught, so that the check
itself can fail.

Keep it in step with the kernel: FILLS is fill_buf/fill_half, the producer is produce(),
the consumer sequences are Consumer::run, the epilogue is heads_on_m.cuh's finish()."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from protocol import MBar, interleave  # noqa: E402

FILLS = [(0, 0), (1, 1), (0, 1), (1, 0)]  # (buffer, half) in the producer's fill order


def run(ntiles, seed, widen, walk=None, skip_free_wait=False, early_free=False, skip_widen=False,
        unwaited_widen=False, rows_early=False, one_row_set=False, skip_q_free_wait=False, early_q_free=False):
    """ntiles: one item's tiles; walk: the tile counts of the items a walking CTA takes."""
    rnd = random.Random(seed)
    items = walk or [ntiles]
    item_pairs = [(n + 1) // 2 for n in items]
    first_pair = [sum(item_pairs[:j]) for j in range(len(items))]  # global pair index of each item's pair 0
    slot = lambda b, h: 2 * b + h
    # ready: the producer's row-address arrival and its copies' landing.
    ready = [MBar(2) for _ in range(4)]
    free = [MBar(1) for _ in range(4)]
    item_ready = [MBar(2) for _ in range(2)]  # walking, [item % 2]: Q landed, the item written
    q_free = MBar(2)                          # walking: both WGs' last S of the item done
    state = {}    # slot -> (pair, 'loading' | 'landed' (raw) | 'ready')
    readers = {}  # slot -> readers still to come for the pair in it
    named = {}    # (barrier, pair) -> arrivals of the two compute WGs
    landing = []  # slots, and ('Q', item) while walking
    row_sets = {}  # (pair parity, buffer) -> the pair whose row set it holds
    q = {'item': None, 'state': None, 'readers': set()}  # walking: the item whose Q is in shared memory

    def row_set(g, b):
        return (0 if one_row_set else g & 1, b)

    def publish_rows(g):  # publish_rows(): both tiles' sets, then the producer's barrier
        for b in (0, 1):
            row_sets[row_set(g, b)] = g

    def read_rows(g, b, who):
        held = row_sets.get(row_set(g, b))
        assert held == g, f"{who} reads pair {g}'s row set of buffer {b}, which holds pair {held}"

    def land(x):
        if isinstance(x, tuple):  # Q of item x[1]
            q['state'] = 'ready'
            item_ready[x[1] % 2].arrive()
            return
        state[x] = (state[x][0], 'landed' if widen else 'ready')
        ready[x].arrive()

    def read(s, who):
        assert state.get(s, (None, None))[1] == 'ready', f"{who} reads slot {s} before it is ready"
        assert who in readers[s], f"{who} reads slot {s}, refilled under it"

    def hand_over(j):  # walking: item j (len(items): the end) and its Q, once item j - 1's S are done
        if j > 0 and not skip_q_free_wait:
            yield lambda: q_free.passed((j - 1) & 1, j - 1)
        if j < len(items):
            assert not q['readers'], f"Q of item {j} loads while {q['readers']} still read item {q['item']}'s"
            q.update(item=j, state='loading', readers={0, 1})
            landing.append(('Q', j))
        else:
            item_ready[j % 2].arrive()  # no copies: the cp.async arrival completes at once
        item_ready[j % 2].arrive()
        yield lambda: True

    def producer():
        publish_rows(0)
        if walk:
            yield from hand_over(0)
        for j, npairs in enumerate(item_pairs):
            for k in range(npairs):
                g = first_pair[j] + k
                if rows_early and g + 1 < sum(item_pairs):
                    publish_rows(g + 1)
                for f, (b, h) in enumerate(FILLS):
                    s = slot(b, h)
                    if not skip_free_wait:
                        yield lambda s=s, g=g: free[s].passed((g & 1) ^ 1, g - 1 if g else None)
                    assert not readers.get(s), f"slot {s} refilled while {readers.get(s)} still need it"
                    read_rows(g, b, "the producer's copies")
                    state[s] = (g, 'loading')
                    readers[s] = {f"S{b}", f"PV{h}"}  # WG b scores buffer b; WG h owns dims half h
                    landing.append(s)
                    ready[s].arrive()  # publishes the pair's row sets
                    yield lambda: True
                if not rows_early and g + 1 < sum(item_pairs):
                    publish_rows(g + 1)  # pair g's halves issued; pair g - 1's readers are done
                    yield lambda: True
            if walk:  # the item's tiles are all issued: the next item (or the end)
                yield from hand_over(j + 1)

    def widen_own(s, g, w):
        # Consumer::score: the WG's widening of a half it waited for (its threads then
        # meet at kWiden0 + w before the wgmmas, and the other WG reads the half only
        # after this WG's P is ready).
        assert state.get(s) == (g, 'landed'), f"WG {w} widens slot {s} in state {state.get(s)} (pair {g})"
        state[s] = (g, 'ready')

    def arrive(name, g):
        named[name, g] = named.get((name, g), 0) + 1

    def sync(name, g):
        arrive(name, g)
        return lambda: named[name, g] == 2

    def compute(w):
        own, other = w, 1 - w
        for j, npairs in enumerate(item_pairs + ([0] if walk else [])):
            if walk:  # the item (npairs == 0: the end) from the producer
                yield lambda j=j: item_ready[j % 2].passed((j // 2) & 1, j // 2)
                if npairs == 0:
                    return
                assert q['item'] == j and q['state'] == 'ready', f"WG {w} starts item {j} with Q {q}"
            for k in range(npairs):
                g = first_pair[j] + k
                last = k == npairs - 1
                order = (0, 1) if w == 0 else (1, 0)  # the order the producer fills them in
                for h in order:
                    if not unwaited_widen:
                        yield lambda h=h, g=g: ready[slot(own, h)].passed(g & 1, g)
                    if widen and not skip_widen:
                        read_rows(g, own, f"WG {w}'s widening")
                        widen_own(slot(own, h), g, w)
                    if walk and last and early_q_free and h == order[0]:
                        q['readers'].discard(w)
                        q_free.arrive()
                for h in (0, 1):
                    read(slot(own, h), f"S{own}")
                    readers[slot(own, h)].discard(f"S{own}")
                if walk:
                    assert q['item'] == j and q['state'] == 'ready', f"WG {w}'s S of item {j} reads Q {q}"
                    if last and not early_q_free:
                        q['readers'].discard(w)
                        q_free.arrive()  # the item's last S: the next item's Q may load
                read_rows(g, own, f"WG {w}'s mask")
                yield lambda: True  # the mask reads the valid bits after S, apart from the widening
                if w == 0:
                    arrive("max0", g)
                    read(slot(own, 0), "PV0")
                    if early_free:
                        free[slot(own, 0)].arrive()
                    yield sync("max1", g)
                    arrive("p0", g)
                    readers[slot(own, 0)].discard("PV0")
                    if not early_free:
                        free[slot(own, 0)].arrive()
                    yield sync("p1", g)
                    read(slot(other, 0), "PV0")
                    readers[slot(other, 0)].discard("PV0")
                    free[slot(other, 0)].arrive()
                else:
                    yield sync("max0", g)
                    arrive("max1", g)
                    read(slot(own, 1), "PV1")
                    arrive("p1", g)
                    yield sync("p0", g)
                    read(slot(other, 1), "PV1")
                    readers[slot(own, 1)].discard("PV1")
                    free[slot(own, 1)].arrive()
                    readers[slot(other, 1)].discard("PV1")
                    free[slot(other, 1)].arrive()
                yield lambda: True
            # finish(): the row sums and the scales under two barriers; O goes out from
            # registers.
            yield sync("consumers", (j, 0))
            yield sync("consumers", (j, 1))

    agents = {"producer": producer(), "wg0": compute(0), "wg1": compute(1)}
    interleave(agents, rnd, landing, lambda: land(landing.pop(0)))


WALKS = [[1], [2, 3], [4, 1, 2], [6, 6, 5], [3, 8, 1, 2]]  # tile counts of a walking CTA's items


def main():
    for widen in (False, True):
        for ntiles in range(1, 9):
            for seed in range(300):
                run(ntiles, seed, widen)
    for walk in WALKS:
        for widen in (False, True):
            for seed in range(200):
                run(0, seed, widen, walk=walk)
    breaks = [("skip_free_wait", False), ("early_free", False), ("skip_free_wait", True), ("early_free", True),
              ("skip_widen", True), ("unwaited_widen", True),
              ("rows_early", False), ("rows_early", True), ("one_row_set", False), ("one_row_set", True)]
    for broken, widen in breaks:
        try:
            for seed in range(300):
                run(6, seed, widen, **{broken: True})
        except AssertionError:
            continue
        print(f"FAIL: the model does not catch {broken} (widen={widen})")
        return 1
    # The walk's own breaks: Q loaded before the item's last S, Q freed after the first
    # half's wait instead of after S.
    for broken in ("skip_q_free_wait", "early_q_free"):
        try:
            for walk in WALKS[1:]:
                for seed in range(300):
                    run(0, seed, False, walk=walk, **{broken: True})
        except AssertionError:
            continue
        print(f"FAIL: the model does not catch {broken} (walking)")
        return 1
    print("bf16m protocol model: no deadlock, no parity aliasing, no early refill, every row set read for the pair "
          "it holds (BF16 and raw rows, 1-8 tiles, 300 schedules each; "
          "walking CTAs, 200 each); deliberate breaks caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
