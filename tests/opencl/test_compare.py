"""``tensorsched compare``: both sides tuned, checked and measured side by side."""

import tensorsched.baselines.compare as cmp
from tensorsched.tune.task import Task

ACL_LISTS = {"native": ["2,4,4", "4,4,2"], "reshaped_rhs_only": ["2,4,4,1,0,0,0"]}


def test_compare_gemm_and_conv(ocl_device, tmp_path, capsys):
    tasks = [
        Task("gemm", "cpu", (24, 20, 12)),
        Task("conv2d", "spatial_pack", (1, 3, 6, 8, 8, 3, 3, 1, 1)),
    ]
    rows = cmp.compare(
        tasks,
        str(tmp_path / "ts.jsonl"),
        str(tmp_path / "acl"),
        trials=6,  # random order: the first three of this space are invalid
        rounds=2,
        repeat=2,
        progress=False,
        acl_config_lists=ACL_LISTS,
    )
    assert [r.shape for r in rows] == ["GEMM 24x20x12", "conv 6x8x3->8 3x3 s1 p1"]
    for r in rows:
        assert r.ts_seconds > 0 and r.acl_seconds > 0 and len(r.ratios) == 2
        assert r.acl_strategy in ("native", "reshaped_rhs_only")
    cmp.print_table(rows, "test device")
    assert "ratio" in capsys.readouterr().out
