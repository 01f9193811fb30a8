"""A proposer run ahead of the search in a thread (``ProposeAhead``).

On a GPU the model strategy's proposing bounded the tuner: on an H200 with 15 build workers
each trial's build and measurement took the pipeline about 20 ms, while proposing one took
the search's thread 55-65 ms (mostly waiting for the candidates' lowering, in processes), so
the device measured 550-720 configs a minute (``benchmarks/gpu/throughput_probe.py``). Here
the proposer fills a queue of ``ahead`` candidates in a thread of its own while the search
builds and measures: the search takes a candidate without waiting unless the queue is empty,
and hands each result over without waiting; the thread learns the results before it proposes
again. The candidates then come from a model that lacks the last few results, which a
pipelined search has anyway (its builds run ahead of its measurements).

Proposals depend on when results arrive, so a search with it is not repeatable trial for
trial; the CPU device's search (builds and measurements take turns) does not use it.
"""

from __future__ import annotations

import collections
import threading
from typing import Any


class ProposeAhead:
    """``proposer`` (``next``, ``observe``, ``state``) run ahead in a daemon thread, with up to
    ``ahead`` of its candidates ready. ``next`` raises what the proposer raised; ``close``
    stops the thread (it does not close the proposer)."""

    def __init__(self, proposer: Any, ahead: int):
        self.proposer, self.ahead = proposer, max(1, ahead)
        self._ready: collections.deque[dict] = collections.deque()
        self._results: collections.deque[tuple[dict, str, float | None]] = collections.deque()
        self._cond = threading.Condition()
        self._spent = False  # the proposer returned None
        self._stop = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="propose-ahead", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            while True:
                with self._cond:
                    while not (self._stop or self._results or self._wanted()):
                        self._cond.wait()
                    if self._stop:
                        return
                    results = list(self._results)
                    self._results.clear()
                    want = self._wanted()
                for config, status, gflops in results:
                    self.proposer.observe(config, status, gflops)
                if not want:
                    continue
                config = self.proposer.next()
                with self._cond:
                    if config is None:
                        self._spent = True
                    else:
                        self._ready.append(config)
                    self._cond.notify_all()
        except BaseException as exc:  # noqa: BLE001  (handed to the search's thread)
            with self._cond:
                self._error, self._spent = exc, True
                self._cond.notify_all()

    def _wanted(self) -> bool:
        return len(self._ready) < self.ahead and not self._spent

    def next(self) -> dict | None:
        """The next candidate (waiting for one while the queue is empty); None once the
        proposer is spent and every candidate was taken."""
        with self._cond:
            while not self._ready and not self._spent:
                self._cond.wait()
            if self._ready:
                config = self._ready.popleft()
                self._cond.notify_all()
                return config
            if self._error is not None:
                raise self._error
            return None

    def observe(self, config: dict, status: str, gflops: float | None) -> None:
        """Hand a trial's result to the proposer (learned before its next proposal)."""
        with self._cond:
            self._results.append((config, status, gflops))
            self._cond.notify_all()

    def state(self) -> str:
        return self.proposer.state()

    def close(self) -> None:
        """Stop the thread once its current step ends (it learns no more results)."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join()
