"""Tuning on a Dask cluster (``tune(..., cluster=...)``, the ``distributed`` extra): one
``LocalCluster``-style cluster of this host (2 worker processes, both holding the CPU OpenCL
device) is shared by the tests of this module, which run in file order: the last one takes a
device out of the pool.

This module registers its own template, ``gemm_flaky``: ``gemm_tiny`` whose measurement takes
0.2 s, and raises (as a lost device would) in the measuring worker of the Dask worker whose pid
the file ``TS_TEST_BAD_WORKER`` holds. The cluster's workers inherit this process's
environment and ``sys.path``, so their measuring workers import this module (it registered the
template) and plant that fault around ``measure_one``.
"""

import inspect
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import pytest
import tune_templates  # registers gemm_tiny, gemm_slow (0.4 s a measurement), gemm_planted_hang

from tensorsched.tune import register_template
from tensorsched.tune.log import config_key, read_log
from tensorsched.tune.task import Task
from tensorsched.tune.tuner import VERIFY_TIMES, tune

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
SHAPE = (16, 16, 16)
BAD_WORKER = os.environ.setdefault(
    "TS_TEST_BAD_WORKER", os.path.join(tempfile.gettempdir(), f"ts_bad_worker_{os.getpid()}")
)


@register_template("gemm", "gemm_flaky")
def gemm_flaky(cfg, M, N, K, dtype="float32", epilogue=()):
    return tune_templates.gemm_tiny(cfg, M, N, K, dtype, epilogue)


def _plant_bad_device():
    from tensorsched.tune import measure

    real = measure.measure_one

    def measure_one(task_dict, config, *args, **kwargs):
        if task_dict["template"] == "gemm_flaky":
            try:
                with open(os.environ["TS_TEST_BAD_WORKER"]) as f:
                    bad = int(f.read())
            except (OSError, ValueError, KeyError):
                bad = None
            if bad == os.getppid():
                raise RuntimeError("CL_DEVICE_NOT_AVAILABLE (planted)")
            time.sleep(0.2)
        return real(task_dict, config, *args, **kwargs)

    measure.measure_one = measure_one


if any(f.function == "_runner_main" for f in inspect.stack(0)):  # in a measuring worker
    _plant_bad_device()


def records(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_log(str(path))


def run(task, log, **kw):
    kw = {"strategy": "grid", "timeout": 20.0, "repeat": 2, "progress": False, **kw}
    kw.setdefault("verify", 0)  # the trials alone (measuring the best again: its own test)
    return tune(task, str(log), **kw)


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("distributed")
    from tensorsched.runtime.device import DeviceError, current_device
    from tensorsched.tune.distributed import Cluster

    try:
        current_device()
    except (DeviceError, ImportError) as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    with Cluster("local", workers=2, device_workers=2) as c:
        yield c
    if os.path.exists(BAD_WORKER):
        os.remove(BAD_WORKER)


def test_import_and_a_plain_tune_never_import_dask(tmp_path):
    code = (
        "import sys, tune_templates\n"
        "import tensorsched, tensorsched.cli\n"
        "from tensorsched.tune import Task, tune\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')]\n"
        f"tune(Task('gemm', 'gemm_tiny', (16, 16, 16)), {str(tmp_path / 'p.jsonl')!r}, "
        "strategy='grid', trials=1, n_build=1, repeat=1, progress=False)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed'}))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([TESTS, ROOT]))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_resource_names_survive_dask_worker_parsing():
    from tensorsched.tune.distributed import device_resources, resource_name

    name = resource_name("NVIDIA H200, rev=2")
    assert name == "opencl:NVIDIA_H200_rev_2"
    # as `dask worker --resources` parses its text
    text = " ".join(f"{k}={v:g}" for k, v in device_resources([("0:0", "NVIDIA H200")] * 2).items())
    pairs = dict(pair.split("=") for pair in text.replace(",", " ").split())
    assert pairs == {"opencl:NVIDIA_H200": "2"}


def test_same_configs_measured_and_logged_as_the_single_process_tuner(cluster, tmp_path):
    task = Task("gemm", "gemm_tiny", SHAPE)
    one = run(task, tmp_path / "one.jsonl", strategy="random", trials=5, seed=7, n_build=1)
    many = run(task, tmp_path / "many.jsonl", strategy="random", trials=5, seed=7, cluster=cluster)
    a, b = records(tmp_path / "one.jsonl"), records(tmp_path / "many.jsonl")
    assert one.counts == many.counts == {"ok": 5}
    assert sorted(config_key(r.config) for r in a) == sorted(config_key(r.config) for r in b)
    assert {r.device for r in b} == {a[0].device}  # the same device key as a local run
    assert all(r.host for r in a + b) and all(r.status == "ok" and r.device_ms for r in b)


def test_a_device_no_worker_holds_is_refused_with_the_devices_listed(cluster, tmp_path):
    from tensorsched.tune.distributed import ClusterError

    with pytest.raises(
        ClusterError, match="holds the devices opencl:.*no single match for device 'H200'"
    ):
        run(
            Task("gemm", "gemm_tiny", SHAPE),
            tmp_path / "none.jsonl",
            device="H200",
            cluster=cluster,
        )
    assert not (tmp_path / "none.jsonl").exists()


def test_a_worker_killed_mid_run_loses_no_trial_and_logs_none_twice(cluster, tmp_path):
    log = tmp_path / "killed.jsonl"
    pids = cluster.client.run(os.getpid)
    killed = []

    def kill_one_midway():
        deadline = time.time() + 60
        while time.time() < deadline and not killed:
            if log.exists() and log.read_bytes().count(b"\n") >= 2:
                pid = sorted(pids.values())[0]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.02)

    watcher = threading.Thread(target=kill_one_midway, daemon=True)
    watcher.start()
    res = run(Task("gemm", "gemm_slow", SHAPE), log, cluster=cluster)
    watcher.join(5)
    assert killed, "no worker was killed"
    recs = records(log)
    space = Task("gemm", "gemm_slow", SHAPE).space()
    keys = [config_key(r.config) for r in recs]
    assert sorted(keys) == sorted(config_key(p) for p in space.points())  # each exactly once
    assert all(r.status == "ok" for r in recs), [(r.status, r.error) for r in recs]
    assert res.counts == {"ok": 8}
    cluster.client.wait_for_workers(2, timeout=60)  # its nanny restarts it for the next tests


def test_the_cluster_measures_the_fastest_configs_again(cluster, tmp_path):
    """``verify=3`` on a cluster: after the trials, the three fastest configs (by median) are
    measured again on the cluster's devices until each has ``VERIFY_TIMES`` measurements,
    logged here as ``remeasure`` records; the best is at its median."""
    log = tmp_path / "again.jsonl"
    task = Task("gemm", "gemm_tiny", SHAPE)
    res = run(task, log, strategy="random", trials=5, seed=7, cluster=cluster, verify=3)
    recs = records(log)
    trials = [r for r in recs if not r.remeasure]
    assert len({config_key(r.config) for r in trials}) == len(trials) == 5
    assert res.counts["ok"] == 5 and res.counts["remeasured"] == len(recs) - 5 >= 6
    times: dict[str, list[float]] = {}
    for r in recs:
        times.setdefault(config_key(r.config), []).append(r.device_ms)
    ranked = sorted(times, key=lambda k: statistics.median(times[k]))
    assert all(len(times[k]) == VERIFY_TIMES for k in ranked[:3]), times
    assert config_key(res.best.config) == ranked[0]
    assert res.best.device_ms == statistics.median(times[ranked[0]])


def test_resume_from_a_log_written_by_a_distributed_run(cluster, tmp_path):
    log = tmp_path / "resume.jsonl"
    task = Task("gemm", "gemm_tiny", SHAPE)
    first = run(task, log, trials=3, cluster=cluster)
    assert first.counts == {"ok": 3}
    with pytest.raises(Exception, match="resume"):
        run(task, log, cluster=cluster)  # not without --resume
    again = run(task, log, resume=True, cluster=cluster)
    assert again.counts == {"ok": 5, "skipped": 3}
    local = run(task, log, resume=True, n_build=1)  # a single-process run reads it too
    assert local.counts == {"skipped": 8}
    keys = [config_key(r.config) for r in records(log)]
    assert sorted(keys) == sorted(config_key(p) for p in task.space().points())


def test_a_hanging_kernel_is_killed_by_the_workers_own_timeout(cluster, tmp_path):
    log = tmp_path / "hang.jsonl"
    t0 = time.time()
    res = run(Task("gemm", "gemm_planted_hang", SHAPE), log, trials=2, timeout=3.0, cluster=cluster)
    by_hang = {r.config["hang"]: r for r in records(log)}
    assert by_hang[0].status == "ok" and by_hang[1].status == "timeout"
    assert "no result within 3 s" in by_hang[1].error
    assert res.counts == {"ok": 1, "timeout": 1} and time.time() - t0 < 40


def test_two_device_kinds_tuned_at_once_into_one_log(cluster, tmp_path):
    """A worker holding the CPU device and Oclgrind (two kinds): ``tune_devices`` tunes both
    side by side, each kind's trials measured only on it, into one log keyed by device."""
    from tensorsched.tune.distributed import Cluster, ClusterError, host_devices
    from tensorsched.tune.tuner import tune_devices

    try:
        host_devices(("oclgrind",))
    except ClusterError:
        pytest.skip("no Oclgrind device for a second kind")
    log = tmp_path / "kinds.jsonl"
    task = Task("gemm", "gemm_tiny", SHAPE)
    with Cluster("local", workers=1, devices=("pthread", "oclgrind")) as two:
        res = tune_devices(
            task,
            str(log),
            ["pthread", "oclgrind"],
            two,
            strategy="grid",
            trials=4,
            repeat=2,
            progress=False,
        )
    # each kind's 4 trials, then each of them measured twice more on the same kind
    counts = {"ok": 4, "remeasured": 8}
    assert {d: r.counts for d, r in res.items()} == {"pthread": counts, "oclgrind": counts}
    assert res["oclgrind"].best.device == "Oclgrind / Oclgrind Simulator"
    by_device = {}
    for r in records(log):
        if not r.remeasure:
            by_device.setdefault(r.device, []).append(config_key(r.config))
    assert sorted(by_device) == sorted(r.best.device for r in res.values())
    assert all(len(set(keys)) == len(keys) == 4 for keys in by_device.values())


def test_worker_command_and_tune_cluster_on_the_command_line(cluster, tmp_path):
    """A scheduler, ``tensorsched worker`` and ``tensorsched tune --cluster`` as separate
    processes, as a user starts them on several hosts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([TESTS, ROOT]))
    dask = os.path.join(os.path.dirname(sys.executable), "dask")
    cli = [sys.executable, "-m", "tensorsched.cli"]
    quiet = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen(
            [dask, *f"scheduler --host 127.0.0.1 --port {port} --no-dashboard".split()], **quiet
        )
    ]
    try:
        time.sleep(1.0)
        worker = [*cli, "worker", address, "--build-workers", "1"]
        procs.append(subprocess.Popen(worker, **{**quiet, "stderr": subprocess.PIPE, "text": True}))
        log = tmp_path / "cli.jsonl"
        tune_args = "gemm --shape 16,16,16 --import tune_templates --template gemm_tiny "
        tune_args += f"--strategy grid --trials 3 --repeat 2 --cluster {address} --log {log}"
        cmd = [*cli, "tune", *tune_args.split()]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        assert "3 run on the device" in out.stdout
        recs = records(log)
        assert all(r.status == "ok" and r.host for r in recs)
        assert len([r for r in recs if not r.remeasure]) == 3  # and the fastest again
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
    assert procs[1].returncode == 0, procs[1].stderr.read()[-2000:]


def test_a_failing_device_is_taken_out_and_its_trials_measured_elsewhere(cluster, tmp_path):
    """Last in this module: it leaves one worker without its device."""
    pids = cluster.client.run(os.getpid)
    with open(BAD_WORKER, "w") as f:
        f.write(str(sorted(pids.values())[0]))
    log = tmp_path / "flaky.jsonl"
    task = Task("gemm", "gemm_flaky", SHAPE)
    with pytest.warns(UserWarning, match="taken out of the pool"):
        res = run(task, log, cluster=cluster)
    recs = records(log)
    assert sorted(config_key(r.config) for r in recs) == sorted(
        config_key(p) for p in task.space().points()
    )
    assert all(r.status == "ok" for r in recs), [(r.status, r.error) for r in recs]
    assert res.stats["taken_out"] == 1
    assert len(cluster.holders()) == 1  # the other worker still measures
    # a heterogeneous pool now: trials go only to the worker that holds the device (the
    # other one would fail them)
    again = run(Task("gemm", "gemm_flaky", (16, 16, 8)), tmp_path / "flaky2.jsonl", cluster=cluster)
    assert again.counts == {"ok": 8} and "taken_out" not in again.stats
