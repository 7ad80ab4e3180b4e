"""Shared fixtures of the unit tests."""
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
