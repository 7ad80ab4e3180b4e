"""Grading on a Ray cluster: ``python -m rnnlab grade SUBMISSIONS --address ADDR``.

The grading process (the *driver*: the teacher's machine) does everything it does
without Ray (finds the notebooks, builds the judge's cases and answers and
compiles numba's cache before any student code runs, writes the CSVs and the
feedback); only each notebook's grading, :func:`rnnlab.checks.grade.grade_one`
(its kernel, then each exported function judged), runs as a Ray task on some
node of the cluster, in the same sandbox with the same limits as on one machine.
The judge goes to the cluster once (``ray.put``), with the answers computed on
the driver, so every node grades against the same answers; a task returns plain
data (its events, verdicts and notes), never anything a student process wrote.

- :func:`connect` starts a local Ray (``--address local``) or joins a cluster,
  first checking that something answers at the address (Ray itself would retry
  for minutes), and says what went wrong naming ``--address``;
- :func:`check_nodes` runs a probe on every node that can take a task: each must
  have a working bubblewrap (unless ``--unsafe``), nbclient, and the very same
  ``rnnlab`` as the driver (version and a digest of its source);
- :func:`run` submits one task per notebook (``--cpus-per-task`` CPUs each, so a
  node runs as many notebooks at once as it has CPUs for) and yields the
  outcomes as they finish.

The teacher's ``--import`` modules that are not installed packages travel with
the tasks (unpacked on each task's path before the judge is loaded); Ray itself
is imported only here.
"""
from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import io
import os
import re
import shutil
import socket
import sys
import tarfile
import tempfile
from pathlib import Path

RAY_MISSING = ("--address: grading on a Ray cluster needs Ray, which is not installed here: "
               "pip install 'ray>=2.9' (or pip install 'rnnlab[sweep]')")
SET_UP = ("start one with `ray start --head` on the head node and `ray start --address HEAD:6379` on "
          "the others (see the book's page Grading and tooling), or grade on this machine with --address local")


class ClusterError(RuntimeError):
    """The cluster cannot grade (unreachable, a node without the sandbox or with another rnnlab);
    the message names the option to change."""


def _reachable(address, seconds=10.0):
    """None when a TCP connection to ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) opens within
    ``seconds``, else why not. Other forms (``auto``) are left to Ray."""
    m = re.match(r"^(?:ray://)?(?P<host>\[[^\]]+\]|[^:/\s]+):(?P<port>\d+)/?$", address)
    if not m:
        return None if "://" not in address or address.startswith("ray://") else (
            "not an address Ray takes (auto, HOST:PORT or ray://HOST:PORT)")
    host, port = m["host"].strip("[]"), int(m["port"])
    try:
        socket.create_connection((host, port), timeout=seconds).close()
    except OSError as exc:
        return f"nothing answers at {host}:{port} ({exc.strerror or type(exc).__name__})"
    return None


def connect(address, *, cpus=None, object_store_mb=200):
    """``(ray, owns)``: Ray, started here (``address == "local"``: ``cpus`` CPUs and an object store
    of ``object_store_mb`` MB) or joined (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``); a Ray this
    process already initialised is used as it is (``owns`` False). :class:`ClusterError` otherwise."""
    try:
        import ray
    except ImportError:
        raise ClusterError(RAY_MISSING) from None
    why = None if address == "local" else _reachable(address)
    if why:
        raise ClusterError(f"--address {address}: cannot reach a Ray cluster: {why}; {SET_UP}")
    if ray.is_initialized():
        return ray, False
    if address == "local":
        try:
            ray.init(num_cpus=cpus, object_store_memory=int(object_store_mb) << 20, include_dashboard=False,
                     log_to_driver=False)
        except Exception as exc:  # noqa: BLE001 (Ray's own: a raylet that did not start in time, ...)
            ray.shutdown()
            said = (str(exc).strip().splitlines() or [""])[0][:300]
            raise ClusterError(f"--address local: Ray did not start on this machine ({type(exc).__name__}: "
                               f"{said}); grade without --address, or try again when the machine is less "
                               "busy") from None
        return ray, True
    try:
        ray.init(address=address, log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 (Ray's own errors: ConnectionError, RuntimeError, ...)
        said = (str(exc).strip().splitlines() or [""])[0][:300]
        raise ClusterError(f"--address {address}: cannot connect to a Ray cluster ({type(exc).__name__}: "
                           f"{said}); {SET_UP}") from None
    return ray, True


# ------------------------------------------------------------------------------------ the nodes

def fingerprint():
    """``(version, digest)`` of this ``rnnlab``: its version and a digest of its Python source."""
    import rnnlab

    root = Path(rnnlab.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return getattr(rnnlab, "__version__", "?"), digest.hexdigest()[:16]


def _probe(boxed):
    """What a node offers: its name, a working sandbox, nbclient, its rnnlab."""
    from . import sandbox

    version, digest = fingerprint()
    return {"host": socket.gethostname(), "sandbox": sandbox.available() if boxed else True,
            "nbclient": importlib.util.find_spec("nbclient") is not None, "rnnlab": version, "digest": digest,
            "python": sys.version.split()[0]}


def check_nodes(ray, *, boxed, cpus_per_task, timeout=600):
    """Probe every live node that has ``cpus_per_task`` CPUs; :class:`ClusterError` naming the nodes
    that lack the sandbox, nbclient or this very rnnlab. Returns a line on the cluster."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= cpus_per_task]
    if not nodes:
        most = max([n.get("Resources", {}).get("CPU", 0) for n in ray.nodes() if n.get("Alive")] or [0])
        raise ClusterError(f"--cpus-per-task {cpus_per_task:g}: no node of the cluster has that many CPUs "
                           f"(the largest has {most:g})")
    probe = ray.remote(num_cpus=0, max_retries=0)(_probe)
    refs = [probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(boxed)
            for n in nodes]
    try:
        found = ray.get(refs, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 (a node that never ran the probe, or Ray's own trouble)
        for ref in refs:
            ray.cancel(ref, force=True)
        raise ClusterError(f"--address: the cluster's nodes did not all answer a probe within {timeout} s "
                           f"({type(exc).__name__}: {str(exc).strip()[:200]})") from None
    here = fingerprint()
    problems = []
    for node, info in zip(nodes, found):
        name = f"{info['host']} ({node.get('NodeManagerAddress', '?')})"
        if not info["sandbox"]:
            problems.append(f"{name} has no working bubblewrap (install it there: apt-get install bubblewrap; "
                            "--unsafe grades without it)")
        if not info["nbclient"]:
            problems.append(f"{name} has no nbclient (pip install 'rnnlab[book]' there)")
        if (info["rnnlab"], info["digest"]) != here:
            problems.append(f"{name} has another rnnlab (version {info['rnnlab']}, source {info['digest']}; here "
                            f"{here[0]}, source {here[1]}): install the same pinned rnnlab on every node")
    if problems:
        raise ClusterError("--address: the cluster cannot grade: " + "; ".join(problems))
    cpus = sum(n.get("Resources", {}).get("CPU", 0) for n in nodes)
    return (f"{len(nodes)} node{'s' * (len(nodes) != 1)}, {cpus:g} CPUs, {cpus_per_task:g} per notebook "
            f"(up to {int(sum(n['Resources']['CPU'] // cpus_per_task for n in nodes))} notebooks at once)")


# ------------------------------------------------------------------------------------ the tasks

def _shipped_modules(imports):
    """The paths of the teacher's ``--import`` modules that the nodes may lack: the top-level
    modules' files or packages' folders that are not installed packages and not rnnlab (they
    go to the cluster once, and each task puts them on its path)."""
    shipped = []
    for name in dict.fromkeys(m.split(".")[0] for m in imports):
        module = sys.modules.get(name) or importlib.import_module(name)
        where = getattr(module, "__file__", None) or ""
        if name == "rnnlab" or not where or any(part in ("site-packages", "dist-packages")
                                                for part in Path(where).parts):
            continue
        path = list(getattr(module, "__path__", []))[:1] or [where]     # a package's folder, or the file
        if path[0] not in shipped:
            shipped.append(path[0])
    return shipped


def pack(paths):
    """Files and folders (numba's cache for this run, the teacher's modules) as tar bytes, each
    under its own name; None when there is none."""
    paths = [Path(p) for p in paths if p is not None and Path(p).exists()]
    if not paths:
        return None
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for path in paths:
            tar.add(str(path), arcname=path.name)
    return data.getvalue()


def _unpack(data, into):
    Path(into).mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:                                   # the grader's own archive (no student process wrote it)
            tar.extractall(into)
    return Path(into)


def _task(cells, nb, judge, opts, numba, modules, imports):
    """One notebook graded on a node: :func:`rnnlab.checks.grade.grade_one` with this node's own
    paths: the teacher's modules unpacked and on the path (here, in the kernels and candidates)
    before the judge (cloudpickle bytes) is loaded, numba's cache unpacked from the driver's, the
    network prefix of ``--unsafe``. The worker's path and environment are restored after."""
    import cloudpickle

    from . import grade_one, scrub
    from .kernel import isolation

    tmp = Path(tempfile.mkdtemp(prefix="rnnlab-grade-task-"))
    saved_path, saved_env = list(sys.path), os.environ.get("PYTHONPATH")
    try:
        if modules:
            folder = str(_unpack(modules, tmp / "modules"))
            sys.path.insert(0, folder)
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, saved_env]))
        judge = cloudpickle.loads(judge)
        for module in imports:              # the teacher's exercises, registered as on the driver
            importlib.import_module(module)
        opts = copy.copy(opts)
        opts.numba_seed = judge.numba_seed = _unpack(numba, tmp) / "numba" if numba else None
        judge.threads = getattr(opts, "threads", None)
        if not opts.sandbox:
            opts.prefix = judge.prefix = isolation()
        execution, results, note, cell_errors = grade_one(cells, nb, judge, opts)
    finally:
        sys.path[:] = saved_path
        if saved_env is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_env
        shutil.rmtree(tmp, ignore_errors=True)
    secrets = [Path.home(), sys.prefix]     # this node's own paths (the driver scrubs its own)
    for record in results.values():
        record["message"] = scrub(record.get("message", ""), secrets)
    return execution, results, note, [scrub(e, secrets) for e in cell_errors]


def run(ray, tasks, judge, opts, *, cpus_per_task, imports=()):
    """Grade ``tasks`` (``(student, rel, notebook, cells)``) on the cluster, one task per notebook;
    yield ``(index, outcome)`` as each finishes, ``outcome`` being ``grade_one``'s tuple or the
    exception that stopped it. Unfinished tasks are cancelled when the caller stops."""
    import cloudpickle

    remote = ray.remote(_task).options(num_cpus=cpus_per_task, retry_exceptions=False)
    opts = copy.copy(opts)
    opts.threads = max(1, int(cpus_per_task))
    # the judge as bytes: loaded in the task once the teacher's modules are on its path
    judge_ref = ray.put(cloudpickle.dumps(judge))
    numba_ref, modules_ref = ray.put(pack([getattr(opts, "numba_seed", None)])), ray.put(pack(_shipped_modules(imports)))
    opts.numba_seed = None
    pending = {remote.remote(cells, nb, judge_ref, opts, numba_ref, modules_ref, list(imports)): i
               for i, (_student, _rel, nb, cells) in enumerate(tasks)}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                try:
                    yield i, ray.get(ref)
                except Exception as exc:  # noqa: BLE001 (one notebook's trouble never stops the others)
                    yield i, getattr(exc, "cause", None) or exc
    finally:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 (already finished, or Ray is going down)
                pass
