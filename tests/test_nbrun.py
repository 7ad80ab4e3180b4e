"""Notebook kernels on Unix sockets (rnnlab/book/nbrun.py): two kernels started side by side by
``pytest -n 2`` must not race for one TCP port (a CI run lost a notebook to "Kernel died before
replying to kernel_info")."""
import os

import nbformat
import pytest

from rnnlab.book import nbrun

posix = pytest.mark.skipif(os.name != "posix", reason="Unix sockets only")


@posix
def test_ipc_manager_class_uses_a_private_socket_folder():
    from jupyter_client import AsyncKernelManager, KernelManager

    cls = nbrun.ipc_manager_class(KernelManager)
    assert issubclass(cls, KernelManager) and nbrun.ipc_manager_class(KernelManager) is cls
    km = cls(kernel_name="python3")
    assert km.transport == "ipc" and km.ip == nbrun.ipc_prefix()
    assert os.path.isdir(os.path.dirname(km.ip)) and os.stat(os.path.dirname(km.ip)).st_mode & 0o077 == 0
    assert cls(kernel_name="python3", transport="tcp").transport == "tcp"   # an explicit choice stands
    assert nbrun.ipc_manager_class().__mro__[1] is AsyncKernelManager


@posix
def test_nbval_is_patched_by_the_repository_conftest():
    from nbval import kernel

    assert nbrun.patch_nbval_kernels()
    assert kernel.KernelManager(kernel_name="python3").transport == "ipc"


@posix
def test_notebook_client_runs_a_notebook_over_unix_sockets():
    source = "import json\nfrom ipykernel.connect import get_connection_info\nprint(json.loads(get_connection_info())['transport'])"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbrun.notebook_client(nb, timeout=60, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"] == "ipc\n"
