"""TVM's runtime API as TVM users drive it (issue 17, item 4): device handles, ``ts.nd`` arrays,
``entry_name``, ``time_evaluator(name, dev, number=, repeat=, min_repeat_ms=)``, and TVM's
target strings, on the python target and on the OpenCL device, against numpy."""

import os
import re
import warnings

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.errors import RuntimeCallError, TensorschedError
from tensorsched.runtime import tvm_api
from tensorsched.runtime.device import Device, DeviceError, all_devices, current_device
from tensorsched.runtime.module import OpenCLModule
from tensorsched.runtime.nd import NDArray
from tensorsched.runtime.target import TargetError
from tensorsched.runtime.tvm_api import TargetNote, TimerOptions


@pytest.fixture(scope="module")
def device():
    try:
        return current_device()
    except DeviceError as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    except ImportError as exc:
        pytest.skip(f"pyopencl cannot be imported: {exc}")


def vadd(n=None, bind=True):
    """TVM's vector add, over a symbolic ``n`` by default, split by 64."""
    n = ts.var("n") if n is None else n
    A = ts.placeholder((n,), name="A")
    B = ts.placeholder((n,), name="B")
    C = ts.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = ts.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    if bind:
        s[C].bind(bx, ts.thread_axis("blockIdx.x"))
        s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def arrays(n, dev, rng):
    a = ts.nd.array(rng.random(n, dtype=np.float32), dev)
    b = ts.nd.array(rng.random(n, dtype=np.float32), dev)
    return a, b, ts.nd.empty((n,), "float32", dev)


# ---- device handles


def test_device_handles():
    assert repr(ts.cpu(0)) == "cpu(0)" and repr(ts.opencl(1)) == "opencl(1)"
    assert ts.device("llvm") == ts.cpu(0) and ts.device("c", 0) == ts.cpu()
    assert ts.device("cl", 0) == ts.opencl(0) == ts.cl(0)
    assert ts.device("opencl -device=mali", 2) == ts.opencl(2)
    assert ts.device(4, 0) == ts.opencl(0) and ts.device(1) == ts.cpu(0)
    assert (ts.cpu(0).device_type, ts.opencl(3).device_type, ts.opencl(3).device_id) == (1, 4, 3)
    assert ts.cpu(0).exist
    for other in (ts.cuda(0), ts.rocm(0), ts.metal(0), ts.vulkan(0), ts.device("gpu")):
        assert not other.exist
    assert len({ts.cpu(0), ts.cpu(0), ts.opencl(0)}) == 2


def test_device_errors():
    with pytest.raises(TargetError, match="unknown device 'tpu'"):
        ts.device("tpu")
    with pytest.raises(TargetError, match="index must be an int >= 0"):
        ts.opencl(-1)
    with pytest.raises(TargetError, match=r"no cuda runtime; use ts.opencl\(0\)"):
        ts.nd.array(np.zeros(3), ts.cuda(0))
    with pytest.raises(TargetError, match="expected a device"):
        ts.nd.empty((3,), "float32", "opencl")


# ---- ts.nd on the host, with the python target (no device needed)


def test_nd_array_on_the_host(rng):
    x = rng.random((3, 4), dtype=np.float32)
    a = ts.nd.array(x)
    assert (a.shape, a.dtype, a.ndim, a.device) == ((3, 4), "float32", 2, ts.cpu(0))
    x[0, 0] = 7.0  # a copy was taken
    assert a.numpy()[0, 0] != 7.0 and a.asnumpy().shape == (3, 4)
    a[:] = x
    np.testing.assert_array_equal(a.numpy(), x)
    b = a.copyto(ts.cpu(0))
    np.testing.assert_array_equal(b.numpy(), x)
    c = ts.nd.empty((3, 4), "float32")
    assert a.copyto(c) is c and np.array_equal(np.asarray(c), x)
    assert "NDArray shape=(3, 4), cpu(0)" in repr(a)
    assert ts.nd.empty(5, "int32").shape == (5,)
    with pytest.raises(TensorschedError, match=r"only arr\[:\] = x"):
        a[0] = x[0]
    with pytest.raises(
        RuntimeCallError, match=r"source has shape \(2,\) but this array has \(3, 4\)"
    ):
        a.copyfrom(np.zeros(2))


@pytest.mark.parametrize("n", [1, 64, 100, 257])
def test_python_target_takes_nd_arrays(n, rng):
    s, args = vadd()
    f = ts.build(s, args, target="python", name="myadd")
    assert f.entry_name == "myadd" and f["myadd"] is f and f.get_function("myadd") is f
    assert f.imported_modules[0] is f and f.type_key == "python"
    a, b, c = arrays(n, ts.cpu(0), rng)
    f(a, b, c)
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy(), rtol=1e-6)


def test_python_time_evaluator(rng):
    s, args = vadd(100)
    f = ts.build(s, args, target="python", name="myadd")
    a, b, c = arrays(100, ts.cpu(0), rng)
    r = f.time_evaluator(f.entry_name, ts.cpu(0), number=2, repeat=3)(a, b, c)
    assert len(r.results) == 3 and r.mean > 0 and r.min <= r.median <= r.max and r.std >= 0
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeCallError, match="no function 'main'; its one function is 'myadd'"):
        f.time_evaluator("main", ts.cpu(0))
    with pytest.raises(RuntimeCallError, match="dev must be a device"):
        f.time_evaluator("myadd", "cpu")
    with pytest.raises(TargetError, match="no cuda runtime"):
        f.time_evaluator("myadd", ts.cuda(0))
    with pytest.raises(RuntimeCallError, match="cache_flush_bytes=1024 is not supported"):
        f.time_evaluator("myadd", ts.cpu(0), cache_flush_bytes=1024)
    with pytest.raises(RuntimeCallError, match=r"number \(0\) and repeat \(1\) must be >= 1"):
        f.time_evaluator("myadd", ts.cpu(0), number=0)
    r = f.time_evaluator("myadd", ts.cpu(0), 1, 2, cache_flush_bytes=0, cooldown_interval_ms=1)
    assert len(r(a, b, c).results) == 2


def test_testing_assert_allclose():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ts.testing.assert_allclose(ts.nd.array(x), x)
    ts.testing.assert_allclose(x + 1e-3, x, rtol=1e-3, atol=1e-3)
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        ts.testing.assert_allclose(x + 1e-3, x)
    with pytest.raises(AssertionError, match=r"shapes differ, \(3, 2\) against \(2, 3\)"):
        ts.testing.assert_allclose(x.T, x)


def test_benchmark_min_repeat_ms_and_zero_times():
    calls = []

    def measure(n):  # 0.1 ms a call
        calls.append(n)
        return 1e-4, {}, 1e-4

    runs = tvm_api.benchmark(measure, 1, 2, TimerOptions(min_repeat_ms=5))
    assert calls == [1, 51, 51] and len(runs) == 2  # grown once, then kept
    zero = []
    opts = TimerOptions(min_repeat_ms=5, limit_zero_time_iterations=3)
    runs = tvm_api.benchmark(lambda n: zero.append(n) or (0.0, {}, 0.0), 1, 1, opts)
    assert len(zero) == 3 and len(runs) == 1  # nothing to time: it gives up


def test_module_checks_nd_array_shapes():
    s, args = vadd(100)
    f = ts.build(s, args, target="python")
    a, b = ts.nd.empty((100,)), ts.nd.empty((100,))
    with pytest.raises(RuntimeCallError, match=r"'C' has shape \(99,\), expected \(100,\)"):
        f(a, b, ts.nd.empty((99,)))
    with pytest.raises(RuntimeCallError, match="'C' has dtype int32"):
        f(a, b, ts.nd.empty((100,), "int32"))


# ---- target strings


@pytest.mark.parametrize("target", ["cuda", "rocm", "metal", "vulkan", "nvptx", "cuda -arch=sm_80"])
def test_other_gpu_apis_name_opencl(target):
    s, args = vadd(64)
    with pytest.raises(TargetError, match="tensorsched writes OpenCL C only; use target='opencl'"):
        ts.build(s, args, target=target)
    with pytest.raises(TargetError, match="not supported"):
        ts.build(s, args, target=ts.target.Target(target))


def test_unknown_target():
    s, args = vadd(64)
    with pytest.raises(TargetError, match="unknown target 'tpu'; use one of opencl, python, llvm"):
        ts.build(s, args, target="tpu")
    with pytest.raises(TargetError, match="empty target"):
        ts.target.Target("  ")


def test_target_object():
    t = ts.target.Target("llvm -mcpu=skylake-avx512")
    assert (t.kind.name, str(t), t.keys) == ("llvm", "llvm -mcpu=skylake-avx512", ("cpu",))
    assert ts.target.Target("opencl -device=mali").keys == ("opencl", "gpu")


def test_cpu_target_without_a_cpu_device(monkeypatch, device):
    monkeypatch.setattr(tvm_api, "_is_cpu", lambda dev: False)
    s, args = vadd(64)
    with pytest.raises(DeviceError, match="no CPU OpenCL device number 0 here .* target='opencl'"):
        ts.build(s, args, target="llvm")


# ---- the OpenCL device


@pytest.mark.opencl
@pytest.mark.parametrize("target", ["opencl", "llvm", "c", "llvm -mcpu=native"])
@pytest.mark.parametrize("n", [100, 256])
def test_opencl_module_with_nd_arrays(device, target, n, rng, monkeypatch):
    monkeypatch.setattr(ts.target, "_NOTED", set())  # the note is given once a process
    if target != "opencl":
        try:
            tvm_api.cpu_opencl_device()
        except DeviceError as exc:
            pytest.skip(f"'{target}' needs a CPU OpenCL device: {exc}")
    s, args = vadd()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = ts.build(s, args, target=target, name="myadd")
    notes = [w for w in caught if issubclass(w.category, TargetNote)]
    assert len(notes) == (target != "opencl")
    if notes:
        assert "built for the CPU OpenCL device" in str(notes[0].message)
        assert f.device is tvm_api.cpu_opencl_device()
        with warnings.catch_warnings(record=True) as again:
            warnings.simplefilter("always")
            ts.build(s, args, target=target, name="myadd")
        assert not again
    assert f.entry_name == "myadd" and "__kernel" in f.imported_modules[0].get_source()
    devs = [ts.cpu(0)] + ([ts.opencl(0)] if f.device is device else [])
    for dev in devs:
        a, b, c = arrays(n, dev, rng)
        f(a, b, c)
        np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy(), rtol=1e-6)
        # numpy arrays too, as before
        out = np.full(n, np.nan, np.float32)
        f(a.numpy(), b.numpy(), out)
        np.testing.assert_allclose(out, a.numpy() + b.numpy(), rtol=1e-6)


@pytest.mark.opencl
def test_opencl_nd_array_on_the_device(device, rng):
    x = rng.random((5, 7), dtype=np.float32)
    a = ts.nd.array(x, ts.opencl(0))
    assert (a.shape, a.dtype, a.device.device_name) == ((5, 7), "float32", device.name)
    assert ts.opencl(0).exist and ts.opencl(0).max_threads_per_block == device.max_work_group_size
    np.testing.assert_array_equal(a.numpy(), x)
    a[:] = 2 * x
    np.testing.assert_array_equal(a.copyto(ts.cpu(0)).numpy(), 2 * x)
    ts.opencl(0).sync()


@pytest.mark.opencl
def test_opencl_time_evaluator_tvm_form(device, rng):
    s, args = vadd()
    f = ts.build(s, args, target="opencl", name="myadd")
    a, b, c = arrays(1000, ts.opencl(0), rng)
    r = f.time_evaluator(f.entry_name, ts.opencl(0), number=4, repeat=3)(a, b, c)
    assert len(r.results) == 3 and all(t > 0 for t in r.results)
    assert r.mean == pytest.approx(np.mean(r.results)) and r.median == np.median(r.results)
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy(), rtol=1e-6)
    r1 = f.time_evaluator(f.entry_name, ts.opencl(0))(a, b, c)  # TVM's defaults: 10 x 1
    assert len(r1.results) == 1
    # min_repeat_ms: too short a measurement is taken again with more runs
    calls = []
    measure = f._measure
    f._measure = lambda arrs, sizes, number: calls.append(number) or measure(arrs, sizes, number)
    f.time_evaluator(f.entry_name, ts.opencl(0), number=1, repeat=2, min_repeat_ms=5)(a, b, c)
    assert calls[0] == 1 and calls[-1] > 1 and calls == sorted(calls)  # grown, never shrunk
    # tensorsched's own form is unchanged
    t = f.time_evaluator(repeat=2)(a, b, c)
    assert len(t.device_times) == 2 and len(t.host_times) == 2
    with pytest.raises(TensorschedError, match="need TVM's form"):
        f.time_evaluator(repeat=2, min_repeat_ms=10)
    with pytest.raises(RuntimeCallError, match=r"number \(0\) and repeat \(1\) must be >= 1"):
        f.time_evaluator(f.entry_name, ts.opencl(0), number=0)


@pytest.mark.opencl
def test_opencl_array_of_another_context(device, rng):
    s, args = vadd(64)
    f = ts.build(s, args, target="opencl")
    other = Device(device.cl_device, device.platform_index, device.device_index)
    import pyopencl.array as cla

    x = rng.random(64, dtype=np.float32)
    foreign = NDArray(cla.to_device(other.queue, x), ts.opencl(0))
    with pytest.raises(RuntimeCallError, match="argument 'A' lives on opencl.*built for"):
        f(foreign, ts.nd.array(x), ts.nd.empty((64,)))
    assert all_devices()  # the enumeration the handles use works here


@pytest.mark.opencl
def test_export_library_and_load_module(device, rng, tmp_path):
    s, args = vadd()
    f = ts.build(s, args, target="opencl", name="myadd")
    path = str(tmp_path / "myadd.so")
    f.export_library(path)
    g = ts.runtime.load_module(path)
    assert g.entry_name == "myadd" and g.get_source() == f.get_source()
    a, b, c = arrays(77, ts.opencl(0), rng)
    g(a, b, c)
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy(), rtol=1e-6)
    (tmp_path / "junk.so").write_bytes(b"\x7fELF not a module")
    with pytest.raises(TensorschedError, match="is not a module written by export_library"):
        ts.runtime.load_module(str(tmp_path / "junk.so"))
    with pytest.raises(TensorschedError, match="cannot read"):
        ts.runtime.load_module(str(tmp_path / "missing.so"))


# ---- docs/tvm_compat.md

COMPAT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")


def compat_rows():
    """``(tvm cell, tensorsched cell, status)`` of every table row of docs/tvm_compat.md."""
    rows = []
    with open(os.path.join(COMPAT, "tvm_compat.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 4 and cells[2] in ("yes", "partly", "no", "extra"):
                rows.append((cells[0], cells[1], cells[2]))
    return rows


def test_compat_table_names():
    A = ts.placeholder((4, 4), name="A")
    k = ts.reduce_axis((0, 4), "k")
    T = ts.compute((4,), lambda i: ts.sum(A[i, k], axis=k), name="T")
    s = ts.create_schedule(T.op)
    owners = {
        "ts": ts,
        "s": s,
        "s[T]": s[T],
        "T": T,
        "op": T.op,
        "dev": tvm_api.DeviceHandle,
        "arr": ts.nd.empty((2,)),
        "mod": OpenCLModule,
    }
    rows = compat_rows()
    assert len(rows) > 60
    checked = 0
    for tvm_name, ours, status in rows:
        names = re.findall(r"`((?:ts|s\[T\]|s|T|op|dev|arr|mod)\.[\w.]+)`", ours)
        assert status == "no" or names, f"row {tvm_name!r}: name its tensorsched spelling"
        for name in names if status != "no" else ():
            owner, _, path = (
                name.partition(".") if not name.startswith("s[T]") else ("s[T]", ".", name[5:])
            )
            obj = owners[owner]
            for part in path.split("."):
                assert hasattr(obj, part), f"docs/tvm_compat.md: {name} ({tvm_name}) is missing"
                obj = getattr(obj, part)
            checked += 1
    assert checked > 80


@pytest.mark.parametrize("target", ["python", "opencl"])
def test_nd_array_of_rank_zero_keeps_its_rank(target):
    # TVM's test_rank_zero_bound_checkers: a rank-0 output given as ts.nd.array(np.zeros(()))
    if target == "opencl":
        pytest.importorskip("pyopencl")
    A = ts.placeholder((5,), name="A")
    k = ts.reduce_axis((0, 5), "k")
    Y = ts.compute((), lambda: ts.sum(A[k], axis=k), name="Y")
    f = ts.build(ts.create_schedule(Y.op), [A, Y], target=target)
    a = np.random.default_rng(2).standard_normal(5).astype(np.float32)
    y = ts.nd.array(np.array(np.nan, np.float32))
    assert y.shape == () and ts.nd.array(3.0).shape == ()
    f(ts.nd.array(a), y)
    np.testing.assert_allclose(y.numpy(), a.sum(), rtol=1e-5)
    y.copyfrom(np.array(2.0, np.float32))
    assert y.numpy() == 2.0
