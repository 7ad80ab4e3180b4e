"""Tables of a finished imitation grid: collect a sweep's rows into one compact JSON, and arrange them.

    python -m rnnlab.control.analysis SWEEP_DIR [SWEEP_DIR ...] --out FILE.json [--note TEXT]

keeps, for every finished trial, its grid coordinates and the numbers the chapter plots (``KEYS``), plus
the trained recurrent matrices' normalised singular values from the trial's ``analysis.npz``.
:func:`grid_array` arranges one number as ranks × sparsities (mean and standard error over seeds).
"""
import argparse
import json
import math
import os

import numpy as np

from .._io import atomic_write_json
from .paper import RANKS, SPARSITIES

__all__ = ["KEYS", "collect", "expert_returns", "load_grid", "grid_array", "main"]

KEYS = ("val_loss", "lr", "none_normalised", "noise_normalised", "dropout_normalised", "offset_normalised",
        "shift_normalised", "none_return", "none_expert_return", "noise_expert_return", "dropout_expert_return",
        "offset_expert_return", "ed_rec_none", "ed_inp_none", "ed_h_none",
        "ed_rec_noise", "ed_inp_noise", "ed_h_noise", "cfc_w_dev_none", "cfc_w_dev_noise", "rec_spectral_radius",
        "rec_spectral_norm", "inp_spectral_norm", "rec_change_rank")


def _rank(v):
    return None if v in (None, "full", "None") else int(v)


def _curve(run_dir):
    """The validation loss after every epoch of one learning rate's sub-run (empty if it has none)."""
    path = os.path.join(run_dir, "metrics.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [float(f"{e['eval_loss']:.4g}") for e in json.load(f).get("epochs", []) if "eval_loss" in e]


def expert_returns(conditions):
    """``{condition: {"seeds": [...], "returns": [...]}}``: the expert's episodes from a cached
    ``<rollouts>.conditions.json`` (keys ``"<condition>|<episodes>|<first seed>|<p>"``)."""
    out = {}
    for key, entry in conditions.items():
        ev = entry["expert"]
        cond = key.split("|")[0]
        if cond in out:
            raise ValueError(f"conditions: more than one evaluation of {cond!r} (keys {sorted(conditions)})")
        out[cond] = {"seeds": list(ev["seeds"]), "returns": [round(float(v), 1) for v in ev["returns"]]}
    return out


def collect(sweep_dirs, out=None, note=None, expert=None):
    """Rows of every ``status == "ok"`` trial of the sweeps (results.json), compacted; written to ``out``
    (with ``expert``, the expert's per-episode returns from :func:`expert_returns`, when given)."""
    rows, commands = [], []
    for d in sweep_dirs:
        with open(os.path.join(d, "results.json")) as f:
            res = json.load(f)
        commands.append(res.get("command"))
        fixed = res.get("set", {})
        for r in res["rows"]:
            if r.get("status") != "ok":
                continue
            values = dict(fixed, **{k: r[k] for k in ("cell", "rank", "sparsity", "seed") if k in r})
            row = {"cell": values.get("cell"), "rank": _rank(values.get("rank")),
                   "sparsity": float(values.get("sparsity", 0.0)), "seed": int(values.get("seed", 0)),
                   "epochs": r.get("last_epoch")}
            for k in KEYS:
                if f"test_{k}" in r:
                    row[k] = r[f"test_{k}"]
            metrics = os.path.join(d, "trials", r["trial"], "metrics.json")
            if os.path.exists(metrics):   # the per-episode returns (lists: not in the sweep's table)
                with open(metrics) as f:
                    test = json.load(f).get("test", {})
                for cond in ("none", "noise", "dropout", "offset"):
                    if f"{cond}_returns" in test:
                        row[f"{cond}_returns"] = [round(float(v), 1) for v in test[f"{cond}_returns"]]
                lr_losses = {k[len("val_loss_lr_"):]: v for k, v in test.items() if k.startswith("val_loss_lr_")}
                if len(lr_losses) > 1:   # a choice of learning rate: each one's final loss and curve
                    row["val_loss_by_lr"] = lr_losses
                    row["val_curves"] = {lr: _curve(os.path.join(d, "trials", r["trial"], f"lr-{lr}"))
                                         for lr in lr_losses}
            npz = os.path.join(d, "trials", r["trial"], "analysis.npz")
            if os.path.exists(npz):
                with np.load(npz) as z:
                    row["rec_singular_values"] = [round(float(v), 5) for v in z["rec_singular_values"]]
            rows.append(row)
    data = {"commands": commands, "note": note, "rows": rows}
    if expert is not None:
        data["expert"] = expert
    if out:
        atomic_write_json(out, data, indent=0)
    return data


def load_grid(path):
    with open(path) as f:
        return json.load(f)


def grid_array(rows, cell, key, ranks=RANKS, sparsities=SPARSITIES):
    """``(mean, se, n)``: arrays ``(len(ranks), len(sparsities))`` of ``key`` over the seeds (NaN: none)."""
    mean = np.full((len(ranks), len(sparsities)), np.nan)
    se, n = mean.copy(), np.zeros(mean.shape, int)
    for i, r in enumerate(ranks):
        for j, s in enumerate(sparsities):
            vals = [row[key] for row in rows if row["cell"] == cell and row["rank"] == r
                    and math.isclose(row["sparsity"], s) and row.get(key) is not None]
            n[i, j] = len(vals)
            if vals:
                mean[i, j] = float(np.mean(vals))
                se[i, j] = float(np.std(vals, ddof=1) / math.sqrt(len(vals))) if len(vals) > 1 else np.nan
    return mean, se, n


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m rnnlab.control.analysis", description=__doc__.split("\n\n")[0])
    p.add_argument("sweeps", nargs="+", help="sweep folders (each with results.json)")
    p.add_argument("--out", required=True)
    p.add_argument("--note", default=None, help="what was run, with what budget")
    p.add_argument("--conditions", default=None,
                   help="the expert's cached evaluations (<rollouts>.conditions.json): keep its per-episode "
                        "returns under each condition beside the rows")
    args = p.parse_args(argv)
    expert = None
    if args.conditions is not None:
        with open(args.conditions) as f:
            expert = expert_returns(json.load(f))
    data = collect(args.sweeps, args.out, args.note, expert=expert)
    print(f"{len(data['rows'])} finished trials; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
