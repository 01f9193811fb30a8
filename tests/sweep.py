"""The Oclgrind sweep: kernels of every schedule template (at a sample of its knob settings)
and of the schedule fuzzer, run under Oclgrind with its checkers for out-of-bounds accesses,
data races between work-items and uses of uninitialised values (``run_checked``), and
compared with numpy. Any report is a failure.

``scripts/oclgrind_sweep.py`` runs it and prints the counts; ``tests/opencl/test_sweep.py``
runs a bounded sample. Oclgrind interprets every work-item, so the shapes are tiny.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from tensorsched.ops.conv2d import ConvShape
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES
from tensorsched.runtime.device import DeviceLimits
from tensorsched.runtime.numerics import NumericsMismatch, compare, poisoned

# Oclgrind's device (its 32 KiB of __local memory: a work-group tile keeps its size however
# small the tensor, so a config must fit it as on a real device)
OCLGRIND_LIMITS = DeviceLimits("Oclgrind Simulator", 1024, (1024, 1024, 1024), 32768)
GEMM_SHAPE = (9, 8, 5)  # M, N, K (N a multiple of 4 for adreno)
CONV_SHAPE = ConvShape(1, 2, 5, 6, 3, 3, 3, 1, 1)
EPILOGUES = ((), ("bias", "relu"), ("sigmoid",))
NETWORK_SHAPES = {  # the fields of templates.SHAPES[kind]
    "depthwise_conv2d": (1, 3, 5, 6, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1),
    "group_conv2d": (1, 4, 5, 6, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1),
    "dense": (1, 7, 13),
    "pool": (1, 2, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 0),
    "softmax": (2, 9),
    # N, CI, ID, IH, IW, CO, KD, KH, KW, groups, strides (d, h, w), pads (front, top, left,
    # back, bottom, right), dilations (d, h, w)
    "conv3d": (1, 2, 4, 5, 6, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
}


@dataclass
class SweepCount:
    """What a sweep ran: schedules (template configs or fuzz cases) that were run, the
    ``__kernel`` functions among them, and those that were skipped (an invalid knob setting,
    or a fuzzed schedule that lowering refused)."""

    schedules: int = 0
    kernels: int = 0
    skipped: int = 0
    seconds: float = 0.0
    runs: list = field(default_factory=list)  # (label, kernels) per checked schedule


def template_points(kind, name, k=2, seed=0):
    """Knob settings to check for one template: the defaults, the first and last points of
    its grid, and ``k`` random ones (deterministic for ``seed``)."""
    from tensorsched import tune

    task = tune.Task(kind, name, _shape(kind))
    space = task.space()  # points picked by number: a space may hold 10^8 of them
    n = space.size()
    rng = np.random.default_rng(seed)
    picks = [space.point(0), space.point(n - 1)] + [
        space.point(int(i)) for i in rng.choice(n, min(k, n), replace=False)
    ]
    out = [{}]
    for p in picks:
        if p not in out:
            out.append(p)
    return out


def _shape(kind):
    if kind in NETWORK_SHAPES:
        return NETWORK_SHAPES[kind]
    return GEMM_SHAPE if kind == "gemm" else tuple(CONV_SHAPE.__dict__.values())


def check_template(kind, name, config, epilogue=(), seed=0):
    """Run one template at one knob setting under Oclgrind and compare with numpy. Returns
    the number of ``__kernel`` functions checked, or None when the setting is invalid."""
    from tensorsched import tune
    from tensorsched.codegen.opencl import emit_opencl
    from tensorsched.runtime.oclgrind import run_checked
    from tensorsched.schedules.lower import lower

    task = tune.Task(kind, name, _shape(kind), epilogue=epilogue)
    s, args, cfg = task.instantiate(Config(config, limits=OCLGRIND_LIMITS))
    if not cfg.valid:
        return None
    func = lower(s, args, name=f"{kind}_{name}")
    ins = task.inputs(args, seed)
    out = poisoned(args[-1].shape, args[-1].dtype)
    # Oclgrind's uninitialised-value checker does not see the texels of an image written from
    # the host: every read_imagef counts as uninitialised (a raw 4-line kernel shows it), so
    # functions with image inputs are checked for bounds and races only
    run_checked(func, ins + [out], uninitialized=not any(b.image for b in func.args))
    try:
        compare(out, task.reference(ins), args[-1].dtype, name=f"{kind}/{name} {config}")
    except NumericsMismatch as exc:
        raise NumericsMismatch(f"{exc} (epilogue {epilogue})") from None
    return len(emit_opencl(func).kernels)


def sweep_templates(per_template=2, seed=0, names=None, log=None):
    """Every template of ``TEMPLATES`` at ``template_points(k=per_template)``; the
    epilogues rotate through ``EPILOGUES``. ``names`` restricts to ``[(kind, name), ...]``."""
    count, t0 = SweepCount(), time.time()
    for kind in TEMPLATES:
        for name in TEMPLATES[kind]:
            if names is not None and (kind, name) not in names:
                continue
            for n, point in enumerate(template_points(kind, name, per_template, seed)):
                epilogue = EPILOGUES[n % len(EPILOGUES)]
                kernels = check_template(kind, name, point, epilogue, seed)
                label = f"{kind}/{name} {point or 'defaults'} {'+'.join(epilogue) or ''}"
                if kernels is None:
                    count.skipped += 1
                    continue
                count.schedules += 1
                count.kernels += kernels
                count.runs.append((label.strip(), kernels))
                if log:
                    log(f"clean: {label.strip()} ({kernels} kernels)")
    count.seconds = time.time() - t0
    return count


def sweep_fuzz(n, seed=0, log=None, max_steps=8):
    """``n`` distinct legal schedules drawn by the fuzzer (deterministic for ``seed``), each
    run under Oclgrind (``run_case(target="oclgrind")``)."""
    import fuzzing as fuzz
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    from tensorsched.codegen.opencl import emit_opencl

    count, t0, stats = SweepCount(), time.time(), fuzz.FuzzStats()

    seen = set()

    @hseed(seed)
    @settings(
        max_examples=4 * n, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=fuzz.cases(mode="legal", max_steps=max_steps))
    def run(case):
        code = fuzz.to_python(case)
        if count.schedules >= n or code in seen:  # hypothesis repeats itself: skip repeats
            return
        seen.add(code)
        outcome = fuzz.run_case(case, target="oclgrind", stats=stats)
        if outcome.status != "passed":
            count.skipped += 1
            return
        kernels = len(emit_opencl(outcome.func).kernels)
        count.schedules += 1
        count.kernels += kernels
        count.runs.append((f"fuzz {case.workload} ({len(case.steps)} steps)", kernels))
        if log:
            log(
                f"clean: fuzz case {count.schedules} ({case.workload}, {len(case.steps)} "
                f"steps, {kernels} kernels)"
            )

    run()
    count.seconds = time.time() - t0
    return count
