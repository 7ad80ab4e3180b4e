"""Grid specifications: fixed options and axes of a ``python -m rnnlab train <task>`` command, their
validation against the task's own options, and the trials (one per point of the cartesian product).

A trial's id is ``name=value`` for each axis, sorted by option name and joined by commas
(``pop_bias=-1,seed=3``), each value written canonically (``-1``, ``-1.0`` and ``-1.00`` are one value,
``-1``): the same grid always maps a point to the same folder, whatever order its axes were given in.
"""
import argparse
import dataclasses
import importlib
import itertools
import json
import math

from ..experiments import TRAIN_TASKS

__all__ = ["GridSpec", "Trial", "RESERVED", "task_parser", "build_spec", "parse_assignment"]

RESERVED = {"out": "--out", "threads": "--threads", "no_progress": "--no-progress",
            "no_resume": "--no-resume", "evaluate": "--evaluate", "json": "--json", "help": "--help"}
"""Options the sweep sets itself (or that would break resuming): not allowed in a grid."""


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def task_parser(task):
    """The argument parser of ``python -m rnnlab train <task>`` (raising ValueError instead of exiting)."""
    if task not in TRAIN_TASKS:
        raise ValueError(f"task must be one of {sorted(TRAIN_TASKS)}, got {task!r}")
    parser = _RaisingParser(prog=f"python -m rnnlab train {task}", add_help=False)
    importlib.import_module(TRAIN_TASKS[task][0]).add_arguments(parser)
    return parser


def _is_flag(action):
    return isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))


def _find_action(parser, task, name, where):
    dest = str(name).strip().lstrip("-").replace("-", "_")
    if not dest:
        raise ValueError(f"{where}: empty option name in {name!r}")
    flag = "--" + dest.replace("_", "-")
    if dest in RESERVED:
        raise ValueError(f"{where} {name}: the sweep sets {RESERVED[dest]} itself (each trial runs in "
                         "<sweep dir>/trials/<trial id>, resumably); leave it out")
    for action in parser._actions:
        if action.dest == dest and action.option_strings:
            if action.nargs not in (None, 0):
                raise ValueError(f"{where} {name}: {flag} takes several values, which a sweep does not support")
            return dest, action
    options = sorted(a.option_strings[-1] for a in parser._actions
                     if a.option_strings and a.dest not in RESERVED)
    raise ValueError(f"{where} {name}: `python -m rnnlab train {task}` has no option {flag}; its options: "
                     + " ".join(options))


def _canonical(action, value, where):
    """``(text, typed)``: the value as written on the command line and as a JSON-friendly typed value."""
    if _is_flag(action):
        text = str(value).strip().lower()
        if isinstance(value, bool) or text in ("true", "false", "1", "0", "yes", "no"):
            typed = value if isinstance(value, bool) else text in ("true", "1", "yes")
            return ("true" if typed else "false"), typed
        raise ValueError(f"{where}={value!r}: {action.option_strings[-1]} is a flag; give true or false")
    if isinstance(value, bool) or isinstance(value, (list, dict)) or value is None:
        raise ValueError(f"{where}={value!r}: expected one number or word")
    text = str(value).strip()
    if not text:
        raise ValueError(f"{where}: empty value")
    convert = action.type or str
    try:
        typed = convert(text)
    except (TypeError, ValueError):
        name = getattr(convert, "__name__", "value")
        raise ValueError(f"{where}={text!r}: not a valid {name} for {action.option_strings[-1]}") from None
    if action.choices is not None and typed not in action.choices:
        raise ValueError(f"{where}={text!r}: {action.option_strings[-1]} must be one of "
                         f"{list(action.choices)}")
    if isinstance(typed, float):
        if not math.isfinite(typed):
            raise ValueError(f"{where}={text!r}: must be finite")
        text = str(int(typed)) if typed.is_integer() and abs(typed) < 1e15 else repr(typed)
    elif isinstance(typed, int):
        text = str(typed)
    elif not isinstance(typed, str):
        typed = text
    return text, typed


def _expand(raw, where):
    """Axis values from a list or a comma-separated string; ``a..b`` is the integers a to b inclusive."""
    items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
    out = []
    for item in items:
        if isinstance(item, str) and ".." in item:
            lo, _, hi = item.partition("..")
            try:
                lo, hi = int(lo), int(hi)
            except ValueError:
                raise ValueError(f"{where}: a range is two integers, like 0..9; got {item!r}") from None
            if hi < lo:
                raise ValueError(f"{where}: empty range {item!r}")
            out.extend(range(lo, hi + 1))
        else:
            out.append(item.strip() if isinstance(item, str) else item)
    if not out or any(v == "" for v in out):
        raise ValueError(f"{where}: empty value in {raw!r}")
    return out


def parse_assignment(text, flag):
    """``"name=value"`` -> ``(name, value)``; a ValueError naming ``flag`` otherwise."""
    name, sep, value = str(text).partition("=")
    if not sep or not name.strip():
        raise ValueError(f"{flag} {text!r}: expected NAME=VALUE (e.g. {flag} seed=0,1,2)")
    return name.strip(), value


@dataclasses.dataclass
class Trial:
    """One point of a grid: its id, its axis values (typed), and the training command's arguments
    (after ``python -m rnnlab train <task>``, without ``--out``/``--threads``/``--no-progress``)."""
    id: str
    values: dict
    argv: list


@dataclasses.dataclass
class GridSpec:
    """A task, its fixed options and its axes, validated (see :func:`build_spec`).

    ``fixed`` maps option names (``pop_bias``) to canonical text, ``axes`` to lists of canonical text;
    ``typed`` holds the typed value of every text; ``flags`` the options written ``--flag`` alone.
    """
    task: str
    fixed: dict
    axes: dict
    typed: dict = dataclasses.field(default_factory=dict, repr=False)
    flags: dict = dataclasses.field(default_factory=dict, repr=False)
    options: dict = dataclasses.field(default_factory=dict, repr=False)

    def as_dict(self):
        return {"task": self.task, "set": dict(self.fixed), "grid": {k: list(v) for k, v in self.axes.items()}}

    def _argv(self, name, text):
        if name in self.flags:
            return [self.options[name]] if text == "true" else []
        return [f"{self.options[name]}={text}"]

    def trials(self):
        """Every point of the cartesian product of the axes, in the order given (the last axis fastest)."""
        names = list(self.axes)
        fixed = [a for name, text in self.fixed.items() for a in self._argv(name, text)]
        out = []
        for point in itertools.product(*(self.axes[n] for n in names)):
            chosen = dict(zip(names, point))
            trial_id = ",".join(f"{n}={chosen[n]}" for n in sorted(names)) or "single"
            trial_id = trial_id.replace("/", "%2F")
            argv = fixed + [a for n in names for a in self._argv(n, chosen[n])]
            out.append(Trial(trial_id, {n: self.typed[(n, chosen[n])] for n in names}, argv))
        return out

    def validate(self, parser=None):
        """Parse every trial's command with the task's parser; a ValueError names the trial that fails."""
        parser = parser or task_parser(self.task)
        trials = self.trials()
        for trial in trials:
            try:
                parser.parse_args(trial.argv)
            except ValueError as e:
                raise ValueError(f"trial {trial.id}: python -m rnnlab train {self.task}: {e}") from None
        return trials


def build_spec(task=None, sets=(), grids=(), spec_file=None):
    """A validated :class:`GridSpec` from command-line pieces and/or a JSON file.

    ``sets``: ``"name=value"`` strings (``--set``); ``grids``: ``"name=v1,v2,..."`` strings (``--grid``;
    ``a..b`` is a range of integers). ``spec_file``: a JSON object ``{"task": ..., "set": {name: value},
    "grid": {name: [values] or "v1,v2"}}``; the command line adds to it and its ``--set`` values override
    the file's. Option names may be written ``pop-bias``, ``pop_bias`` or ``--pop-bias``. Raises ValueError
    naming the argument at fault: an unknown option, a bad value, an option both fixed and an axis, an axis
    given twice or with a repeated value, an option the sweep sets itself.
    """
    file_sets, file_grids = {}, {}
    if spec_file is not None:
        try:
            with open(spec_file) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"--spec {spec_file}: {e}") from None
        if not isinstance(data, dict) or set(data) - {"task", "set", "grid", "command"}:
            raise ValueError(f"--spec {spec_file}: expected a JSON object with keys task, set, grid")
        if data.get("task") and task and data["task"] != task:
            raise ValueError(f"--spec {spec_file}: its task is {data['task']!r}, the command line's {task!r}")
        task = task or data.get("task")
        for key, target in (("set", file_sets), ("grid", file_grids)):
            if not isinstance(data.get(key, {}), dict):
                raise ValueError(f"--spec {spec_file}: {key!r} must be an object of option: value")
            target.update(data.get(key, {}))
    if not task:
        raise ValueError("task: give the training task (e.g. transduction), or a --spec file with one")
    parser = task_parser(task)
    options, flags, typed = {}, {}, {}

    def option(name, where):
        dest, action = _find_action(parser, task, name, where)
        options[dest] = action.option_strings[-1]
        if _is_flag(action):
            flags[dest] = True
        return dest, action

    fixed = {}
    sources = [(n, v, f"--spec {spec_file}: set") for n, v in file_sets.items()]
    sources += [(*parse_assignment(s, "--set"), "--set") for s in sets]
    for name, value, where in sources:
        dest, action = option(name, where)
        text, value_typed = _canonical(action, value, f"{where} {name}")
        fixed[dest] = text
        typed[(dest, text)] = value_typed
    axes = {}
    sources = [(n, v, f"--spec {spec_file}: grid") for n, v in file_grids.items()]
    sources += [(*parse_assignment(g, "--grid"), "--grid") for g in grids]
    for name, raw, where in sources:
        dest, action = option(name, where)
        if dest in axes:
            raise ValueError(f"{where} {name}: {options[dest]} is an axis already (give its values once)")
        if dest in fixed:
            raise ValueError(f"{where} {name}: {options[dest]} is both fixed (--set) and an axis (--grid)")
        texts = []
        for value in _expand(raw, f"{where} {name}"):
            text, value_typed = _canonical(action, value, f"{where} {name}")
            if text in texts:
                raise ValueError(f"{where} {name}: value {text} given twice")
            texts.append(text)
            typed[(dest, text)] = value_typed
        axes[dest] = texts
    spec = GridSpec(task, fixed, axes, typed, flags, options)
    spec.validate(parser)
    return spec
