"""The report of ``tools/gpu_check.py``: what its stages left, read, judged and written as Markdown.

``tools/gpu_check.py`` runs the stages (the device, ``tests/gpu``, the
benchmarks' GPU rows) and keeps what they leave in one dict, the future
``gpu_check.json``; this module reads that: the tests' outcomes from the pytest
plugin's records (:func:`tests_result`), each benchmark's rows as a Markdown
table (:func:`bench_markdown`), the issue's two GPU targets
(:func:`check_targets`, against the nominal memory bandwidth of the device,
:func:`nominal_bandwidth`), and the whole as ``gpu_check.md``
(:func:`render_markdown`) and a few lines for the terminal
(:func:`short_summary`). It runs nothing and imports nothing of ``rnnlab``;
``tools/gpu_check.py`` imports it (``tools/`` is on ``sys.path`` when it runs
as a script) and re-exports its public names.
"""

__all__ = ["HBM_GBPS", "tests_result", "fmt_seconds", "fmt_ratio", "fmt_number", "md_cell", "markdown_table",
           "bench_markdown", "nominal_bandwidth", "check_targets", "render_markdown", "short_summary"]

# Nominal peak DRAM bandwidth (GB/s) by a part of torch's device name: the first match counts.
HBM_GBPS = (("GH200", 4000), ("H200", 4800), ("H100 NVL", 3900), ("H100 PCIe", 2000), ("H100", 3350),
            ("A100-SXM4-80GB", 2039), ("A100 80GB PCIe", 1935), ("A100", 1555), ("L40S", 864), ("L4", 300),
            ("T4", 320), ("V100", 900), ("A10G", 600))


# ---------------------------------------------------------------- the tests' records

def tests_result(records, dry_run):
    """Counts, failures and the slowest tests of the plugin's records (:mod:`gpu_check_plugin`)."""
    tests = [r for r in records if "nodeid" in r]
    counts = {}
    for r in tests:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    failures = [{"nodeid": r["nodeid"], "when": r["when"], "message": r["message"]}
                for r in tests if r["outcome"] in ("failed", "error")]
    slowest = sorted((r for r in tests if r["outcome"] not in ("collected",)), key=lambda r: -r["duration"])[:10]
    exitstatus = next((r["exitstatus"] for r in reversed(records) if "exitstatus" in r), None)
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test reported"
    if dry_run:
        summary += " (dry run: collected, not run)"
    return {"counts": counts, "failures": failures, "exitstatus": exitstatus, "summary": summary,
            "slowest": [{"nodeid": r["nodeid"], "seconds": r["duration"]} for r in slowest],
            "results": [{"nodeid": r["nodeid"], "outcome": r["outcome"], "seconds": r["duration"]} for r in tests]}


# ---------------------------------------------------------------- Markdown

def fmt_seconds(t):
    if not isinstance(t, (int, float)) or isinstance(t, bool) or t != t:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            break
    else:
        unit, scale = "ns", 1e-9
    v = t / scale
    return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"


def fmt_ratio(r):
    if not isinstance(r, (int, float)) or isinstance(r, bool) or r != r:
        return "-"
    return f"{r:.2f}" if r < 10 else (f"{r:.1f}" if r < 100 else f"{r:.0f}")


def fmt_number(x):
    if not isinstance(x, (int, float)) or isinstance(x, bool) or x != x:
        return "-"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def md_cell(text):
    """``text`` fit for a Markdown table cell (no pipe, no line break)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


# Benchmark tables: (header, row key(s), formatter). The keys are the benchmarks' documented row keys; a key
# missing from a row is a problem of the check (reported), not a blank.
def _scan_columns():
    return [("dtype", "dtype", str), ("a", "a", str), ("T", "T", str), ("B×C", ("B", "C"), "{}×{}".format),
            ("fwd", "fwd_s", fmt_seconds), ("fwd GB/s", "fwd_GBps", fmt_number),
            ("floor GB/s", "floor_GBps", fmt_number), ("fwd/floor", "fwd_over_floor", fmt_ratio),
            ("fwd+bwd", "fwdbwd_s", fmt_seconds), ("fb/fwd", "fwdbwd_over_fwd", fmt_ratio),
            ("fb/fb-floor", "fwdbwd_over_floor_fwdbwd", fmt_ratio), ("cumsum/fwd", "cumsum_over_fwd", fmt_ratio),
            ("loop fwd", "loop_fwd_s", fmt_seconds), ("loop/fwd", "loop_over_fwd", fmt_ratio),
            ("loop fb/fb", "loop_fwdbwd_over_fwdbwd", fmt_ratio)]


def _lds_columns(rows):
    models = [m for m in ("lds", "ldstack2", "ldstack4", "lds_fft", "lds_all_modes", "ldstack4_scans", "lstm",
                          "rnn", "loop_rnn") if any(m in r.get("models", ()) for r in rows)]
    cols = [("T", "T", str), ("B, d, H, m", ("batch_size", "input_size", "hidden_size", "output_size"),
                                "{}, {}, {}, {}".format), ("LSTM impl.", "lstm_impl", str)]
    for m in models:
        cols.append((f"{m}", f"{m}_s", fmt_seconds))
        if m != "lstm":
            cols.append((f"lstm/{m}", f"speedup_{m}", fmt_ratio))
    return cols


def _memory_columns(part):
    if part == "op":
        return [("kind", "kind", str), ("T", "T", str), ("B×m", ("B", "m"), "{}×{}".format),
                ("fwd", "fwd_s", fmt_seconds), ("fwd+bwd", "fwdbwd_s", fmt_seconds),
                ("steps f+b", "steps_fwdbwd_s", fmt_seconds), ("ref fwd", "ref_fwd_s", fmt_seconds),
                ("ref f+b", "ref_fwdbwd_s", fmt_seconds), ("ref/kernel f+b", "ref_fwdbwd_over_fwdbwd", fmt_ratio),
                ("steps/op", "steps_over_fwdbwd", fmt_ratio), ("saved op MiB", "saved_kernel_bytes",
                                                                lambda b: f"{b / 2**20:.3g}")]
    return [("kind", "kind", str), ("T", "T", str), ("B", "B", str), ("hidden", "hidden", str),
            ("memory model", "step_s", fmt_seconds), ("controller", "controller_s", fmt_seconds),
            ("nn.LSTM", "nn_lstm_s", fmt_seconds), ("model/controller", "step_over_controller", fmt_ratio),
            ("model/nn.LSTM", "step_over_nn_lstm", fmt_ratio)]


def _cells_columns():
    return [("kind", "kind", str), ("T", "T", str), ("B×I×H", ("B", "I", "H"), "{}×{}×{}".format),
            ("kernel f+b", "kernel_s", fmt_seconds), ("torch.nn", "nn_module", lambda s: s.split(".")[-1]),
            ("torch.nn f+b", "nn_s", fmt_seconds), ("kernel/nn", "kernel_over_nn", fmt_ratio),
            ("ref f+b", "ref_s", fmt_seconds), ("ref/kernel", "ref_over_kernel", fmt_ratio),
            ("proj f+b", "proj_s", fmt_seconds)]


def markdown_table(rows, columns, problems, where):
    """A Markdown table of ``rows``; a missing key is added to ``problems`` and shown as ``?``."""
    head = "| " + " | ".join(c[0] for c in columns) + " |"
    rule = "|" + "|".join(" --- " if i < 1 else " ---: " for i in range(len(columns))) + "|"
    out = [head, rule]
    for row in rows:
        cells = []
        for header, key, fmt in columns:
            keys = key if isinstance(key, tuple) else (key,)
            missing = [k for k in keys if k not in row]
            if missing:
                problems.append(f"{where}: rows lack the key(s) {', '.join(missing)} (column {header!r})")
                cells.append("?")
                continue
            values = [row[k] for k in keys]
            try:
                cells.append("-" if values[0] is None else md_cell(fmt(*values)))
            except Exception as exc:  # a value of an unexpected type: reported
                problems.append(f"{where}: column {header!r} cannot format {values!r} ({exc})")
                cells.append("?")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def bench_markdown(name, doc, problems):
    rows = [r for r in doc.get("rows", []) if r.get("device") == "cuda"]
    if not rows:
        problems.append(f"{name}: no cuda row in the benchmark's JSON")
        return ""
    skipped = [r for r in rows if r.get("skipped")]
    rows = [r for r in rows if not r.get("skipped")]
    if name == "scan":
        notes = "".join(f"\n\nNot measured: {r.get('dtype')} T={r.get('T')} {r.get('B')}x{r.get('C')}: {r['skipped']}"
                        for r in skipped)
        return markdown_table(rows, _scan_columns(), problems, name) + notes
    if name == "lds":
        return markdown_table(rows, _lds_columns(rows), problems, name)
    if name == "memory":
        ops = [r for r in rows if r.get("part", "op") == "op"]
        steps = [r for r in rows if r.get("part") == "train_step"]
        text = markdown_table(ops, _memory_columns("op"), problems, name)
        if steps:
            text += "\n\nTraining step (forward, loss, backward, clipping, RMSProp):\n\n" + \
                    markdown_table(steps, _memory_columns("train_step"), problems, name)
        return text
    return markdown_table(rows, _cells_columns(), problems, name)


# ---------------------------------------------------------------- targets

def nominal_bandwidth(device_name):
    for part, gbps in HBM_GBPS:
        if device_name and part in device_name:
            return gbps
    return None


def check_targets(benchmarks, device, sizes):
    """The issue's two GPU targets, from the benchmarks' rows: ``[{name, description, value, status, detail}]``."""
    out = []
    want = sizes["scan"]
    scan_rows = [r for r in (benchmarks.get("scan") or {}).get("rows", [])
                 if r.get("backend") == "cuda" and r.get("dtype") == "float32" and r.get("a", "BTC") == "BTC"
                 and (r.get("T"), r.get("B"), r.get("C")) == (want["T"], want["B"], want["C"])]
    peak = nominal_bandwidth(device.get("device"))
    target = {"name": "scan_bandwidth", "limit": 0.5,
              "description": f"linear_scan forward, ({want['B']}, {want['T']}, {want['C']}) float32, "
                             f"at >= 50 % of the GPU's nominal memory bandwidth"}
    if not scan_rows or scan_rows[0].get("fwd_GBps") is None:
        target.update(value=None, status="N/A", detail="no such row measured")
    else:
        row = scan_rows[0]
        gbps, floor = row["fwd_GBps"], row.get("floor_GBps")
        floor_text = f"; the memory floor (addcmul) ran at {floor:.0f} GB/s" if floor else ""
        if peak is None:
            target.update(value=None, status="N/A",
                          detail=f"fwd {gbps:.3g} GB/s; no nominal bandwidth known for {device.get('device')!r}"
                                 + floor_text)
        else:
            share = gbps / peak
            target.update(value=share, status="PASS" if share >= 0.5 else "MISS",
                          detail=f"fwd {gbps:.0f} GB/s = {100 * share:.0f} % of {peak} GB/s (nominal, "
                                 f"{device.get('device')})" + floor_text)
    out.append(target)

    min_T = sizes["lds_min_T"]
    lds_rows = [r for r in (benchmarks.get("lds") or {}).get("rows", [])
                if r.get("device") == "cuda" and r.get("T", 0) >= min_T]
    target = {"name": "ldstack4_vs_lstm", "limit": 1.0,
              "description": f"LDStack (depth 4) forward+backward faster than the (cuDNN) LSTM at every T >= {min_T}"}
    speedups = [(r["T"], r.get("speedup_ldstack4")) for r in lds_rows]
    if not speedups or any(s is None for _, s in speedups):
        target.update(value=None, status="N/A", detail="no such rows measured"
                      if not speedups else "ldstack4 or lstm did not run: " + str(lds_rows[0].get("errors")))
    else:
        worst = min(s for _, s in speedups)
        impl = lds_rows[0].get("lstm_impl")
        target.update(value=worst, status="PASS" if worst > 1.0 else "MISS",
                      detail=", ".join(f"T={t}: x{s:.2f}" for t, s in speedups) + f" (lstm: {impl})")
    out.append(target)
    return out


# ---------------------------------------------------------------- the report

def render_markdown(doc):
    dev = doc.get("device") or {}
    lines = []
    if doc["dry_run"]:
        lines.append("# rnnlab GPU check: DRY RUN (numba's CUDA simulator on the CPU, tiny sizes)")
        lines.append("")
        lines.append("A dry run tests the check itself: its times say nothing about a GPU.")
    else:
        lines.append(f"# rnnlab GPU check: {dev.get('device') or 'no CUDA device'}")
    lines.append("")
    facts = [f"status **{doc['status']}**", f"{doc['total_s']:.0f} s of {doc['budget_s']:.0f} s budget",
             f"torch {dev.get('torch')} (CUDA {dev.get('torch_cuda')}, cuDNN {dev.get('cudnn')})",
             f"numba {dev.get('numba')}, numba-cuda {dev.get('numba_cuda')}",
             f"Python {dev.get('python')}"]
    if dev.get("capability"):
        facts.append(f"compute capability {dev['capability']}, {dev.get('multiprocessors')} SMs, "
                     f"{(dev.get('memory_bytes') or 0) / 2**30:.0f} GiB")
    if dev.get("driver"):
        facts.append(f"driver {dev['driver']}")
    facts.append(f"{doc['created']}")
    if doc.get("commit"):
        facts.append(f"commit {doc['commit']}")
    lines.append("; ".join(facts) + ".")
    lines.append("")
    lines.append("| stage | status | time | summary |")
    lines.append("| --- | --- | ---: | --- |")
    for s in doc["stages"]:
        lines.append(f"| {s['name']} | {s['status']} | {s['seconds']:.1f} s | {md_cell(s.get('summary') or '')} |")
    lines.append("")
    if doc.get("targets"):
        lines.append("| target | status | detail |")
        lines.append("| --- | --- | --- |")
        for t in doc["targets"]:
            lines.append(f"| {md_cell(t['description'])} | {t['status']} | {md_cell(t['detail'])} |")
        lines.append("")
    failures = (doc.get("tests") or {}).get("failures") or []
    if failures:
        lines.append(f"## tests/gpu: {len(failures)} failed")
        lines.append("")
        for f in failures[:50]:
            lines.append(f"- `{f['nodeid']}` ({f['when']}): {f['message']}")
        if len(failures) > 50:
            lines.append(f"- ... {len(failures) - 50} more in gpu_check.json")
        lines.append("")
    for stage in doc["stages"]:
        name = stage["name"]
        table = doc.get("tables", {}).get(name)
        if not table:
            continue
        lines.append(f"## {name}")
        lines.append("")
        lines.append(f"`{stage['command']}`")
        lines.append("")
        lines.append(table)
        lines.append("")
    if doc.get("problems"):
        lines.append("## Problems")
        lines.append("")
        lines.extend(f"- {p}" for p in doc["problems"])
        lines.append("")
    return "\n".join(lines)


def short_summary(doc):
    lines = [f"gpu_check: {doc['status']} in {doc['total_s']:.0f} s"
             + (" (DRY RUN)" if doc["dry_run"] else f" on {(doc.get('device') or {}).get('device') or 'no GPU'}")]
    for s in doc["stages"]:
        lines.append(f"  {s['name']:7s} {s['status']:8s} {s['seconds']:6.1f} s  {s.get('summary') or ''}")
    for t in doc.get("targets") or ():
        lines.append(f"  target {t['name']}: {t['status']} ({t['detail']})")
    for p in doc.get("problems") or ():
        lines.append(f"  problem: {p}")
    return "\n".join(lines)
