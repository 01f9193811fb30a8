"""Measure tensorsched's reliability figures with bounded runs and print the table (and write
it to benchmarks/reliability.md): schedules fuzzed and how many matched numpy, illegal
sequences tried and how many raised a TensorschedError, kernels run clean under Oclgrind, bad
inputs catalogued, faults injected into the tuner with nothing lost. Each figure comes from
one command, run here as a subprocess and printed beside it, so it can be reproduced alone.

    python scripts/reliability_report.py             # about 3 minutes on 2 cores
    python scripts/reliability_report.py --quick     # smaller samples, under a minute
    python scripts/reliability_report.py --no-write  # print only
"""

import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "benchmarks", "reliability.md")

# the tuner's fault-injection tests (tests/test_tune.py): test -> (fault, how many injected,
# what "nothing lost" means there)
FAULTS = {
    "test_planted_wrong_kernel_is_caught_logged_and_never_best": (
        "a wrong kernel (reduction one step short)",
        4,
        "all 8 configs logged once; the 4 wrong ones as `wrong`, never timed or ranked; the "
        "best is the fastest correct one",
    ),
    "test_planted_hanging_kernel_is_killed_at_its_timeout": (
        "a kernel that never ends",
        1,
        "killed at its timeout and logged `timeout`; a fresh worker measures the next config",
    ),
    "test_crashing_workers_are_recorded_and_tuning_goes_on": (
        "a worker killed with SIGKILL while measuring (2) or building (2)",
        4,
        "each logged `crash`; the other configs of the broken build batch are measured",
    ),
    "test_kill_9_midway_then_resume_logs_every_config_once": (
        "the tuner killed with SIGKILL midway, then a cut log line",
        2,
        "its workers exit; `--resume` skips the logged configs and appends: every config "
        "exactly once, the file only appended to",
    ),
    "test_full_disk_raises_log_error_and_keeps_earlier_records": (
        "a full disk while appending a record (half a line, then ENOSPC)",
        2,
        "`LogError`; earlier records intact; the half line skipped on reading; appending "
        "resumes on a fresh line",
    ),
    "test_full_disk_during_tuning_stops_with_log_error_and_resume_finishes": (
        "a full disk during tuning, after 3 records",
        1,
        "`LogError` stops tuning; the 3 records read back without warning; `--resume` "
        "measures exactly the 5 others",
    ),
    "test_read_log_skips_damaged_lines_and_writer_appends_on_a_fresh_line": (
        "damaged log lines: not JSON, no fields, cut short",
        3,
        "each skipped with a warning naming file and line; the file is never rewritten",
    ),
}


def sh(cmd):
    """Run ``cmd`` (a list) in the repository root; return (exit status, output, seconds)."""
    t0 = time.time()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr, time.time() - t0


def show(cmd):
    return " ".join(
        a if re.fullmatch(r"[\w./=,:-]+", a) else repr(a)
        for a in ["python" if a == sys.executable else a for a in cmd]
    )


def num(pattern, text, default=0):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else default


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    py = sys.executable
    n_py, n_cl, per_t, n_grind = (200, 40, 1, 10) if args.quick else (1000, 150, 2, 30)
    rows, failures = [], []

    def run(name, cmd):
        status, out, secs = sh(cmd)
        print(f"[{secs:5.0f} s] {show(cmd)} -> exit {status}", flush=True)
        if status:
            failures.append((name, out[-4000:]))
        return out

    cmd = [py, "scripts/fuzz.py", "--examples", str(n_py), "--seed", "0"]
    out = run("fuzz", cmd)
    legal, passed = (
        num(r"legal schedules fuzzed: (\d+)", out),
        num(r"lowered and matched numpy: (\d+); refused", out),
    )
    refused = num(r"refused with a TensorschedError: (\d+)", out)
    illegal, handled = (
        num(r"illegal sequences tried: (\d+)", out),
        num(r"illegal sequences tried: \d+; raised a TensorschedError: (\d+)", out),
    )
    rnd = num(r"random primitive sequences: (\d+)", out)
    rnd_raised = num(r"random primitive sequences: \d+; raised a TensorschedError: (\d+)", out)
    rows.append(
        (
            "schedules fuzzed (Python target, exact and bounds-checked; IR verified "
            "between passes and round-tripped through its text)",
            f"{legal} legal schedules: {passed} lowered and matched numpy, {refused} "
            "refused with a clear TensorschedError, 0 wrong",
            show(cmd),
        )
    )
    rows.append(
        (
            "illegal sequences tried",
            f"{illegal}: {handled} raised a TensorschedError"
            + (" (the others' legal prefix was already refused)" if handled < illegal else "")
            + "; 0 other exceptions",
            show(cmd),
        )
    )
    rows.append(
        (
            "random primitive calls (arbitrary arguments)",
            f"{rnd}: {rnd_raised} raised a TensorschedError, {rnd - rnd_raised} were legal "
            "and matched numpy; 0 other exceptions",
            show(cmd),
        )
    )

    cmd = [
        py,
        "scripts/fuzz.py",
        "--examples",
        str(n_cl),
        "--modes",
        "legal",
        "--target",
        "opencl",
        "--seed",
        "0",
    ]
    out = run("fuzz-opencl", cmd)
    n, ok, no = (
        num(r"legal schedules fuzzed: (\d+)", out),
        num(r"lowered and matched numpy: (\d+)", out),
        num(r"refused with a TensorschedError: (\d+)", out),
    )
    rows.append(
        (
            "schedules fuzzed on the OpenCL device (vectorize/unroll passes and the "
            "OpenCL C code generator too)",
            f"{n}: {ok} matched numpy, {no} refused with a TensorschedError, 0 wrong",
            show(cmd),
        )
    )

    cmd = [py, "scripts/oclgrind_sweep.py", "--per-template", str(per_t), "--fuzz", str(n_grind)]
    out = run("oclgrind", cmd)
    t_runs, t_kernels = (
        num(r"templates: (\d+)", out),
        num(r"templates: \d+ template settings run under Oclgrind, (\d+)", out),
    )
    f_runs, f_kernels = (
        num(r"fuzzer: +(\d+)", out),
        num(r"fuzzer: +\d+ fuzzed schedules run under Oclgrind, (\d+)", out),
    )
    rows.append(
        (
            "Oclgrind kernels checked (bounds, data races, uninitialised values), every template",
            f"{t_runs} template settings, {t_kernels} kernels: 0 reports, all matched numpy",
            show(cmd),
        )
    )
    rows.append(
        (
            "Oclgrind kernels checked, fuzzed schedules",
            f"{f_runs} schedules, {f_kernels} kernels: 0 reports, all matched numpy",
            show(cmd),
        )
    )

    cmd = [py, "scripts/make_error_catalogue.py", "--check"]
    out = run("catalogue", cmd)
    from_doc = open(os.path.join(ROOT, "docs", "errors.md")).read()
    areas = {a.split(" (")[0] for a in re.findall(r"^## (.+)$", from_doc, re.M)}
    n_cases = num(r"up to date [(](\d+) cases", out)
    rows.append(
        (
            "bad inputs catalogued (docs/errors.md; one test per row in tests/test_catalogue.py)",
            f"{n_cases} "
            f"rows in {len(areas)} areas ({', '.join(sorted(areas))}); each raises its "
            "documented class, and the file is up to date",
            show(cmd),
        )
    )

    cmd = [
        py,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-v",
        "tests/test_tune.py",
        "-k",
        "planted or crashing or kill_9 or full_disk or damaged_lines",
    ]
    out = run("faults", cmd)
    fault_rows = []
    for test, (fault, n, kept) in FAULTS.items():
        ok = re.search(rf"{test} PASSED", out) is not None
        fault_rows.append((fault, n, kept, "passed" if ok else "FAILED or skipped", test))
    total = sum(n for _, n, _, res, _ in fault_rows if res == "passed")
    rows.append(
        (
            "faults injected into the tuner",
            f"{total} in {sum(r[3] == 'passed' for r in fault_rows)} tests, nothing lost "
            "(every finished trial logged exactly once, the best config right)",
            show(cmd),
        )
    )

    text = render(rows, fault_rows, failures, args.quick)
    print("\n" + text)
    if not args.no_write:
        with open(OUT, "w") as f:
            f.write(text)
        print(f"wrote {OUT}")
    return 1 if failures else 0


def render(rows, fault_rows, failures, quick):
    import platform

    out = [
        "# Reliability",
        "",
        "Generated by `python scripts/reliability_report.py" + (" --quick" if quick else "") + "` "
        f"({time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores). Each figure comes from the command beside it; the "
        "fuzzer's runs are deterministic for a seed. Failures shrink to a minimal schedule "
        "printed as Python code.",
        "",
        "| measure | result | command |",
        "| --- | --- | --- |",
    ]
    out += [f"| {m} | {r} | `{c}` |" for m, r, c in rows]
    out += [
        "",
        "## Faults injected into the tuner (tests/test_tune.py)",
        "",
        "| fault | injected | nothing lost: what the test checks | result | test |",
        "| --- | --- | --- | --- | --- |",
    ]
    out += [f"| {f} | {n} | {k} | {r} | `{t}` |" for f, n, k, r, t in fault_rows]
    out += [
        "",
        "## Bugs found while these runs were built (fixed, each with a regression "
        "test in tests/test_fuzz.py or a row in docs/errors.md)",
        "",
        "- the Python backend kept a work-group's `__local` tiles by buffer name, so two "
        'stages of one name (`cache_read(T, "shared")` twice) shared memory '
        "(`codegen/python.py`);",
        "- a stage in work-group memory that binds no axis to some `threadIdx` of its "
        "kernel was computed by every work-item: a reduction there raced "
        "(read-modify-write of one tile element; wrong sums once a cooperative fill put "
        "barriers inside its loop); now work-item 0 along each such tag writes it "
        "(`schedules/schedule_ops.py`);",
        "- unrolling a loop that holds a stage's allocation declared the buffer once per "
        'copy under one name ("redefinition" from the OpenCL compiler) '
        "(`passes/unroll.py`);",
        "- `tensorsched tune --shapes` with a missing file or a malformed layer table, and "
        "`--log` naming a folder, leaked `FileNotFoundError`/`KeyError`/`IsADirectoryError` "
        "(`cli.py`, `tune/log.py`);",
        "- `ts.build(s, C)` (arguments not in a list) iterated the tensor for ever; "
        '`ts.compute` with a non-function body, `ts.const("x")` and '
        "`ts.lower(s, None)` leaked `TypeError`/`ValueError` (`ir/tensor.py`, "
        "`ir/expr.py`, `schedules/lower.py`).",
    ]
    if failures:
        out += ["", "## FAILURES", ""]
        for name, tail in failures:
            out += [f"### {name}", "", "```", tail.strip()[-3000:], "```", ""]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
