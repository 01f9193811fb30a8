"""The hypothesis strategy of fuzz cases: draw sizes, then steps on a live schedule."""

from __future__ import annotations

from . import misuses
from . import steps as moves
from .live import Live
from .model import WORKLOADS
from .render import Case
from .workloads import draw_sizes


def cases(workloads=WORKLOADS, mode="legal", max_steps=8, small=True, duplicate_names=False):
    """A hypothesis strategy of ``Case`` s. ``mode``: ``"legal"``, ``"illegal"`` or
    ``"random"`` (see the module docstring); ``small`` keeps sizes at most 8 (and primes up to
    13); ``duplicate_names`` lets two cache stages take one name (``cache_read(A, "local")``
    twice), which the IR text round trip (``TS_ROUNDTRIP=1``) does not handle yet."""
    from hypothesis import strategies as st

    @st.composite
    def draw_case(draw):
        workload = draw(st.sampled_from(list(workloads)))
        sizes = draw_sizes(draw, workload, small)
        live = Live(draw, workload, sizes, mode, duplicate_names)
        if mode != "random" and draw(st.booleans()):
            split = draw(st.integers(0, 3)) == 0
            if split:  # split-K first (reductions only)
                for step in moves.split_k(live) or ():
                    if not live.apply(step):
                        break
            for step in moves.gpu_start(live) or ():
                if not live.apply(step):
                    break
            if split and not live.dead and draw(st.booleans()):  # ... added in one kernel
                for step in moves.group_sum(live) or ():
                    if not live.apply(step):
                        break
                if not live.dead and draw(st.integers(0, 3)):  # its part spread over threads
                    for step in moves.coop_fetch(live, group_part=True) or ():
                        if not live.apply(step):
                            break
        n = draw(st.integers(0, max_steps))
        for _ in range(n):
            if live.dead:
                break
            if mode == "random":
                steps = [misuses.random_step(live)]
            else:
                steps = moves.legal_step(live)
            for step in steps or ():
                if step is None or not live.apply(step):
                    break
            if mode != "random" and not live.dead:
                moves.fill_new_tiles(live)
        if mode == "legal" and not live.dead:
            moves.place_caches(live)
        if mode == "legal" and not live.dead:
            moves.decorate_tiles(live)
        if mode == "illegal" and not live.dead:
            moves.place_caches(live)
        if mode == "illegal" and not live.dead:
            bad = misuses.illegal_steps(live)
            for step in bad or ():
                if not live.apply(step):
                    break
        return Case(workload, sizes, tuple(live.steps), mode)

    return draw_case()
