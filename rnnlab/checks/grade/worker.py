"""The notebook runner of grading: execute the prepared notebook in a fresh kernel, logging events.

Run by :func:`rnnlab.checks.grade.kernel.run` as ``python -c BOOT this_file NOTEBOOK LOG
CELL_TIMEOUT EXPORT_TIMEOUT EXPORT_TAG NBRUN MEMORY`` (:func:`rnnlab.checks.grade.sandbox.script`),
in the kernel's (empty) working folder.
``MEMORY`` (MB, 0: none) is the address-space limit (``RLIMIT_AS``, soft and hard) of this
process and so of the kernel it starts and of everything the kernel starts.
Loaded by path, with ``rnnlab/book/nbrun.py`` loaded by path too: importing the
``rnnlab`` package would import torch, seconds that would count against the
notebook's time limit. nbclient and the standard library only.
"""
import json
import os
import sys
from pathlib import Path

def limit_memory(megabytes):
    """The address-space limit, soft and hard (a process cannot raise it again), in MB."""
    import resource

    size = int(float(megabytes)) << 20
    if size > 0:
        resource.setrlimit(resource.RLIMIT_AS, (size, size))


def main(nb_path, log_path, cell_timeout, export_timeout, export_tag, nbrun_path, memory="0"):
    """Execute ``nb_path``, logging one JSON line per event: the kernel's pid, each cell
    started and ended (with its error), the death of the kernel, and last ``finished``."""
    import importlib.util

    limit_memory(memory)
    sys.modules.setdefault("rfc3987_syntax", None)   # nbformat's optional IRI check: 1.5 s to import
    import nbformat
    from jupyter_client import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    spec = importlib.util.spec_from_file_location("rnnlab_grade_nbrun", nbrun_path)
    nbrun = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nbrun)
    nbrun.patch_kernel_channels()          # no stall after widget cells (jupyter/nbclient#312)

    with open(nb_path) as f:
        nb = nbformat.from_dict(json.load(f))
    log = open(log_path, "a")

    def emit(**record):
        log.write(json.dumps(record) + "\n")
        log.flush()

    def ended(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        emit(end=cell_index, error=f"{content.get('ename')}: {content.get('evalue')}"
             if content.get("status") == "error" else None)

    def limit(cell):
        return int(float(export_timeout) if export_tag in cell.metadata.get("tags", []) else float(cell_timeout))

    km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=str(Path(nb_path).parent / "kernel"))
    client = NotebookClient(
        nb, km=km, timeout=int(float(cell_timeout)), allow_errors=True, interrupt_on_timeout=True,
        shutdown_kernel="immediate", resources={"metadata": {"path": os.getcwd()}}, timeout_func=limit,
        on_notebook_start=lambda notebook: emit(kernel=km.provisioner.pid),
        on_cell_execute=lambda cell, cell_index: emit(start=cell_index), on_cell_executed=ended)
    try:
        client.execute()
    except DeadKernelError:
        emit(dead=True)
    except Exception as exc:  # noqa: BLE001 (becomes a note; the grading goes on)
        emit(failed=f"{type(exc).__name__}: {exc}")
    emit(finished=True)
