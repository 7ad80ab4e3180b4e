"""The run folder every ``python -m rnnlab train <task>`` shares: config.json, checkpoint.pt, metrics.json."""
import os

from .. import train as _train
from .._io import atomic_write_json


def write_json(path, obj):
    """Write ``obj`` as JSON (indent 1) atomically: :func:`rnnlab._io.atomic_write_json`."""
    atomic_write_json(path, obj, indent=1)


def prepare_run_folder(out, config, signature_keys, resume):
    """Create ``out`` and write its config; return ``(checkpoint, metrics_file)`` (both None without ``out``).

    When resuming, a checkpoint written by a run whose ``signature_keys`` differ is refused with a
    ValueError naming the differences.
    """
    if out is None:
        return None, None
    os.makedirs(out, exist_ok=True)
    checkpoint = os.path.join(out, "checkpoint.pt")
    if resume and os.path.exists(checkpoint):
        old = _train.load_checkpoint(checkpoint)["config"]
        diff = {k: (old.get(k), config[k]) for k in signature_keys if old.get(k) != config[k]}
        if diff:
            raise ValueError(f"run: {checkpoint} was written by a different run (checkpoint vs now: {diff}); "
                             "use another --out or --no-resume")
    write_json(os.path.join(out, "config.json"), config)
    return checkpoint, os.path.join(out, "metrics.json")
