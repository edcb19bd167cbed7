"""How many threads the next compiled ``collide`` call runs on: chosen by measured work.

A threaded call shares its large stages out to Numba's threads; each parallel launch wakes them
(passive waiting, ``hydro.jit.configure_runtime``: 5–120 µs a launch on a 2-core VM) and waits
for every one of them to arrive, which on a machine whose cores are busy with other processes
can take milliseconds. So threads pay only for a call big enough, on a machine with a core to
spare — which a fixed size threshold cannot know. :class:`ThreadChoice` decides from what calls
cost, biased to one thread (a wrong "serial" costs at most what threads would have saved; a
wrong "threaded" can cost many times the call):

1. **Size gate.** A call whose stages are all small (below the pipeline's ``THREADED_*`` counts)
   runs serially, always: a small scene never compiles or wakes threads.
2. **A spare core.** Threads need a core nobody else uses: when the machine's load (the 1-minute
   load average, read at most twice a second, less this process' own share) leaves none, calls
   run serially.
3. **Measured cost.** Above the gate, each call's wall time per unit of work (``work``: the
   call's blocks, triangles, bricks and pairs, weighted by what they cost serially) is kept per
   mode as the median of its last few calls. The other mode is *probed* now and then, by two
   calls in a row: threads are taken only when both probe calls beat the serial median by
   ``margin`` (5 %); while threaded, one probe call of the serial mode that comes within the
   margin, or a threaded median that falls behind, goes back to one thread.
4. **Probe intervals** start at ``probe_every`` calls and double (up to ``probe_max``) each time
   the probe confirms the choice, so a mode that keeps losing costs < 2 % of the calls, and a
   machine that gets busier or quieter changes the choice within ``probe_max`` calls.

With one Numba thread (``numba.set_num_threads(1)``) every call is serial and nothing is
recorded; the plan made before resumes when the threads are back (:meth:`ThreadChoice.resume`).
A call that compiled (the first of a build) or grew buffers is not timed.
"""

from __future__ import annotations

import os
import time
from collections import deque

__all__ = ["ThreadChoice", "call_work", "spare_cores"]


def call_work(pairs: int, bricks: int, blocks: int, triangles: int) -> float:
    """A compiled call's work in units of one marching-cubes block (the serial cost of each item
    relative to a block's: a candidate brick is refined at ~1/4 of a block, a triangle written at
    ~1/3, a pair set up at ~2)."""
    return 2.0 * pairs + 0.25 * bricks + blocks + 0.33 * triangles


def spare_cores(own: float) -> float:
    """Cores no other process uses, from the 1-minute load average less ``own`` (this process'
    runnable threads on average); the core count where the load cannot be read."""
    cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # not on this platform: assume the cores are free
        return float(cpus)
    return max(0.0, cpus - max(0.0, load - own))


class ThreadChoice:
    """The serial-or-threaded choice of one pipeline (module docstring).

    ``gate(pairs, bricks, blocks, triangles)`` -> bool: whether a call of that size may use
    threads at all. ``window``: calls per mode in the running median; ``margin``: how much
    cheaper (fraction) threads must be; ``probe_every`` / ``probe_max``: the first and the
    longest interval between probes; ``spare``: ``spare_cores(own)`` (replaceable in tests)."""

    PROBE_CALLS = 2

    def __init__(self, gate, *, window: int = 5, margin: float = 0.05, probe_every: int = 8, probe_max: int = 128,
                 spare=spare_cores):
        self.gate = gate
        self.margin = float(margin)
        self.probe_every = int(probe_every)
        self.probe_max = int(probe_max)
        self.spare = spare
        self.rates = {False: deque(maxlen=window), True: deque(maxlen=window)}  # seconds per unit of work
        self.threaded = False  # the mode the next call runs in
        self.preferred = False  # the mode measured cheaper
        self.interval = self.probe_every
        self.since_probe = 0
        self.probe = []  # the rates of the probe under way (the mode not preferred)
        self.threaded_share = 0.0  # running share of threaded calls (this process' load)
        self._spare_at = -1.0
        self._spare = True

    def resume(self) -> bool:
        """The mode planned before calls with one Numba thread interrupted (for a caller whose
        thread count is back above one)."""
        return self.threaded

    def _median(self, mode):
        r = sorted(self.rates[mode])
        return r[len(r) // 2] if r else None

    def _core_free(self, threads) -> bool:
        now = time.monotonic()
        if now - self._spare_at > 0.5:
            self._spare_at = now
            own = 1.0 + (threads - 1) * self.threaded_share
            self._spare = self.spare(own) >= 1.5  # one core for this thread, one more for a second
        return self._spare

    def _serial(self):
        self.threaded = False
        return False

    def record(self, threaded: bool, seconds: float, pairs: int, bricks: int, blocks: int, triangles: int,
               threads: int, timed: bool = True) -> bool:
        """Note a call (the mode it ran in, its wall time, its counts, the Numba threads it had;
        ``timed`` False: its time means nothing, e.g. it compiled) and return the mode of the next."""
        threaded = bool(threaded)
        if threads <= 1:
            # no second thread for now: serial, but the plan stays for when threads are back
            # (``threaded`` still says it; see resume)
            return False
        if not self.gate(pairs, bricks, blocks, triangles):
            return self._serial()  # below the gate
        self.threaded_share += (float(threaded) - self.threaded_share) / 32.0
        work = call_work(pairs, bricks, blocks, triangles)
        rate = seconds / work if timed and work > 0.0 else None
        if rate is not None:
            self.rates[threaded].append(rate)
        if not self._core_free(threads):
            self.preferred = False
            self.probe = []
            return self._serial()
        serial, parallel = self._median(False), self._median(True)
        if serial is None:  # measure the serial mode first
            return self._serial()
        if threaded != self.preferred:  # a probe call
            if rate is not None:
                self.probe.append(rate)
            if len(self.probe) < self.PROBE_CALLS:
                self.threaded = threaded  # the probe's next call
                return threaded
            if self.preferred:  # serial probed: threads stay only if both serial calls lost clearly
                keep = all(parallel is not None and parallel < (1.0 - self.margin) * r for r in self.probe)
                switch = not keep
            else:  # threads probed: taken only if both probe calls won clearly
                switch = all(r < (1.0 - self.margin) * serial for r in self.probe)
            self.probe = []
            self.since_probe = 0
            if switch:
                self.preferred = not self.preferred
                self.interval = self.probe_every
            else:
                self.interval = min(2 * self.interval, self.probe_max)
        elif self.preferred and parallel is not None and not parallel < (1.0 - self.margin) * serial:
            self.preferred = False  # threads fell behind (the machine got busy): back to one
            self.interval = self.probe_every
            self.since_probe = 0
        else:
            self.since_probe += 1
        if self.since_probe >= self.interval or (not self.preferred and not self.rates[True]):
            self.since_probe = 0
            self.threaded = not self.preferred  # probe the other mode (threads: never measured yet)
        else:
            self.threaded = self.preferred
        return self.threaded
