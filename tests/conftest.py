"""Shared fixtures of the unit tests."""
import os
import sys

import pytest


@pytest.fixture
def one_thread():
    """Torch on one thread for the test, restored after: tiny models run faster on one thread (and are immune
    to a busy second core), and ``--threads 1`` of the train commands sets torch's process-wide pool anyway."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def exercise_module(request, tmp_path_factory):
    """The test module's ``EXERCISES`` source imported as the module ``MODULE``, on
    ``sys.path`` and on the kernels' ``PYTHONPATH`` (the grading tests declare their
    own exercises there); every exercise registered meanwhile is removed after."""
    from rnnlab.checks import core

    name, source = request.module.MODULE, request.module.EXERCISES
    folder = tmp_path_factory.mktemp("modules")
    (folder / f"{name}.py").write_text(source)
    before = set(core._REGISTRY)
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(folder))
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
        __import__(name)
        yield name
    for label in set(core._REGISTRY) - before:
        core._REGISTRY.pop(label, None)
    sys.modules.pop(name, None)


@pytest.fixture(autouse=True)
def _fresh_hint_tiers():
    """Each test starts at a check's first hint: ``rnnlab.checks`` counts, per label and per
    process, how many failures showed a hint, so a test that expects the first hint's words
    would otherwise depend on which tests ran before it in the same process."""
    core = sys.modules.get("rnnlab.checks.core")
    if core is not None:
        core._HINTS_SHOWN.clear()
    yield
