"""The judge: decides every verdict of ``python -m rnnlab grade``, away from student code.

The judge is the grading process itself. It imported :mod:`rnnlab.checks`
(and the teacher's ``--import`` and ``--cases`` modules) and, in
:meth:`Judge.prepare`, built every exercise's cases (the public ones, the
hidden ones drawn from the teacher's seed, the teacher's own) and computed the
reference's answers, before any submitted notebook started. Student code
never runs in it, and nothing that student code wrote is unpickled in it: for
each exercise of each notebook, :meth:`Judge.decide` hands the function the
kernel exported (cloudpickle bytes) and the pickled cases to a process of its
own (:mod:`rnnlab.checks.grade.candidate`: no network, a memory limit, killed
with everything it started at the time limit), reads back only plain data
(numbers, strings, arrays and tensors as raw bytes with dtype and shape,
tuples, lists, dicts: :func:`decode`) and calls :func:`rnnlab.checks.core.verdict`
with its own expected values.
"""
from __future__ import annotations

import base64
import copy
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .. import core
from . import candidate as sandbox
from . import sandbox as boxes
from .kernel import environment

LOAD_SECONDS = 60          # to start the candidate's process and load its cases (torch's import included)
MAX_RESULTS = 64 << 20     # bytes of results read back from one candidate


@dataclass
class Problem:
    """One exercise as the judge grades it: every case, the reference's answers, the cases pickled."""
    exercise: core.Exercise
    cases: list = field(default_factory=list)
    hidden: int = 0
    expected: list = field(default_factory=list)
    blob: bytes = b""
    error: str | None = None          # the check itself could not be prepared
    blobs: list = field(default_factory=list)     # each case pickled, sent to the candidate one at a time
    line_cap: int = 1 << 20           # bytes of one result line read back (more: refused unread)


def load_cases_file(path):
    """The teacher's ``--cases FILE``: a Python file defining ``CASES = {label: cases}``,
    where ``cases`` is a list of :class:`rnnlab.checks.Case` or a function of a NumPy
    generator returning one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"rnnlab_grade_cases_{zlib.crc32(str(path).encode())}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases = getattr(module, "CASES", None)
    if not isinstance(cases, dict):
        raise ValueError(f"{path} defines no dict CASES = {{label: [Case(...), ...] or function(rng)}}")
    return cases


class Judge:
    """Prepares the exercises, then grades exported candidates (thread-safe after :meth:`prepare`)."""

    def __init__(self, exercises, *, seed, extra=None, memory=4096, seconds=60, prefix=(), jobs=1,
                 boxed=False, numba_seed=None, threads=None):
        self.exercises, self.seed, self.extra = list(exercises), seed, dict(extra or {})
        self.memory, self.seconds, self.prefix, self.jobs = memory, seconds, list(prefix), jobs
        self.boxed, self.numba_seed, self.threads = boxed, numba_seed, threads
        self.problems, self.blocked_names = {}, {}

    def hidden_cases(self, ex):
        """The exercise's hidden cases: its own generator's (seeded by ``seed`` and the
        label) and then the teacher's."""
        import numpy as np

        cases = []
        sources = [("the exercise's generator", ex.hidden)] if ex.hidden is not None and self.seed is not None else []
        sources += [("--cases", self.extra[ex.label])] if ex.label in self.extra else []
        for n, (_where, source) in enumerate(sources):
            rng = np.random.default_rng([self.seed or 0, zlib.crc32(ex.label.encode()), n])
            made = source(rng) if callable(source) else source
            cases += [c if isinstance(c, core.Case) else core.Case(tuple(c)) for c in made]
        return cases

    def prepare(self):
        """Build each exercise's cases and answers (before any student code runs)."""
        import cloudpickle

        for module in ("numpy", "torch"):      # the comparisons' imports, done while nothing else ran
            try:
                __import__(module)
            except ImportError:
                pass
        for ex in self.exercises:
            problem = Problem(ex)
            try:
                public, hidden = list(ex.cases()), self.hidden_cases(ex)
                problem.cases, problem.hidden = public + hidden, len(hidden)
                problem.expected = [ex.reference(*copy.deepcopy(c.args), **copy.deepcopy(c.kwargs))
                                    for c in problem.cases]
                problem.blob = cloudpickle.dumps([(c.args, c.kwargs) for c in problem.cases])
                problem.blobs = [cloudpickle.dumps((c.args, c.kwargs)) for c in problem.cases]
                problem.line_cap = (1 << 20) + 8 * max([_encoded_size(e) for e in problem.expected] or [0])
            except Exception as exc:  # noqa: BLE001 (reported on the exercise's rows)
                problem.error = f"{ex.label}: the check itself failed ({core._error_line(exc)}); please report this"
            self.problems[ex.label] = problem
            self.blocked_names[ex.label] = self.blocked(ex)   # here, where every exercise is registered
        return self

    def describe(self):
        """One line on the cases: how many hidden ones, from what."""
        hidden = sum(p.hidden for p in self.problems.values())
        having = sum(bool(p.hidden) for p in self.problems.values())
        return f"{hidden} hidden cases for {having} of {len(self.problems)} exercises"

    # ------------------------------------------------------------- one candidate

    def decide(self, ex, export):
        """The record (``label``, ``status``, ``passed``, ``total``, ``hidden``, ``message``) for
        exercise ``ex`` given the kernel's export: None (no such function), ``("why", text)``
        or ``("pkl", bytes)``."""
        problem = self.problems[ex.label]
        if problem.error:
            return {"label": ex.label, "status": "error", "message": problem.error}
        if export is None:
            return {"label": ex.label, "status": "not attempted",
                    "message": f"{ex.label}: not attempted (no function {ex.name} is defined)"}
        if export[0] == "why":
            return {"label": ex.label, "status": "error", "message": (
                f"{ex.label}: {ex.name} could not be exported to the grader ({export[1]}); define it with "
                "`def` in a cell of its own, using only values that can be saved (not an open file, a "
                "generator, a lock or a widget)")}
        result = self.run(problem, export[1])
        if isinstance(result, dict):
            return result
        return core.verdict(ex, problem.cases, problem.expected, result, hidden=problem.hidden,
                            hint_tier=0).as_dict()

    def blocked(self, ex):
        """What raises in ``ex``'s candidate: its own :meth:`~rnnlab.checks.core.Exercise.blocked_names`
        and the reference of every exercise (no student solution calls the checks' own answers)."""
        names = list(ex.blocked_names())
        for other in core.exercises():
            ref = other.reference
            qualname, module = getattr(ref, "__qualname__", ""), getattr(ref, "__module__", None)
            if qualname and "<" not in qualname and module and f"{module}:{qualname}" not in names:
                names.append(f"{module}:{qualname}")
        return names

    def command(self, job, blocked, cap=1 << 30):
        """The candidate's command line: in its own sandbox (:mod:`.sandbox`) unless ``--unsafe``."""
        argv = boxes.script(sandbox)
        if self.boxed:
            return boxes.command([*argv, boxes.JOB, str(self.memory), json.dumps(blocked), str(cap)], job,
                                 boxes.environment(threads=self.threads or max(1, (os.cpu_count() or 1)
                                                                              // max(1, self.jobs)))), \
                {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, job
        return [*self.prefix, *argv, str(job), str(self.memory), json.dumps(blocked), str(cap)], \
            environment(job / "tmp", self.jobs, job / "numba"), job / "work"

    def run(self, problem, data):
        """Run the candidate in its own process, one case at a time: a list of attempts, or a record.

        The cases go to it over a pipe, each only after the last one's result came back,
        the public ones first: while it runs a public case it has seen no hidden case. Its
        results come back over another pipe, one JSON line per case, each line capped in
        size (a value far larger than the expected one is refused unread)."""
        ex = problem.exercise
        job = Path(tempfile.mkdtemp(prefix="rnnlab-judge-"))
        proc, reader = None, None
        try:
            for folder in ("work", "tmp", "home"):
                (job / folder).mkdir()
            (job / "candidate.pkl").write_bytes(data)
            boxes.seed_numba_cache(self.numba_seed, job)     # a private copy of this run's own cache
            blocked = self.blocked_names.get(ex.label) or self.blocked(ex)
            command, env, cwd = self.command(job, blocked, problem.line_cap)
            proc = boxes.popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            reader = _Lines(proc.stdout, problem.line_cap)
            records, began, timed_out = [], time.monotonic(), False
            first = reader.get(began + LOAD_SECONDS + self.seconds)
            if first is not None:
                records.append(first)
            if first is not None and first.get("ready"):
                deadline = time.monotonic() + self.seconds
                sender = _Sender(proc.stdin)
                for i, blob in enumerate(problem.blobs):
                    sender.send(len(blob).to_bytes(8, "little") + blob)
                    record = reader.get(deadline)
                    if record is None:
                        timed_out = time.monotonic() >= deadline
                        break
                    records.append(record)
                    if record.get("too large"):
                        record["case"] = i
                    if record.get("case") != i or (i == 0 and "not implemented" in record) or "broken" in record:
                        break
                else:
                    sender.send(None)
                    done = reader.get(min(deadline, time.monotonic() + 5))
                    records += [done] if done is not None else []
            elif first is None:
                timed_out = proc.poll() is None
            boxes.kill_tree(proc)                # whatever the candidate left running
        finally:
            if proc is not None:
                if proc.poll() is None:
                    boxes.kill_tree(proc)
                for stream in (proc.stdin, proc.stdout):
                    try:
                        stream.close()
                    except OSError:
                        pass
            shutil.rmtree(job, ignore_errors=True)
        hidden_from = len(problem.cases) - problem.hidden
        first = next((r for r in records if r.keys() & {"broken", "unloadable", "uncallable"}), None)
        if first and "broken" in first:
            return {"label": ex.label, "status": "error", "message": f"{ex.label}: {str(first['broken'])[:200]}"}
        if first and "unloadable" in first:
            return {"label": ex.label, "status": "error", "message": (
                f"{ex.label}: {ex.name} was exported but could not be loaded in the grader's process "
                f"({str(first['unloadable'])[:300]}); does it need a module of your own?")}
        if first and "uncallable" in first:
            return {"label": ex.label, "status": "failed", "total": len(problem.cases), "hidden": problem.hidden,
                    "message": f"{ex.label}: expected a function {ex.signature}, got {sandbox.article(str(first['uncallable'])[:60])}"}
        if timed_out:
            return {"label": ex.label, "status": "timeout", "total": len(problem.cases), "hidden": problem.hidden,
                    "message": f"{ex.label}: {ex.name} did not return within {self.seconds:g} s (an endless loop?)"}
        attempts = {}
        for record in records:
            if not isinstance(record.get("case"), int) or not 0 <= record["case"] < len(problem.cases):
                continue
            i = record["case"]
            secret = i >= hidden_from           # nothing the candidate wrote comes back for a hidden case
            if "not implemented" in record:
                attempts[i] = ("not implemented", None)
            elif "too large" in record:
                attempts[i] = ("raised", "your function returned a value far larger than the expected one "
                                         "(it was not read)")
            elif "raised" in record and self.memory and record.get("type") == "MemoryError":
                attempts[i] = ("raised", f"MemoryError: your function asked for more memory than the grader's "
                                         f"limit of {self.memory} MB")
            elif "raised" in record:
                attempts[i] = ("raised", _name(record.get("type")) if secret else str(record["raised"])[:500])
            elif "unsupported" in record:
                attempts[i] = ("raised", "your function returned " + ("a value" if secret else
                               str(record["unsupported"])[:100]) + ", which the grader cannot compare "
                               "(return numbers, arrays, tensors, or tuples of them)")
            elif "value" in record:
                try:
                    attempts[i] = ("value", decode(record["value"]))
                except (ValueError, TypeError, KeyError, OverflowError, RecursionError, MemoryError) as exc:
                    attempts[i] = ("raised", "your function's return value could not be read back"
                                   + ("" if secret else f" ({str(exc)[:100]})"))
        if attempts.get(0) == ("not implemented", None):
            return [attempts[0]]
        if any("done" in r for r in records):
            ended = "no result came back for this case (did your function change the grader's process?)"
        else:
            code = proc.returncode if proc is not None else None
            ended = ("your function ended its process" + ("" if code is None else
                     f" (killed by signal {-code}; out of memory?"
                     + (f" the limit is {self.memory} MB)" if self.memory else ")") if code < 0 else f" (exit status {code})"))
        return [attempts.get(i, ("raised", ended if i < hidden_from else "your function ended its process"))
                for i in range(len(problem.cases))]


class _Sender:
    """Writes the cases to the candidate's stdin from a thread of its own: the judge never
    blocks on a pipe that the candidate does not read (it only waits, with a deadline, for
    results). ``send(None)`` closes the pipe."""

    def __init__(self, stream):
        import queue
        import threading

        self.queue, self.stream = queue.Queue(), stream
        threading.Thread(target=self._write, daemon=True).start()

    def send(self, data):
        self.queue.put(data)

    def _write(self):
        while True:
            data = self.queue.get()
            try:
                if data is None:
                    self.stream.close()
                    return
                self.stream.write(data)
                self.stream.flush()
            except (OSError, ValueError):
                return


class _Lines:
    """JSON objects read from a pipe by a thread of their own, one a line; a line longer than
    ``cap`` bytes is skipped unread and stands for ``{"case": n, "too large": True}``;
    ``MAX_RESULTS`` bytes in all."""

    def __init__(self, stream, cap):
        import queue
        import threading

        self.queue, self.stream, self.cap = queue.Queue(), stream, cap
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        total, line, skipping = 0, bytearray(), False
        try:
            while total < MAX_RESULTS:
                chunk = self.stream.read1(1 << 16) if hasattr(self.stream, "read1") else self.stream.read(1 << 16)
                if not chunk:
                    break
                total += len(chunk)
                while chunk:
                    cut = chunk.find(b"\n")
                    part, chunk = (chunk, b"") if cut < 0 else (chunk[:cut], chunk[cut + 1:])
                    if not skipping:
                        line += part
                        if len(line) > self.cap:          # said at once; the rest of the line is skipped
                            skipping, line = True, bytearray()
                            self.queue.put({"too large": True})
                    else:
                        total -= len(part)                 # skipped bytes cost time (the judge's limit), not memory
                    if cut >= 0:
                        record = None if skipping else _parse(bytes(line))
                        if record is not None:
                            self.queue.put(record)
                        line, skipping = bytearray(), False
        except (OSError, ValueError):
            pass
        self.queue.put(None)

    def get(self, deadline):
        """The next object, or None when the pipe ended or ``deadline`` (monotonic) passed."""
        import queue

        try:
            return self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None


def _parse(line):
    try:
        record = json.loads(line.decode("utf-8", "replace")) if line.strip() else None
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _name(kind):
    kind = str(kind or "an exception")
    return f"your function raised {kind if kind.isidentifier() else 'an exception'}"


def _encoded_size(value):
    try:
        return len(json.dumps(sandbox.encode(value)))
    except Exception:  # noqa: BLE001 (an answer that is not plain data: a generous cap)
        return 2 << 20


def _head(path, size=4096):
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return b""


def _records(path):
    """The JSON objects of the results file, one a line (anything else is skipped)."""
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_RESULTS).decode("utf-8", "replace")
    except OSError:
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        records += [record] if isinstance(record, dict) else []
    return records


# ------------------------------------------------------------- plain data back

FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def decode(x, depth=0):
    """The value that :func:`rnnlab.checks.grade.candidate.encode` wrote; only plain data
    (ValueError on anything else: nothing here can run code)."""
    if depth > sandbox.MAX_DEPTH + 1:
        raise ValueError("nested too deeply")
    if x is None or type(x) in (bool, int, float):
        return x
    if type(x) is not dict or len(x) not in (1, 2):
        raise ValueError("not an encoded value")
    (kind, value), *_ = x.items()
    if kind == "float" and value in FLOATS:
        return FLOATS[value]
    if kind == "complex":
        return complex(float(value[0]), float(value[1]))
    if kind == "str" and type(value) is str:
        return value
    if kind in ("tuple", "list") and type(value) is list:
        items = [decode(v, depth + 1) for v in value]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict" and type(value) is list:
        return {decode(k, depth + 1): decode(v, depth + 1) for k, v in value}
    if kind in ("ndarray", "scalar"):
        array = _array(value)
        return array if kind == "ndarray" else array[()]
    if kind == "tensor":
        import torch

        array = _array(value)
        tensor = torch.from_numpy(array)
        dtype = getattr(torch, str(x.get("dtype")), None)
        return tensor.to(dtype) if isinstance(dtype, torch.dtype) and dtype != tensor.dtype else tensor
    raise ValueError(f"not an encoded value ({kind!r})")


def _array(spec):
    import numpy as np

    dtype = np.dtype(str(spec["dtype"]))
    if dtype.kind not in sandbox.KINDS or dtype.hasobject:
        raise ValueError(f"an array of {dtype}")
    shape = tuple(int(n) for n in spec["shape"])
    if any(n < 0 for n in shape) or len(shape) > 32:
        raise ValueError("a bad shape")
    data = base64.b64decode(spec["data"], validate=True)
    if len(data) != math.prod(shape) * dtype.itemsize:
        raise ValueError("the data do not fill the shape")
    array = np.frombuffer(data, dtype=dtype).reshape(shape)
    return array.astype(dtype.newbyteorder("="), copy=True)


def default_seed():
    """A fresh random seed for the hidden cases (recorded in the CSV's first line)."""
    return int.from_bytes(os.urandom(4), "little") % (10 ** 9)
