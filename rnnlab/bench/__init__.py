"""Benchmarks of rnnlab's kernels: ``python -m rnnlab.bench <name>``.

Each benchmark prints a table and writes a JSON file, from **one run**: the
kernel and every baseline it is compared with are timed in the same process,
interleaved (:mod:`rnnlab.bench.timing`), so their ratios are meaningful even
on a shared machine where absolute times drift. Performance is checked here,
never in a timed unit test.

Benchmarks (:data:`BENCHMARKS`):

``scan``  :mod:`rnnlab.bench.scan`: :func:`rnnlab.linear_scan` against the
          torch loop, ``torch.cumsum`` and the memory floor.
``lds``   :mod:`rnnlab.bench.lds`: LDS and LDStack against torch.nn.LSTM,
          torch.nn.RNN and a Python-loop RNN (forward+backward against T).
``scan-plain``  :mod:`rnnlab.bench.scan_plain`: ``linear_scan`` timed plainly in
          fresh processes (default allocator, back-to-back calls), warm and
          with the cache evicted, its forward+backward split into parts.
``memory``  :mod:`rnnlab.bench.memory`: :func:`rnnlab.neural_memory` (stack,
          queue, deque) against autograd through its vectorised torch reference
          and through the row-by-row loop, the bytes saved for backward against
          a copy-per-step implementation, and a training step of the memory
          models against the same controller without its memory.
``cells``  :mod:`rnnlab.bench.cells`: :func:`rnnlab.kernels.recurrent_cell` (RNN,
          LSTM, GRU, CfC) against autograd through its torch reference and
          ``torch.nn.RNN/LSTM/GRU``, forward+backward with the input projection.
``combo``  :mod:`rnnlab.bench.combo`: a Sparse Combo Net's training step (modules as
          one batched product) against the same net with W dense, a dense Euler RNN
          of the same size and ``torch.nn.RNN``; op counts, what a kernel would gain.
``roofline``  :mod:`rnnlab.bench.roofline`: this CPU's memory bandwidth and arithmetic
          peak, and the bytes and operations of one LDS and one LSTM step.

From Python (what the book does, with small sizes)::

    from rnnlab.bench import scan
    rows = scan.run(T=(256, 1024), sizes=((4, 64),), dtypes=("float32",), quick=True)
    print(scan.format_table(rows))

Adding a benchmark: write a module ``rnnlab/bench/<name>.py`` with

- ``DESCRIPTION``: one line for ``--help``;
- ``add_arguments(parser)``: its command-line options;
- ``from_args(args) -> (rows, config)``: run it from parsed arguments;
- ``format_table(rows, title=None) -> str``;
- optionally ``TARGETS``: a tuple of :class:`Target` (written to the JSON);

and add it to :data:`BENCHMARKS`. The helpers below (:class:`Target`,
:func:`check_targets`, :func:`render_table`, :func:`write_json`) are shared.
"""
import dataclasses
import datetime
import json
import math
import operator
import pathlib
import sys

__all__ = ["BENCHMARKS", "load", "Target", "check_targets", "verdict_counts", "Column", "render_table",
           "format_seconds", "format_ratio", "default_json_path", "write_json", "RESULTS_DIR",
           "positive_int", "ratio_with_verdict"]

#: Subcommand name -> module implementing it (imported only when used).
BENCHMARKS = {
    "scan": "rnnlab.bench.scan",
    "lds": "rnnlab.bench.lds",
    "scan-plain": "rnnlab.bench.scan_plain",
    "memory": "rnnlab.bench.memory",
    "cells": "rnnlab.bench.cells",
    "combo": "rnnlab.bench.combo",
    "roofline": "rnnlab.bench.roofline",
}

#: Where results go by default (relative to the working directory; git-ignored in the repository).
RESULTS_DIR = "bench-results"


def load(name):
    """The module of benchmark ``name`` (a key of :data:`BENCHMARKS`)."""
    import importlib

    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; expected one of {sorted(BENCHMARKS)}")
    return importlib.import_module(BENCHMARKS[name])


# ---------------------------------------------------------------- targets

_OPS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}


@dataclasses.dataclass(frozen=True)
class Target:
    """A goal for one ratio of a row: ``row[key] <op> limit``, on the rows where ``applies(row)``."""

    key: str
    op: str
    limit: float
    description: str
    applies: object = None
    """``callable(row) -> bool``; None: every row."""

    def __post_init__(self):
        if self.op not in _OPS:
            raise ValueError(f"Target.op must be one of {sorted(_OPS)}, got {self.op!r}")

    def check(self, row):
        """``None`` if the target does not apply to ``row``, else a JSON-ready verdict dict."""
        if self.applies is not None and not self.applies(row):
            return None
        value = row.get(self.key)
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            status = "N/A"
        else:
            status = "PASS" if _OPS[self.op](value, self.limit) else "MISS"
        return {"op": self.op, "limit": self.limit, "value": value, "status": status,
                "description": self.description}


def check_targets(row, targets):
    """``{key: verdict}`` for the targets that apply to ``row`` (one per key: the first that applies)."""
    out = {}
    for target in targets:
        if target.key in out:
            continue
        verdict = target.check(row)
        if verdict is not None:
            out[target.key] = verdict
    return out


def verdict_counts(rows):
    """``"12 PASS, 2 MISS"``: the target verdicts of ``rows`` (their ``"targets"``) counted by status;
    ``""`` when no row has one."""
    counts = {}
    for r in rows:
        for v in (r.get("targets") or {}).values():
            counts[v["status"]] = counts.get(v["status"], 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


# ---------------------------------------------------------------- table

def format_seconds(t):
    """``1.52 ms``-style text for a time in seconds ("-" for None)."""
    if t is None or (isinstance(t, float) and not math.isfinite(t)):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            break
    else:
        unit, scale = "ns", 1e-9
    v = t / scale
    return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"


def format_ratio(r):
    """A ratio with 2-3 significant figures ("-" for None)."""
    if r is None or (isinstance(r, float) and not math.isfinite(r)):
        return "-"
    if r < 10:
        return f"{r:.2f}"
    if r < 100:
        return f"{r:.1f}"
    return f"{r:.0f}"


def ratio_with_verdict(row, key):
    """``row[key]`` as :func:`format_ratio`, followed by its target's PASS/MISS when the row has one."""
    text = format_ratio(row.get(key))
    verdict = (row.get("targets") or {}).get(key)
    return f"{text} {verdict['status']}" if verdict else text


@dataclasses.dataclass(frozen=True)
class Column:
    """One table column: a header and ``cell(row) -> str``; ``align`` is ``"<"`` or ``">"``."""

    header: str
    cell: object
    align: str = ">"


def render_table(rows, columns, *, title=None, notes=()):
    """Plain-text table of ``rows`` (dicts) with the given :class:`Column` s, a title and notes."""
    header = [c.header for c in columns]
    body = [[str(c.cell(row)) for c in columns] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(f"{cell:{c.align}{w}}" for cell, c, w in zip(cells, columns, widths)).rstrip()

    out = []
    if title:
        out.append(title)
    out.append(line(header))
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(r) for r in body)
    if notes:
        out.append("")
        out.extend(notes)
    return "\n".join(out)


# ---------------------------------------------------------------- JSON

def default_json_path(benchmark, when=None):
    """``bench-results/<benchmark>-<YYYYmmdd-HHMMSS>.json`` under the working directory."""
    when = when or datetime.datetime.now()
    return pathlib.Path(RESULTS_DIR) / f"{benchmark}-{when:%Y%m%d-%H%M%S}.json"


def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)


def write_json(path, benchmark, rows, *, config=None, machine=None, targets=(), extra=None):
    """Write one benchmark run as JSON; return the path written (parent folders are created).

    The document: ``{"benchmark", "created", "command", "config", "machine",
    "targets", "summary", "rows"}``, with ``summary`` counting the target
    verdicts (``PASS``/``MISS``/``N/A``) found in ``row["targets"]``.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    summary = {}
    for row in rows:
        for verdict in (row.get("targets") or {}).values():
            summary[verdict["status"]] = summary.get(verdict["status"], 0) + 1
    doc = {
        "benchmark": benchmark,
        "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": list(sys.argv),
        "config": config or {},
        "machine": machine or {},
        "targets": [{"key": t.key, "op": t.op, "limit": t.limit, "description": t.description}
                    for t in targets],
        "summary": summary,
        "rows": list(rows),
    }
    if extra:
        doc.update(extra)
    path.write_text(json.dumps(_jsonable(doc), indent=1, allow_nan=False) + "\n")
    return path


def positive_int(text):
    """argparse type of the benchmarks' counts: an int >= 1, with a message naming the text otherwise."""
    import argparse
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value
