"""Measure tensorsched's reliability figures with bounded runs and print the table (and write
it to benchmarks/reliability.md): schedules fuzzed and how many matched numpy, illegal
sequences tried and how many raised a TensorschedError, kernels run clean under Oclgrind, bad
inputs catalogued, faults injected into the tuner with nothing lost, hostile inputs (tuning-log
records, concurrent tuners on one log, parser texts). Each figure comes from one command, run
here as a subprocess and printed beside it, so it can be reproduced alone.

    python scripts/reliability_report.py             # about 6 minutes on 2 cores
    python scripts/reliability_report.py --quick     # smaller samples, about 2 minutes
    python scripts/reliability_report.py --no-write  # print only
    python scripts/reliability_report.py --only catalogue,hostile   # rerun these steps only:
        # their rows and sections are replaced in benchmarks/reliability.md, the rest kept
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
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


STEPS = ("fuzz", "fuzz-opencl", "oclgrind", "catalogue", "faults", "hostile")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-write", action="store_true")
    p.add_argument(
        "--only",
        help=f"comma-separated steps to rerun ({', '.join(STEPS)}); the file keeps the others",
    )
    args = p.parse_args(argv)
    only = set(args.only.split(",")) if args.only else set(STEPS)
    if only - set(STEPS):
        p.error(f"unknown step(s) {', '.join(sorted(only - set(STEPS)))}; use {', '.join(STEPS)}")
    py = sys.executable
    n_py, n_cl, per_t, n_grind = (200, 40, 1, 10) if args.quick else (1000, 150, 2, 30)
    rows, failures = [], []
    fault_rows, hostile = None, None

    def run(name, cmd):
        status, out, secs = sh(cmd)
        print(f"[{secs:5.0f} s] {show(cmd)} -> exit {status}", flush=True)
        if status:
            failures.append((name, out[-4000:]))
        return out

    if "fuzz" in only:
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

    if "fuzz-opencl" in only:
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

    if "oclgrind" in only:
        cmd = [
            py,
            "scripts/oclgrind_sweep.py",
            "--per-template",
            str(per_t),
            "--fuzz",
            str(n_grind),
        ]
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
                "Oclgrind kernels checked (bounds, data races, uninitialised values), "
                "every template",
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

    if "catalogue" in only:
        cmd = [py, "scripts/make_error_catalogue.py", "--check"]
        out = run("catalogue", cmd)
        from_doc = open(os.path.join(ROOT, "docs", "errors.md")).read()
        areas = {a.split(" (")[0] for a in re.findall(r"^## (.+)$", from_doc, re.M)}
        n_cases = num(r"up to date [(](\d+) cases", out)
        rows.append(
            (
                "bad inputs catalogued (docs/errors.md; one test per row in "
                "tests/test_catalogue.py)",
                f"{n_cases} "
                f"rows in {len(areas)} areas ({', '.join(sorted(areas))}); each raises its "
                "documented class, and the file is up to date",
                show(cmd),
            )
        )

    if "faults" in only:
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

    if "hostile" in only:
        with tempfile.TemporaryDirectory(prefix="ts_report_") as tmp:
            counts = os.path.join(tmp, "hostile.json")
            cmd = [py, "scripts/hostile_inputs.py", "--json", counts]
            cmd += ["--quick"] if args.quick else []
            status, out, secs = sh(cmd)
            print(f"[{secs:5.0f} s] {show(cmd[:2] + cmd[4:])} -> exit {status}", flush=True)
            if os.path.exists(counts):
                hostile = json.load(open(counts))
            else:  # it crashed before writing its counts
                failures.append(("hostile", out[-4000:]))
        if hostile is not None:
            rows += hostile_rows(hostile["results"], show(cmd[:2] + cmd[4:]))
            if hostile["findings"]:
                failures.append(("hostile", "findings: see 'Hostile inputs' above"))

    if only == set(STEPS):
        text = render(rows, fault_rows, hostile, failures, args.quick)
    else:
        text = merge(open(OUT).read(), rows, fault_rows, hostile, failures, args)
    print("\n" + text)
    if not args.no_write:
        with open(OUT, "w") as f:
            f.write(text)
        print(f"wrote {OUT}")
    return 1 if failures else 0


def hostile_rows(res, cmd):
    """The main table's rows for scripts/hostile_inputs.py's counts."""
    log, tuners, parsers = res["log records"], res["concurrent tuners"], res["parsers"]
    g = log.get
    src = "source log (all)"
    rest = "source log (without those read_log failed on)"
    three = "source log (3 distinct tasks)"
    n_parse = parsers.get("parse_ir inputs", 0) + parsers.get("parse_expr inputs", 0)
    return [
        (
            "malformed tuning-log records (each after a good record: wrong types, negative, "
            "NaN, infinite and huge numbers in every field and task field, missing and extra "
            "fields, module paths and unknown templates, foreign knobs, out-of-space values, "
            "cut lines, garbage bytes)",
            f"{g('tried', 0)} tried: {g('skipped with a warning', 0)} skipped with a warning "
            f"naming the line, {g('uncaught', 0)} uncaught exceptions, {g('accepted', 0)} "
            f"accepted ({g('best of a task of their own', 0)} the best of a task of their "
            f"own), {g('winners over the good record', 0)} winners over the good record; "
            f"{g('controls kept', 0)} of {g('controls', 0)} valid variants kept; "
            f"`tensorsched source` on all of them in one log: exit {g(src + ': exit')}, "
            f"{g(src + ': kernels', 0)} kernels, {g(src + ': kernels of the good record', 0)} "
            f"of the good record, {g(src + ': kernels written over another', 0)} written over "
            f"another; with 2 valid expr tasks beside the good record: "
            f"{g(three + ': kernels', 0)} kernels, "
            f"{g(three + ': kernels written over another', 0)} written over another"
            + (
                f" (without the {g('uncaught')} lines that raise: exit {g(rest + ': exit')}, "
                f"{g(rest + ': kernels', 0)} kernels, {g(rest + ': kernels of the good record')}"
                f" of the good record, {g(rest + ': kernels written over another', 0)} "
                "written over another of the same file name)"
                if g("uncaught")
                else ""
            ),
            cmd,
        ),
        (
            "concurrent tuners on one log (2 or 3 `tensorsched tune gemm --resume --log L` "
            "started 0-3 s apart)",
            f"{tuners.get('rounds', 0)} rounds, {tuners.get('tuners started', 0)} tuners: "
            f"{tuners.get('finished', 0)} finished, {tuners.get('refused (log busy)', 0)} "
            f"refused (log busy), {tuners.get('failed otherwise', 0)} failed otherwise; "
            f"{tuners.get('records', 0)} records, {tuners.get('duplicated configs', 0)} "
            "configs measured twice",
            cmd,
        ),
        (
            "parser inputs (`ts.parse_ir`, `ts.parse_expr`: seeded mutations of valid text, "
            "truncations, deep nesting, long sums, huge integers, out-of-bounds indices, "
            "garbage)",
            f"{n_parse} inputs: {parsers.get('TensorschedError', 0)} raised a "
            f"TensorschedError, {parsers.get('parsed', 0)} parsed, "
            f"{parsers.get('other exceptions', 0)} other exceptions, "
            f"{sum(v for k, v in parsers.items() if k.startswith('over '))} over the time limit",
            cmd,
        ),
    ]


def hostile_section(hostile, when):
    """The 'Hostile inputs' section: every count, then each finding (an uncaught exception,
    a bad record accepted or winning)."""
    out = [
        "## Hostile inputs (scripts/hostile_inputs.py)",
        "",
        f"Run {when}. Each part's counts as the script prints them; a bad record must be "
        "skipped with a warning naming its line, never raise, never win; no config may be "
        "measured twice; a parser input must parse or raise a TensorschedError.",
        "",
        "| part | count | value |",
        "| --- | --- | --- |",
    ]
    for part, counts in hostile["results"].items():
        for k, v in counts.items():
            out.append(f"| {part} | {k} | {str(v).replace('|', '/')} |")
    found = hostile["findings"]
    out += ["", f"Findings ({len(found)}):" if found else "Findings: none.", ""]
    for f in found:
        text = f" `{json.dumps(f['input'][:120])}`" if f["where"] in ("parser", "slow") else ""
        err = f" -> `{f['error']}`" if f["error"] else ""
        out.append(f"- {f['where']}: {f['what']}{text}{err}")
    return out


def merge(old, rows, fault_rows, hostile, failures, args):
    """``old`` (benchmarks/reliability.md) with the rerun steps' rows and sections replaced."""
    head, *sections = re.split(r"\n(?=## )", old.rstrip("\n"))
    lines = head.rstrip("\n").split("\n")
    for m, r, c in rows:
        new = f"| {m} | {r} | `{c}` |"
        at = [k for k, ln in enumerate(lines) if ln.startswith(f"| {m} |")]
        if at:
            lines[at[0]] = new
        else:
            last = max(k for k, ln in enumerate(lines) if ln.startswith("| "))
            lines.insert(last + 1, new)
    when = f"{time.strftime('%Y-%m-%d')}, `python scripts/reliability_report.py --only {args.only}`"
    lines = [ln for ln in lines if not ln.startswith("Rows of the steps ")]
    table = next(k for k, ln in enumerate(lines) if ln.startswith("| measure |"))
    lines[table - 1 : table - 1] = ["", f"Rows of the steps {args.only} rerun on {when}."]
    # one blank line between paragraphs (the note replaced above leaves its own behind)
    lines = [ln for k, ln in enumerate(lines) if ln.strip() or not k or lines[k - 1].strip()]
    sections = [s for s in sections if not s.startswith("## FAILURES")]
    if fault_rows is not None:
        sections = [
            "\n".join(fault_section(fault_rows)) if s.startswith("## Faults injected") else s
            for s in sections
        ]
    if hostile is not None:
        new = "\n".join(hostile_section(hostile, when))
        at = [k for k, s in enumerate(sections) if s.startswith("## Hostile inputs")]
        if at:
            sections[at[0]] = new
        else:
            bugs = [k for k, s in enumerate(sections) if s.startswith("## Bugs found")]
            sections.insert(bugs[0] if bugs else len(sections), new)
    if failures:
        sections.append("\n".join(failure_section(failures)))
    return "\n".join(lines) + "\n\n" + "\n\n".join(s.strip("\n") for s in sections) + "\n"


def fault_section(fault_rows):
    out = [
        "## Faults injected into the tuner (tests/test_tune.py)",
        "",
        "| fault | injected | nothing lost: what the test checks | result | test |",
        "| --- | --- | --- | --- | --- |",
    ]
    return out + [f"| {f} | {n} | {k} | {r} | `{t}` |" for f, n, k, r, t in fault_rows]


def failure_section(failures):
    out = ["## FAILURES", ""]
    for name, tail in failures:
        out += [f"### {name}", "", "```", tail.strip()[-3000:], "```", ""]
    return out


def render(rows, fault_rows, hostile, failures, quick):
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
    out += [""] + fault_section(fault_rows or [])
    if hostile is not None:
        when = time.strftime("%Y-%m-%d") + " (with the report)"
        out += [""] + hostile_section(hostile, when)
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
        out += [""] + failure_section(failures)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
