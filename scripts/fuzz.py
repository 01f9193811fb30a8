"""Run the schedule fuzzer (tests/fuzzing) for thousands of examples and print the
counts: legal schedules fuzzed and how many matched numpy, illegal sequences tried and how
many raised a TensorschedError, random primitive calls.

    python scripts/fuzz.py --examples 5000                  # per mode, Python target
    python scripts/fuzz.py --examples 300 --target opencl   # on the OpenCL device
    python scripts/fuzz.py --examples 50 --target oclgrind --modes legal   # under Oclgrind

A failure (wrong numbers, an exception that is not a TensorschedError, an illegal schedule
accepted) is shrunk by hypothesis and printed as the Python script that reproduces it; the
exit status is then 1. Lowering checks the IR between passes and its text round trip
(TS_VERIFY=1, TS_ROUNDTRIP=1), as the test suite does, unless --fast.
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(
    0, os.path.join(ROOT, "tests")
)  # the fuzzer, the sweep and the catalogue live there


def fuzz(
    examples,
    mode,
    target="python",
    workloads=None,
    max_steps=12,
    big=True,
    seed=0,
    duplicate_names=False,
    stats=None,
):
    """Run ``examples`` cases of ``mode``; return the ``FuzzStats`` of outcomes (raises
    ``FuzzFailure`` with the shrunk case on a bug)."""
    import fuzzing as F
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    stats = F.FuzzStats() if stats is None else stats

    @hseed(seed)
    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(
        case=F.cases(
            workloads or F.WORKLOADS,
            mode=mode,
            max_steps=max_steps,
            small=not big,
            duplicate_names=duplicate_names,
        )
    )
    def run(case):
        F.run_case(case, target=target, stats=stats)

    run()
    return stats


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=5000, help="cases per mode (default 5000)")
    p.add_argument("--modes", default="legal,illegal,random")
    p.add_argument("--target", default="python", choices=["python", "opencl", "oclgrind"])
    p.add_argument(
        "--workloads",
        help="comma-separated subset of gemm,conv2d,conv2d_packed,softmax,elementwise",
    )
    p.add_argument("--max-steps", type=int, default=12)
    p.add_argument("--small", action="store_true", help="sizes up to 8 (default: up to 13)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--duplicate-names",
        action="store_true",
        help="let two cache stages share a name (the IR text round trip cannot "
        "tell them apart yet; use with --fast)",
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help="skip the IR checks between passes and the text round trip",
    )
    args = p.parse_args(argv)
    import fuzzing as F

    from tensorsched.config import config

    config.verify = config.roundtrip = not args.fast
    workloads = args.workloads.split(",") if args.workloads else None
    stats, t0 = F.FuzzStats(), time.time()
    try:
        for mode in args.modes.split(","):
            t = time.time()
            fuzz(
                args.examples,
                mode,
                args.target,
                workloads,
                args.max_steps,
                not args.small,
                args.seed,
                args.duplicate_names,
                stats,
            )
            print(f"{mode}: {args.examples} examples in {time.time() - t:.1f} s", flush=True)
    except F.FuzzFailure as exc:
        print(f"\nFUZZ FAILURE\n{exc}", file=sys.stderr)
        for line in stats.lines():
            print(line)
        return 1
    print(f"\nschedule fuzzer, target {args.target}, seed {args.seed}, {time.time() - t0:.1f} s:")
    for line in stats.lines():
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
