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
mask) finds the pair it means though the producer writes pair k + 1's sets during pair k,
and that the epilogue stages O over the tiles only once
nobody needs them and no copy is landing there. It then breaks the protocol on purpose and checks that
each break is caught, so that the check itself can fail.

Keep it in step with the kernel: FILLS is fill_buf/fill_half, the producer is produce(),
the consumer sequences are Consumer::run, the epilogue is heads_on_m.cuh's finish()."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from protocol import MBar, interleave  # noqa: E402

FILLS = [(0, 0), (1, 1), (0, 1), (1, 0)]  # (buffer, half) in the producer's fill order


def run(ntiles, seed, widen, skip_free_wait=False, early_free=False, skip_widen=False, unwaited_widen=False,
        early_stage=False, rows_early=False, one_row_set=False):
    rnd = random.Random(seed)
    pairs = (ntiles + 1) // 2
    slot = lambda b, h: 2 * b + h
    # ready: the producer's row-address arrival and its copies' landing.
    ready = [MBar(2) for _ in range(4)]
    free = [MBar(1) for _ in range(4)]
    state = {}    # slot -> (pair, 'loading' | 'landed' (raw) | 'ready')
    readers = {}  # slot -> readers still to come for the pair in it
    named = {}    # (barrier, pair) -> arrivals of the two compute WGs
    landing = []
    row_sets = {}  # (pair parity, buffer) -> the pair whose row set it holds

    def row_set(k, b):
        return (0 if one_row_set else k & 1, b)

    def publish_rows(k):  # publish_rows(): both tiles' sets, then the producer's barrier
        for b in (0, 1):
            row_sets[row_set(k, b)] = k

    def read_rows(k, b, who):
        held = row_sets.get(row_set(k, b))
        assert held == k, f"{who} reads pair {k}'s row set of buffer {b}, which holds pair {held}"

    def land(s):
        state[s] = (state[s][0], 'landed' if widen else 'ready')
        ready[s].arrive()

    def read(s, who):
        assert state.get(s, (None, None))[1] == 'ready', f"{who} reads slot {s} before it is ready"
        assert who in readers[s], f"{who} reads slot {s}, refilled under it"

    def producer():
        publish_rows(0)
        for k in range(pairs):
            if rows_early and k + 1 < pairs:
                publish_rows(k + 1)
            for f, (b, h) in enumerate(FILLS):
                s = slot(b, h)
                if not skip_free_wait:
                    yield lambda s=s, k=k: free[s].passed((k & 1) ^ 1, k - 1 if k else None)
                assert not readers.get(s), f"slot {s} refilled while {readers.get(s)} still need it"
                read_rows(k, b, "the producer's copies")
                state[s] = (k, 'loading')
                readers[s] = {f"S{b}", f"PV{h}"}  # WG b scores buffer b; WG h owns dims half h
                landing.append(s)
                ready[s].arrive()  # publishes the pair's row sets
                yield lambda: True
            if not rows_early and k + 1 < pairs:
                publish_rows(k + 1)  # pair k's halves issued; pair k - 1's readers are done
                yield lambda: True

    def widen_own(s, k, w):
        # Consumer::score: the WG's widening of a half it waited for (its threads then
        # meet at kWiden0 + w before the wgmmas, and the other WG reads the half only
        # after this WG's P is ready).
        assert state.get(s) == (k, 'landed'), f"WG {w} widens slot {s} in state {state.get(s)} (pair {k})"
        state[s] = (k, 'ready')

    def arrive(name, k):
        named[name, k] = named.get((name, k), 0) + 1

    def sync(name, k):
        arrive(name, k)
        return lambda: named[name, k] == 2

    def compute(w):
        own, other = w, 1 - w
        for k in range(pairs):
            order = (0, 1) if w == 0 else (1, 0)  # the order the producer fills them in
            for h in order:
                if not unwaited_widen:
                    yield lambda h=h, k=k: ready[slot(own, h)].passed(k & 1, k)
                if widen and not skip_widen:
                    read_rows(k, own, f"WG {w}'s widening")
                    widen_own(slot(own, h), k, w)
            for h in (0, 1):
                read(slot(own, h), f"S{own}")
                readers[slot(own, h)].discard(f"S{own}")
            read_rows(k, own, f"WG {w}'s mask")
            yield lambda: True  # the mask reads the valid bits after S, apart from the widening
            if w == 0:
                arrive("max0", k)
                read(slot(own, 0), "PV0")
                if early_free:
                    free[slot(own, 0)].arrive()
                yield sync("max1", k)
                arrive("p0", k)
                readers[slot(own, 0)].discard("PV0")
                if not early_free:
                    free[slot(own, 0)].arrive()
                yield sync("p1", k)
                read(slot(other, 0), "PV0")
                readers[slot(other, 0)].discard("PV0")
                free[slot(other, 0)].arrive()
            else:
                yield sync("max0", k)
                arrive("max1", k)
                read(slot(own, 1), "PV1")
                arrive("p1", k)
                yield sync("p0", k)
                read(slot(other, 1), "PV1")
                readers[slot(own, 1)].discard("PV1")
                free[slot(own, 1)].arrive()
                readers[slot(other, 1)].discard("PV1")
                free[slot(other, 1)].arrive()
            yield lambda: True
        # finish(): the row sums and the scales under two barriers, then O staged over Q
        # and the tiles, then a third barrier before the stores out read it.
        if not early_stage:
            yield sync("consumers", pairs)
            yield sync("consumers", pairs + 1)
        for s in range(4):
            assert not readers.get(s), f"WG {w} stages O over slot {s} while {readers[s]} still need it"
            assert state.get(s, (None, 'ready'))[1] == 'ready', f"WG {w} stages O over slot {s} while it is filled"
        yield sync("consumers", pairs + 2)

    agents = {"producer": producer(), "wg0": compute(0), "wg1": compute(1)}
    interleave(agents, rnd, landing, lambda: land(landing.pop(0)))


def main():
    for widen in (False, True):
        for ntiles in range(1, 9):
            for seed in range(300):
                run(ntiles, seed, widen)
    breaks = [("skip_free_wait", False), ("early_free", False), ("skip_free_wait", True), ("early_free", True),
              ("skip_widen", True), ("unwaited_widen", True), ("early_stage", False), ("early_stage", True),
              ("rows_early", False), ("rows_early", True), ("one_row_set", False), ("one_row_set", True)]
    for broken, widen in breaks:
        try:
            for seed in range(300):
                run(6, seed, widen, **{broken: True})
        except AssertionError:
            continue
        print(f"FAIL: the model does not catch {broken} (widen={widen})")
        return 1
    print("bf16m protocol model: no deadlock, no parity aliasing, no early refill, every row set read for the pair "
          "it holds, no O staged over a tile still needed (BF16 and raw rows, 1-8 tiles, 300 schedules each); "
          "deliberate breaks caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
