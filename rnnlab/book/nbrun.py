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
"""
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


def notebook_client(nb, **kwargs):
    """``nbclient.NotebookClient(nb, **kwargs)`` with the channels patched."""
    from nbclient import NotebookClient

    patch_kernel_channels()
    return NotebookClient(nb, **kwargs)


def setup(app):
    """Sphinx extension: patch before jupyter-book executes any notebook."""
    patch_kernel_channels()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
