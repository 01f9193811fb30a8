"""Write docs/errors.md, the catalogue of bad inputs, from tests/catalogue.py's CASES.

    python scripts/make_error_catalogue.py            # (re)write docs/errors.md
    python scripts/make_error_catalogue.py --check    # exit 1 if docs/errors.md is out of date

Every case runs (those marked "device" need an OpenCL device; without one they are left as
the file has them). A case that does not raise its expected class stops the script.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(
    0, os.path.join(ROOT, "tests")
)  # the fuzzer, the sweep and the catalogue live there

import catalogue  # noqa: E402

DOC = os.path.join(ROOT, "docs", "errors.md")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare instead of writing")
    p.add_argument("--out", default=DOC)
    args = p.parse_args(argv)
    dev = catalogue.device_name()
    outcomes = []
    for case in catalogue.CASES:
        if case.device and not dev:
            outcomes.append(catalogue.Outcome(case.error, "(needs an OpenCL device)"))
            continue
        o = catalogue.run(case)
        if o.error is None or not issubclass(o.error, case.error):
            print(
                f"{case.area}: {case.what}: expected {case.error.__name__}, got "
                f"{o.error.__name__ if o.error else 'nothing'}: {o.message}",
                file=sys.stderr,
            )
            return 1
        outcomes.append(o)
    text = catalogue.table(outcomes, dev)
    if args.check:
        old = open(args.out).read() if os.path.exists(args.out) else ""
        if old != text:
            print(
                f"{args.out} is out of date: run python scripts/make_error_catalogue.py",
                file=sys.stderr,
            )
            return 1
        print(f"{args.out} is up to date ({len(outcomes)} cases)")
        return 0
    with open(args.out, "w") as f:
        f.write(text)
    print(
        f"wrote {args.out}: {len(outcomes)} cases in "
        f"{len({(c.area, c.setup) for c in catalogue.CASES})} tables"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
