"""The results table of a sweep: ``results.json`` and ``results.csv`` in the sweep folder, rewritten
atomically after every finished trial. It is the source of truth for resuming: a trial whose row has
status ``"ok"`` is never run again; one with ``"error"`` or ``"incomplete"`` is retried."""
import csv
import io
import json
import os
import time

from .._io import atomic_write_json, atomic_write_text

__all__ = ["ResultsTable", "FORMAT", "STATUSES"]

FORMAT = "rnnlab-sweep-1"
STATUSES = ("ok", "error", "incomplete")
"""``ok``: the run finished and was summarised; ``error``: the command failed (``error`` holds its exit
status and the tail of its stderr); ``incomplete``: it exited cleanly but short of its last step."""


class ResultsTable:
    """The table in ``folder``: ``meta`` (task, fixed options, axes, command) and one row per trial.

    A row is a flat dict: ``trial`` (its id), ``status``, the axis values, then what the task's
    summariser read from the run folder, ``wall_s``, ``finished_at`` and, for errors, ``error``.
    """

    def __init__(self, folder, meta=None, rows=None):
        self.folder = os.fspath(folder)
        self.meta = dict(meta or {})
        self.rows = dict(rows or {})

    @property
    def json_path(self):
        return os.path.join(self.folder, "results.json")

    @property
    def csv_path(self):
        return os.path.join(self.folder, "results.csv")

    @classmethod
    def load(cls, folder):
        """The table saved in ``folder`` (an empty one if there is none)."""
        path = os.path.join(os.fspath(folder), "results.json")
        if not os.path.exists(path):
            return cls(folder)
        with open(path) as f:
            data = json.load(f)
        if data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a sweep results table (format {data.get('format')!r}, "
                             f"expected {FORMAT!r})")
        rows = {row["trial"]: row for row in data.get("rows", [])}
        meta = {k: v for k, v in data.items() if k not in ("format", "rows")}
        return cls(folder, meta, rows)

    def finished(self, trial_id):
        row = self.rows.get(trial_id)
        return row is not None and row.get("status") == "ok"

    def record(self, row):
        """Add or replace ``row`` (by its ``trial``) and rewrite both files."""
        if row.get("status") not in STATUSES:
            raise ValueError(f"row status must be one of {STATUSES}, got {row.get('status')!r}")
        row = dict(row)
        row.setdefault("finished_at", time.strftime("%Y-%m-%dT%H:%M:%S"))
        self.rows[row["trial"]] = row
        self.write()

    def ordered_rows(self):
        """Rows in the order of ``meta["order"]`` (the grid's), then any others."""
        order = {t: i for i, t in enumerate(self.meta.get("order", []))}
        return sorted(self.rows.values(), key=lambda r: (order.get(r["trial"], len(order)), r["trial"]))

    def columns(self):
        first = ["trial", "status"] + list(self.meta.get("axes", {}))
        seen = list(first)
        for row in self.ordered_rows():
            for key in row:
                if key not in seen and key != "error":
                    seen.append(key)
        return seen + ["error"]

    def write(self):
        os.makedirs(self.folder, exist_ok=True)
        rows = self.ordered_rows()
        counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
        data = {"format": FORMAT, **self.meta, "counts": counts, "rows": rows}
        atomic_write_json(self.json_path, data, indent=1)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=self.columns(), extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in row.items()})
        atomic_write_text(self.csv_path, buf.getvalue())
