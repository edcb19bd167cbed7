"""How many threads the next compiled ``collide`` call runs on: chosen by measured work.

A threaded call shares its large stages out to Numba's threads; each parallel launch wakes them
(passive waiting, ``hydro.jit.configure_runtime``: 5–120 µs a launch on a 2-core VM, far more
when other processes hold the cores, since the launch waits for every thread to arrive). So
threads pay only for a call big enough, on a machine with a core to spare — which a fixed size
threshold cannot know. :class:`ThreadChoice` therefore decides from what calls cost:

1. **Size gate.** A call whose stages are all small (below the pipeline's ``THREADED_*`` counts)
   runs serially, always: a small scene never compiles or wakes threads.
2. **Measured cost.** Above the gate, each call's wall time per unit of work (``work``: the
   call's blocks, triangles, bricks and pairs, weighted by what they cost serially) is kept per
   mode (serial, threaded): the median of the last few calls of the mode in use, the last probe
   of the other; the next call takes the cheaper mode. Threads must beat the serial rate by
   ``margin`` (5 %) to be chosen.
3. **Probes.** The mode not chosen is tried again now and then, so a machine that gets busier or
   quieter changes the choice: after ``probe_every`` calls at first, the interval doubling (up to
   ``probe_max``) each time the probe loses, so a mode that keeps losing costs < 2 % of the calls.

With one Numba thread (``numba.set_num_threads(1)``) every call is serial and no threaded time
is recorded. The first threaded call (which compiles or loads the threaded build) is not timed.
"""

from __future__ import annotations

from collections import deque

__all__ = ["ThreadChoice", "call_work"]


def call_work(pairs: int, bricks: int, blocks: int, triangles: int) -> float:
    """A compiled call's work in units of one marching-cubes block (the serial cost of each item
    relative to a block's, measured on the box and sphere scenes: a candidate brick is refined at
    ~1/4 of a block, a triangle written at ~1/3, a pair set up at ~2)."""
    return 2.0 * pairs + 0.25 * bricks + blocks + 0.33 * triangles


class ThreadChoice:
    """The serial-or-threaded choice of one pipeline (module docstring).

    ``gate(pairs, bricks, blocks, triangles)`` -> bool: whether a call of that size may use
    threads at all (the size gate). ``window``: calls per mode in the running median;
    ``margin``: how much cheaper (fraction) threads must be; ``probe_every`` / ``probe_max``: the
    first and the longest interval between probes of the mode not chosen."""

    def __init__(self, gate, *, window: int = 5, margin: float = 0.05, probe_every: int = 8, probe_max: int = 64):
        self.gate = gate
        self.margin = float(margin)
        self.probe_every = int(probe_every)
        self.probe_max = int(probe_max)
        self.rates = {False: deque(maxlen=window), True: deque(maxlen=window)}  # seconds per unit of work
        self.threaded = False  # the mode the next call runs in
        self.preferred = False  # the cheaper mode as measured
        self.interval = self.probe_every
        self.since_probe = 0
        self.probing = False

    def _rate(self, mode):
        r = sorted(self.rates[mode])
        return r[len(r) // 2] if r else None

    def record(self, threaded: bool, seconds: float, pairs: int, bricks: int, blocks: int, triangles: int,
               threads: int, timed: bool = True) -> bool:
        """Note a call (the mode it ran in, its wall time, its counts, the Numba threads it had;
        ``timed`` False: its time means nothing, e.g. it compiled) and return the mode of the next."""
        if threads <= 1 or not self.gate(pairs, bricks, blocks, triangles):
            # below the gate (or no second thread): serial, and the measurements start afresh
            # when a call is big enough again
            self.threaded = False
            return False
        work = call_work(pairs, bricks, blocks, triangles)
        if timed and work > 0.0:
            rates = self.rates[bool(threaded)]
            if self.probing and bool(threaded) != self.preferred:
                rates.clear()  # a probe: what that mode costs now, not what it cost calls ago
            rates.append(seconds / work)
        serial, parallel = self._rate(False), self._rate(True)
        if self.probing:  # the call just made was a probe of the mode not preferred: did it win?
            self.probing = False
            if parallel is not None and serial is not None:
                better = parallel < (1.0 - self.margin) * serial
                if better != self.preferred:
                    self.preferred = better
                    self.interval = self.probe_every
                else:
                    self.interval = min(2 * self.interval, self.probe_max)
            self.since_probe = 0
        elif serial is not None and parallel is not None:
            self.preferred = parallel < (1.0 - self.margin) * serial
        if parallel is None or serial is None:
            # the mode without a measurement yet is tried next
            self.threaded = parallel is None
            self.probing = self.threaded != self.preferred
            return self.threaded
        self.since_probe += 1
        if self.since_probe >= self.interval:
            self.threaded = not self.preferred
            self.probing = True
        else:
            self.threaded = self.preferred
        return self.threaded
