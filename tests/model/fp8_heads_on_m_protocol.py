#!/usr/bin/env python3
"""Model check of the synchronisation protocol of src/cuda/prefill/fp8_heads_on_m.cuh
(not its arithmetic). The agents are the gather warpgroup, the transpose warpgroup and the
two compute warpgroups (each one agent: their threads move together between barriers);
cp.async completions land at random later times. The gather WG fills a buffer (rows, row
mask, K copies) once its S is done and the transpose WG has read its K (k_read); the
transpose WG transposes K to V^T one half at a time; WG b scores buffer b, WG h owns V
half h of both buffers, and the WGs hand each other max and P through shared memory under
named barriers (both take the pair's max after one barrier), modelled as the hardware
counts them (per id, whoever arrives). Over many random interleavings it checks that
nothing deadlocks, that no mbarrier wait is satisfied by a phase other than the one it
means (parity aliasing), that nothing is read before it is written for that pair (K, row
mask, V, P, max), that nothing is overwritten while a reader still needs it. (The
epilogue keeps O in registers: it touches no tile.) Both launch forms: one item per CTA,
and the walk (kWalk), where the gather WG hands the consumers and the transpose WG item
after item (item slot, Q through cp.async, q_free after the item's last S), pairs and
barrier phases run on across items, and the next item's first pair is copied and
transposed while the consumers finish the item. It then breaks the protocol on purpose and
checks that each break is caught, so that the check itself can fail. Not modelled: the
order among the gather WG's own threads (fill's kProducer barrier) and the proxy fences.

Keep it in step with the kernel: the gather WG is gather() with its fill(), the transpose
WG transpose_all(), the consumer sequences are Consumer::run, the epilogue is
heads_on_m.cuh's finish()."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from protocol import MBar, interleave  # noqa: E402

TRANSPOSES = [(0, 0), (1, 1), (1, 0), (0, 1)]  # (buffer, half) in the transpose WG's order


def run(ntiles, seed, walk=None, skip_k_free_wait=False, skip_v_free_wait=False, early_v_free=False,
        early_k_free=False, skip_q_free_wait=False, skip_k_read_wait=False, early_k_read=False):
    """ntiles: one item's tiles; walk: the tile counts of the items a walking CTA takes."""
    rnd = random.Random(seed)
    items = walk or [ntiles]
    item_pairs = [(n + 1) // 2 for n in items]
    pairs = sum(item_pairs)
    item_ready = [MBar(2) for _ in range(2)]  # [slot]: the item written, its Q landed
    q_free = MBar(2)                          # both WGs: the item's last S done
    k_ready = [MBar(2) for _ in range(4)]  # [buf*2+half]: the row-address arrival, the copies' landing
    v_ready = [MBar(1) for _ in range(4)]  # [buf*2+half]: transposed
    k_free = [MBar(1) for _ in range(2)]   # [buf]: WG buf's S and row-mask read done
    v_free = [MBar(1) for _ in range(4)]   # [buf*2+half]: WG half's P . V over it done
    k_read = [MBar(1) for _ in range(2)]   # [buf]: the transpose WG read both halves of K
    # Shared memory: ('K', buf, half), ('mask', buf), ('V', buf, half), ('P', buf), ('max', wg, pair % 2),
    # and when walking ('Q',) and ('item', slot).
    data = {}     # -> (pair, 'ready' | 'loading' | 'writing')
    readers = {}  # -> the agents still to read what is there
    named = {}    # named barrier -> [arrivers of the open generation, generations completed]
    landing = []  # K halves (buf, half) and Q (slot, item) whose copies are in flight
    ok = lambda: True

    def wait(bar, j, parity):  # mbar_wait(bar, parity), meaning phase j (-1: the fresh barrier's)
        assert parity == j & 1
        return lambda: bar.passed(parity, j if j >= 0 else None)

    def write(res, k, state, who_reads):
        assert not readers.get(res), f"{res} rewritten for pair {k} while {sorted(readers[res])} still need it"
        data[res], readers[res] = (k, state), set(who_reads)

    def read(res, k, who, end=True):
        assert data.get(res) == (k, 'ready'), f"{who} reads {res} of pair {k} as {data.get(res)}"
        assert who in readers[res], f"{who} reads {res} of pair {k}, rewritten under it"
        if end:
            readers[res].discard(who)

    def arrive(name, who):  # bar.arrive: a generation completes at 256 threads, i.e. two WGs' arrivals
        bar = named.setdefault(name, [[], 0])
        bar[0].append(who)
        if len(bar[0]) == 2:
            assert bar[0][0] != bar[0][1], f"named barrier {name} completed by {who} alone"
            bar[0], bar[1] = [], bar[1] + 1

    def sync(name, who):  # bar.sync
        gen = named.setdefault(name, [[], 0])[1]
        arrive(name, who)
        return lambda: named[name][1] > gen

    def land():
        what = landing.pop(rnd.randrange(len(landing)))
        if what[0] == 'Q':
            data['Q',] = (what[2], 'ready')
            item_ready[what[1]].arrive()
            return
        b, h = what
        data['K', b, h] = (data['K', b, h][0], 'ready')
        k_ready[2 * b + h].arrive()

    def gather():
        def fill(b, k):
            write(('mask', b), k, 'ready', {f"wg{b}"})
            for h in (0, 1):
                write(('K', b, h), k, 'loading', {f"wg{b}", "transposer"})
                landing.append((b, h))
                k_ready[2 * b + h].arrive()  # the row addresses
                yield ok

        def hand_over(j):  # item j (len(items): the end) to the consumers and the transpose WG
            slot = j % 2
            if j > 0 and not skip_q_free_wait:
                yield wait(q_free, j - 1, (j - 1) & 1)
            if j < len(items):
                write(('Q',), j, 'loading', {"wg0", "wg1"})
                landing.append(('Q', slot, j))
            else:
                item_ready[slot].arrive()  # no copies: the cp.async arrival is immediate
            write(('item', slot), j, 'ready', {"wg0", "wg1", "transposer"})
            item_ready[slot].arrive()
            yield ok

        if walk:
            yield from hand_over(0)
        yield from fill(0, 0)
        yield from fill(1, 0)
        k, last_pairs = 0, set()
        for j, n in enumerate(item_pairs):
            k += n
            last_pairs.add(k - 1)
        for k in range(pairs):
            if walk and k in last_pairs:
                yield from hand_over(sorted(last_pairs).index(k) + 1)
            if k + 1 < pairs:
                for b in (0, 1):
                    if not skip_k_free_wait:
                        yield wait(k_free[b], k, k & 1)
                    if not skip_k_read_wait:
                        yield wait(k_read[b], k, k & 1)
                    yield from fill(b, k + 1)

    def transposer():  # transpose_all: follows the items as the consumers do
        me, k = "transposer", 0
        for j, n in enumerate(item_pairs + ([0] if walk else [])):
            if walk:
                yield wait(item_ready[j % 2], j // 2, (j // 2) & 1)
                read(('item', j % 2), j, me)
            if n == 0:
                break
            for _ in range(n):
                for x, (b, h) in enumerate(TRANSPOSES):
                    s = 2 * b + h
                    yield wait(k_ready[s], k, k & 1)
                    if not skip_v_free_wait:
                        yield wait(v_free[s], k - 1, (k & 1) ^ 1)
                    if early_k_read and x >= 2:
                        k_read[b].arrive()
                        yield ok
                    read(('K', b, h), k, me, end=False)
                    write(('V', b, h), k, 'writing', {f"wg{h}"})
                    yield ok
                    read(('K', b, h), k, me)
                    data['V', b, h] = (k, 'ready')
                    v_ready[s].arrive()
                    if x >= 2 and not early_k_read:  # buffer b's second half read
                        k_read[b].arrive()
                k += 1

    def score(b, k, me, item, last):  # score() and mask_and_max over buffer b, then k_free[b]
        for h in (0, 1):
            yield wait(k_ready[2 * b + h], k, k & 1)
            read(('K', b, h), k, me, end=False)
            if walk:
                read(('Q',), item, me, end=False)
            yield ok
        for h in (0, 1):
            read(('K', b, h), k, me)  # wgmma_wait<0>
        if walk and last:
            read(('Q',), item, me)
        if early_k_free:
            k_free[b].arrive()
            yield ok
        read(('mask', b), k, me)
        if not early_k_free:
            k_free[b].arrive()

    def consumer(w):  # Consumer::run of WG w: scores buffer w, owns V half w of both buffers
        me, own, other = f"wg{w}", w, 1 - w
        k = 0
        for j, n in enumerate(item_pairs + ([0] if walk else [])):
            if walk:  # the item (n == 0: the end) from the producer
                yield wait(item_ready[j % 2], j // 2, (j // 2) & 1)
                read(('item', j % 2), j, me)
            if n == 0:
                break
            for _ in range(n):
                last = _ == n - 1
                yield from pair(k, j, last, w, me, own, other)
                k += 1
            yield sync("consumers", me)  # finish(): the row sums written
            yield sync("consumers", me)  # the heads' scales; O goes out from registers

    def pair(k, j, last, w, me, own, other):  # pair k (item j's last when `last`)
        yield from score(own, k, me, j, last)
        if walk and last:
            q_free.arrive()
        write(('max', w, k & 1), k, 'ready', {f"wg{other}"})  # exchange_max
        yield sync("max", me)
        read(('max', other, k & 1), k, me)
        yield ok
        write(('P', w), k, 'ready', {f"wg{other}"})
        arrive(f"p{w}", me)
        yield wait(v_ready[2 * own + w], k, k & 1)
        if early_v_free and w == 0:
            v_free[2 * own + w].arrive()
            yield ok
        read(('V', own, w), k, me, end=False)  # P . V own, in flight
        yield sync(f"p{other}", me)
        yield wait(v_ready[2 * other + w], k, k & 1)
        read(('V', other, w), k, me, end=False)  # P . V other, in flight
        read(('P', other), k, me, end=False)
        yield ok
        read(('V', own, w), k, me)  # wgmma_wait<1>
        if not (early_v_free and w == 0):
            v_free[2 * own + w].arrive()
        yield ok
        read(('V', other, w), k, me)  # wgmma_wait<0>
        read(('P', other), k, me)
        v_free[2 * other + w].arrive()

    agents = {"gather": gather(), "transposer": transposer(), "wg0": consumer(0), "wg1": consumer(1)}
    interleave(agents, rnd, landing, land)
    assert not landing and all(b.completed == pairs and b.arrivals == 0 for b in k_ready + v_ready + k_free + v_free
                               + k_read)
    if walk:
        assert sum(b.completed for b in item_ready) == len(items) + 1 and q_free.completed == len(items)
    assert all(not arrivers for arrivers, _ in named.values())


WALKS = [[1], [2, 3], [4, 1, 2], [6, 6, 5], [3, 8, 1, 2]]  # tile counts of a walking CTA's items


def main():
    for ntiles in range(1, 9):
        for seed in range(300):
            run(ntiles, seed)
    for walk in WALKS:
        for seed in range(300):
            run(0, seed, walk=walk)
    breaks = [(b, None) for b in ("skip_k_free_wait", "skip_v_free_wait", "early_v_free", "early_k_free",
                                  "skip_k_read_wait", "early_k_read")]
    breaks += [(b, [4, 2, 3]) for b in ("skip_q_free_wait",)]
    for broken, walk in breaks:
        try:
            for seed in range(300):
                run(6, seed, walk=walk, **{broken: True})
        except AssertionError:
            continue
        print(f"FAIL: the model does not catch {broken}")
        return 1
    print("fp8m protocol model: no deadlock, no parity aliasing, no early read or overwrite of K, row masks, "
          "V, P, max, Q or item slots (1-8 tiles, and walks of 1-4 items; "
          "300 schedules each); deliberate breaks caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
