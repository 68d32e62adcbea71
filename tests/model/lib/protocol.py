"""What the protocol models (tests/model/*.py) share: the mbarrier (arrivals, completed
phases, try_wait.parity with a check that the phase it passes on is the one the caller
means) and the scheduler that interleaves the agents."""


class MBar:
    """An mbarrier: a phase completes when `count` arrivals are in."""

    def __init__(self, count):
        self.count, self.arrivals, self.completed = count, 0, 0

    def arrive(self):
        self.arrivals += 1
        assert self.arrivals <= self.count
        if self.arrivals == self.count:
            self.arrivals, self.completed = 0, self.completed + 1

    def passed(self, parity, meant_phase):
        """try_wait.parity; meant_phase: the phase the caller means (None: a fresh barrier)."""
        ok = self.completed % 2 != parity
        if ok and meant_phase is not None:
            assert self.completed == meant_phase + 1, f"parity aliasing: {self.completed} phases done, meant {meant_phase}"
        return ok


def interleave(agents, rnd, landing, land):
    """Runs the agents (generators that yield what they wait for, as a callable) in a
    random order until all are done; `land()` lands one of the copies in `landing` (a
    list), at random times and whenever nothing else can run. Raises on a deadlock."""
    waits = {name: (lambda: True) for name in agents}
    done = set()
    while len(done) < len(agents):
        if landing and rnd.random() < 0.3:
            land()
            continue
        runnable = [n for n in agents if n not in done and waits[n]()]
        if not runnable:
            if landing:
                land()
                continue
            raise AssertionError(f"deadlock: {sorted(set(agents) - done)} all wait")
        n = rnd.choice(runnable)
        try:
            waits[n] = next(agents[n])
        except StopIteration:
            done.add(n)
