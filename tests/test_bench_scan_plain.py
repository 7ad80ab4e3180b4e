"""The plain-run benchmark of linear_scan (rnnlab.bench.scan_plain): it runs in fresh processes and
splits forward+backward into kernels and the rest. Timings are not asserted (benchmarks, not tests)."""
import json

import pytest

from rnnlab.bench import scan_plain
from rnnlab.bench.__main__ import main


def test_rows_and_parts_add_up():
    rows = scan_plain.run(T=8, B=2, C=16, dtypes=("float32",), a_forms=("BTC", "C"), processes=1, repeats=2)
    assert [(r["a"], r["mode"]) for r in rows] == [("BTC", "warm"), ("BTC", "cold"), ("C", "warm"), ("C", "cold")]
    for r in rows:
        assert r["same_thread"] is True
        assert all(r[f"{k}_s"] > 0 for k in ("fwd", "fb", "fk", "bk"))
        assert len(r["fb_over_fwd"]) == len(r["kernels_over_fk"]) == 1
        assert r["traffic_ratio"] == pytest.approx(8 / 3 if r["a"] == "BTC" else 5 / 2)
    table = scan_plain.format_table(rows, title="t")
    assert "traffic" in table and "cold" in table


@pytest.mark.parametrize("kwargs, word", [({"processes": 0}, "processes"), ({"dtypes": ("int8",)}, "dtypes"),
                                          ({"a_forms": ("X",)}, "a_forms"), ({"T": 0}, "T")])
def test_bad_arguments_name_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=word):
        scan_plain.run(**kwargs)


def test_command_line_writes_json(tmp_path, capsys):
    out = tmp_path / "plain.json"
    assert main(["scan-plain", "--T", "4", "--B", "1", "--C", "8", "--dtypes", "float32", "--a-forms", "C",
                 "--processes", "1", "--repeats", "1", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["benchmark"] == "scan-plain" and len(data["rows"]) == 2
