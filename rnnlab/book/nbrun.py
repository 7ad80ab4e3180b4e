"""Notebook execution that does not stall after widget cells.

nbclient sometimes waits out a cell's whole timeout (600 s here) after a cell
that displays ipywidgets, although the kernel has long replied
(jupyter/nbclient#312, open): the asynchronous shell channel's
``socket.poll(timeout)`` misses the reply's wake-up and returns only when its
timeout expires. :func:`patch_kernel_channels` makes every asynchronous
channel poll in short steps instead (a fresh poll sees a message that is
already waiting), which keeps the overall timeout and turns a stall into at
most one step's delay.

Used by ``python -m rnnlab.book execute``, the student-notebook tests, the
grader, and the book build (this module is also a Sphinx extension, listed in
``_config.yml``, so the patch is in place when jupyter-book executes notebooks
through jupyter-cache).

Kernels started side by side (``pytest -n 2``: nbval and the student tests) talk
over Unix sockets in a folder private to the process, not TCP: a kernel's TCP
ports are picked free by one process and bound by another a moment later, so
two workers can pick the same port, and the second kernel dies at its start
("Kernel died before replying to kernel_info"; ZMQError "Address already in
use"). :func:`ipc_manager_class` and :func:`patch_nbval_kernels` do this.
"""
import atexit
import os
import shutil
import tempfile
from time import monotonic

STEP = 0.5          # seconds per poll
_PATCHED = "_rnnlab_stepwise"


def patch_kernel_channels(step=STEP):
    """Make ``AsyncZMQSocketChannel.get_msg`` poll in steps of ``step`` seconds
    until its timeout (idempotent; returns True when the patch is in place)."""
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel

    original = AsyncZMQSocketChannel.get_msg
    if getattr(original, _PATCHED, False):
        return True

    async def get_msg(self, timeout=None):
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            wait = step if deadline is None else max(0.0, min(step, deadline - monotonic()))
            try:
                return await original(self, timeout=wait)
            except Empty:
                if deadline is not None and monotonic() >= deadline:
                    raise

    setattr(get_msg, _PATCHED, True)
    get_msg.__doc__ = original.__doc__
    AsyncZMQSocketChannel.get_msg = get_msg
    return True


_IPC_FOLDER = []


def ipc_prefix():
    """The path prefix of this process's kernel sockets, in a private temporary
    folder removed at exit; None where Unix sockets are missing (Windows)."""
    if os.name != "posix":
        return None
    if not _IPC_FOLDER:
        folder = tempfile.mkdtemp(prefix="rnnlab-kernels-")
        atexit.register(shutil.rmtree, folder, True)
        _IPC_FOLDER.append(folder)
    return os.path.join(_IPC_FOLDER[0], "kernel")


_IPC_CLASSES = {}


def ipc_manager_class(base=None):
    """A subclass of the kernel manager class ``base`` (jupyter_client's
    ``AsyncKernelManager`` by default) whose kernels use Unix sockets under
    :func:`ipc_prefix`; ``base`` itself where there are none."""
    if base is None:
        from jupyter_client import AsyncKernelManager as base
    prefix = ipc_prefix()
    if prefix is None:
        return base
    if base not in _IPC_CLASSES:
        class IpcKernelManager(base):
            def __init__(self, **kwargs):
                if "transport" not in kwargs:
                    kwargs.update(transport="ipc", ip=prefix)
                super().__init__(**kwargs)

        IpcKernelManager.__name__ = IpcKernelManager.__qualname__ = f"Ipc{base.__name__}"
        setattr(IpcKernelManager, _PATCHED, True)
        _IPC_CLASSES[base] = IpcKernelManager
    return _IPC_CLASSES[base]


def patch_nbval_kernels():
    """Make nbval start its kernels on Unix sockets (:func:`ipc_manager_class`;
    idempotent; returns False when nbval is not installed)."""
    try:
        from nbval import kernel
    except ImportError:
        return False
    if not getattr(kernel.KernelManager, _PATCHED, False):
        kernel.KernelManager = ipc_manager_class(kernel.KernelManager)
    return True


def notebook_client(nb, **kwargs):
    """``nbclient.NotebookClient(nb, **kwargs)`` with the channels patched and,
    unless ``km`` or ``kernel_manager_class`` is given, the kernel on Unix sockets
    (:func:`ipc_manager_class`)."""
    from nbclient import NotebookClient

    patch_kernel_channels()
    if "km" not in kwargs:
        kwargs.setdefault("kernel_manager_class", ipc_manager_class())
    return NotebookClient(nb, **kwargs)


def setup(app):
    """Sphinx extension: patch before jupyter-book executes any notebook."""
    patch_kernel_channels()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
