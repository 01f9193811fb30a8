"""What NVIDIA's compiler makes of our GEMM kernels: for each log given, the fastest config
is built, its PTX (the program binary NVIDIA's OpenCL returns) assembled with ``ptxas`` for
the device's architecture and disassembled with ``cuobjdump``; printed per kernel are the
registers, spills and the instruction mix of the innermost loop (the longest backward
branch's body), and the SASS is written under ``$OUT``:

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/sass_probe.py LOG.jsonl ...

Extra OpenCL C files (``*.cl``) given after the logs are assembled the same way, so that a
hand-edited variant of a generated kernel can be compared with the original.
"""

import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pyopencl as cl  # noqa: E402
from kernel_variants import fastest  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.runtime.module import DEFAULT_OPTIONS  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

CUDA = "/usr/local/cuda/bin"
OUT = os.environ.get("OUT", "/tmp/sass_probe")
os.makedirs(OUT, exist_ok=True)
TMP = tempfile.mkdtemp()
dev = current_device()
cc = dev.cl_device.get_info(0x4000), dev.cl_device.get_info(0x4001)  # COMPUTE_CAPABILITY_*_NV
arch = f"sm_{cc[0]}{cc[1]}"


def loop_mix(sass: str) -> tuple[int, collections.Counter]:
    """The instruction mix of the body of the longest backward branch of a function."""
    code: list[tuple[int, str]] = []
    labels: dict[str, int] = {}
    pending: list[str] = []
    for l in sass.split("\n"):
        lab = re.match(r"(\.L_x_\d+):", l.strip())
        if lab:
            pending.append(lab.group(1))
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*)", l)
        if m:
            a = int(m.group(1), 16)
            for p in pending:
                labels[p] = a
            pending = []
            code.append((a, m.group(2)))
    index = {a: i for i, (a, _) in enumerate(code)}
    best = (0, -1)
    for i, (a, text) in enumerate(code):
        m = re.search(r"BRA\s+(?:`\((\.L_x_\d+)\)|0x([0-9a-f]+))", text)
        if not m:
            continue
        t = labels.get(m.group(1)) if m.group(1) else int(m.group(2), 16)
        if t is not None and t < a and t in index and i - index[t] > best[1] - best[0]:
            best = (index[t], i)
    mix: collections.Counter = collections.Counter()
    for _, text in code[best[0] : best[1] + 1]:
        op = re.match(r"(?:@!?U?P[T\d]\s+)?([A-Z][A-Z0-9_.]*)", text)
        if op:
            mix[op.group(1)] += 1
    return best[1] - best[0] + 1, mix


def assemble(name: str, ptx: str) -> None:
    p = os.path.join(TMP, name)
    open(p + ".ptx", "w").write(ptx.rstrip("\0"))
    v = subprocess.run(
        [f"{CUDA}/ptxas", f"-arch={arch}", "-O3", "-v", p + ".ptx", "-o", p + ".cubin"],
        capture_output=True,
        text=True,
    )
    if v.returncode:
        print("    ptxas failed:", v.stderr.strip()[:2000])
        return
    for l in (v.stdout + v.stderr).split("\n"):
        if "registers" in l or "spill" in l:
            print("   ", l.strip())
    sass = subprocess.run(
        [f"{CUDA}/cuobjdump", "-sass", p + ".cubin"], capture_output=True, text=True
    ).stdout
    open(os.path.join(OUT, name + ".sass"), "w").write(sass)
    for fn in re.split(r"\n\s+Function : ", sass)[1:]:
        n, mix = loop_mix(fn)
        ffma = mix.get("FFMA", 0)
        share = ffma / max(n, 1)
        print(f"    {fn.split()[0]}: inner loop {n} instructions, FFMA {ffma} ({share:.0%})")
        print("      " + ", ".join(f"{k} {v}" for k, v in mix.most_common(14)))


def ptx_of(source: str) -> str:
    prg = cl.Program(dev.context, source).build(options=list(DEFAULT_OPTIONS))
    return prg.get_info(cl.program_info.BINARIES)[0].decode()


print(f"# {dev.name}, {arch}")
for path in sys.argv[1:]:
    if path.endswith(".cl"):
        name = os.path.basename(path)[:-3]
        print(name, "(file)")
        assemble(name, ptx_of(open(path).read()))
        continue
    r = fastest(path)
    task = Task.from_dict(r["task"])
    s, args, _ = task.instantiate(r["config"])
    mod = ts.build(s, args, target="opencl", name="tsg")
    name = "x".join(map(str, task.shape))
    print(name, r["config"], r["device_ms"])
    assemble(name, mod.binary().decode())
