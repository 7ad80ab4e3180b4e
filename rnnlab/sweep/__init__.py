"""Grids of training runs on Ray Tune: ``python -m rnnlab sweep``.

A *sweep* runs one training command, ``python -m rnnlab train <task> ...``, at every point of a grid of
its options, and gathers one row per run into a table the book can plot::

    python -m rnnlab sweep transduction --out runs/sweeps/pop-bias \\
        --set task=reversal --set model=stack --set steps=2000 --set hidden=32 \\
        --grid pop-bias=-2,-1,0,1 --grid seed=0..9 --workers 2 --threads 1

- ``--set NAME=VALUE`` fixes an option of the training command for every trial; ``--grid
  NAME=V1,V2,...`` makes it an axis (``a..b``: the integers a to b). The grid is the cartesian product of
  the axes. Names are the training command's options (``python -m rnnlab train transduction --help``),
  written ``pop-bias`` or ``pop_bias``; they are checked, and every trial's command is parsed, before
  anything runs. ``--spec FILE`` reads the same from JSON: ``{"task": "transduction", "set":
  {"hidden": 32}, "grid": {"seed": [0, 1, 2], "pop_bias": "-2,-1"}}``; the command line adds to it.
  ``--dry-run`` lists the trials and their commands.
- Each trial is a run folder ``<out>/trials/<trial id>``, its id made of its axis values, sorted by name
  (``pop_bias=-1,seed=3``). The training command writes its checkpoints, ``config.json`` and
  ``metrics.json`` there, and its output goes to ``stdout.log``/``stderr.log``.
- A summariser per task (:data:`rnnlab.sweep.trial.SUMMARISERS`; for transduction: steps, training
  time, training and validation perplexity, test coarse/fine accuracy, the memory-use diagnostics, and
  what ``evaluation.json`` holds) turns a finished run folder into a row of ``<out>/results.json`` and
  ``<out>/results.csv``, which are rewritten (atomically) as soon as each trial finishes. The JSON also
  records the command, the fixed options and the axes.
- **Resuming.** The table is the record: run the same command again and every trial whose row says
  ``ok`` is skipped. Trials whose command failed (row ``error``, with the exit status and the tail of
  stderr; the rest of the grid goes on) or stopped short (``incomplete``) are retried. Ctrl-C or
  ``kill`` stops the sweep: finished rows are kept, and runs that were under way get SIGTERM, save a
  checkpoint and continue from it next time. Adding values to an axis extends the grid; changing
  ``--set`` options is refused (use another ``--out``).

Where it runs. By default on this machine: ``ray.init()`` starts a local Ray with ``--workers`` x
``--cpus-per-trial`` CPUs (a small object store: trials return only their rows), and ``--workers``
trials run at once, each with ``--threads`` torch threads. On a Ray cluster, the same command with
``--address``::

    ray start --head                       # on the head node (then ray start --address=HEAD:6379 on others)
    python -m rnnlab sweep transduction --address auto --out /shared/sweeps/x --workers 64 ...

``--out`` must then be a folder every node sees (NFS or the like): trials write their run folders
there, from whichever node runs them, and the table is written by the driver. Tune's own files go to
``<out>/tune``; our table, not Tune's experiment state, decides what is left to run, so a sweep resumes
across Ray versions.

Ray is optional (``pip install 'ray[tune]>=2.9'``, or ``pip install 'rnnlab[sweep]'``): importing
:mod:`rnnlab` or this module does not import it, and without it ``python -m rnnlab sweep`` says what
to install. From Python: ``run_sweep(build_spec("transduction", sets=[...], grids=[...]), out)``.
"""
from .grid import GridSpec, Trial, build_spec, task_parser
from .runner import RAY_MISSING, RayMissing, SweepOutcome, add_arguments, import_ray, main, run_sweep
from .table import ResultsTable
from .trial import SUMMARISERS, execute, summarise

__all__ = ["GridSpec", "Trial", "build_spec", "task_parser", "run_sweep", "SweepOutcome", "ResultsTable",
           "SUMMARISERS", "summarise", "execute", "import_ray", "RayMissing", "RAY_MISSING", "add_arguments",
           "main"]
