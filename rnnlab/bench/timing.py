"""One careful timer, shared by every benchmark in :mod:`rnnlab.bench`.

How a measurement is taken (:func:`time_calls`):

1. **Warm-up.** Each function is called ``warmup`` times untimed, so numba's
   compilation (or the load from its cache), torch's first-call set-up and
   the allocator's first requests are not counted.
2. **Interleaved repeats.** The functions being compared are called in turn,
   round after round (``f, g, h, f, g, h, ...``), each call timed on its own
   with :func:`time.perf_counter`. A background process that slows the
   machine for a while then slows every function alike, so ratios taken
   from one call of :func:`time_calls` hold up on a shared machine better
   than times taken one after the other.
3. **Stopping.** Rounds go on until at least ``min_repeats`` rounds are done
   *and* ``min_time`` seconds have passed (or ``max_repeats`` rounds are done).
   A slow function (the torch loop over a long sequence) therefore gets few
   repeats; its :class:`Timing` says how many (``n``).
4. **Summary.** The median, the inter-quartile range and the minimum of the
   per-call times (:class:`Timing`).

On CUDA, ``torch.cuda.synchronize()`` is called before starting and after
each call, so a call's time covers the work it launched. Python's garbage
collector is paused while timing (as :mod:`timeit` does).

:func:`match_thread_pools` sizes numba's thread pool to torch's: each library
starts its own pool, and two full pools on two cores oversubscribe them.
"""
import dataclasses
import datetime
import gc
import importlib.metadata
import os
import platform
import statistics
import time

import torch

__all__ = ["Timing", "time_call", "time_calls", "match_thread_pools", "synchronizer",
           "machine_info", "busy_warning", "CpuMonitor", "cpu_pressure", "available_memory_bytes"]


@dataclasses.dataclass(frozen=True)
class Timing:
    """Summary of the per-call times (seconds) of one timed function."""

    median: float
    q1: float
    q3: float
    min: float
    mean: float
    n: int
    """Number of timed calls (warm-up calls excluded)."""

    @property
    def iqr(self):
        """Inter-quartile range ``q3 - q1`` (seconds): the spread of the middle half."""
        return self.q3 - self.q1

    @classmethod
    def from_times(cls, times):
        times = sorted(float(t) for t in times)
        if not times:
            raise ValueError("Timing.from_times: no times given")
        if len(times) >= 2:
            q1, _, q3 = statistics.quantiles(times, n=4, method="inclusive")
        else:
            q1 = q3 = times[0]
        return cls(median=statistics.median(times), q1=q1, q3=q3, min=times[0],
                   mean=statistics.fmean(times), n=len(times))

    def stat(self, name):
        """The summary statistic ``name``: ``"median"``, ``"min"`` or ``"mean"``."""
        if name not in ("median", "min", "mean"):
            raise ValueError(f"Timing.stat: name must be 'median', 'min' or 'mean', got {name!r}")
        return getattr(self, name)

    def scaled(self, factor):
        """This timing with every time multiplied by ``factor`` (an extrapolation)."""
        f = float(factor)
        return Timing(median=self.median * f, q1=self.q1 * f, q3=self.q3 * f,
                      min=self.min * f, mean=self.mean * f, n=self.n)

    def as_dict(self):
        """JSON-ready: median, q1, q3, iqr, min, mean (seconds) and n."""
        d = dataclasses.asdict(self)
        d["iqr"] = self.iqr
        return d


def synchronizer(device):
    """A no-argument function that waits for ``device`` to finish its queued work.

    ``torch.cuda.synchronize`` for a CUDA device, a no-op otherwise.
    """
    device = torch.device(device)
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def time_calls(fns, *, warmup=2, min_repeats=3, min_time=0.2, max_repeats=10_000,
               device="cpu"):
    """Time several no-argument functions, interleaved; return ``{name: Timing}``.

    Parameters
    ----------
    fns : dict ``{name: callable}``
        The functions to compare. Each is called with no arguments; what it
        returns is dropped (after synchronising the device).
    warmup : int
        Untimed calls of each function first (compilation, caches, allocator).
    min_repeats : int
        At least this many timed calls of each function.
    min_time : float
        Keep going until this many seconds of timed rounds have passed.
    max_repeats : int
        Stop after this many rounds even if ``min_time`` is not reached.
    device : str or torch.device
        Where the functions run; on CUDA each call is bracketed by
        ``torch.cuda.synchronize()``.
    """
    if not fns:
        raise ValueError("time_calls: fns must name at least one function")
    for name, fn in fns.items():
        if not callable(fn):
            raise TypeError(f"time_calls: fns[{name!r}] is not callable")
    if int(warmup) < 0:
        raise ValueError(f"time_calls: warmup must be >= 0, got {warmup}")
    if int(min_repeats) < 1:
        raise ValueError(f"time_calls: min_repeats must be >= 1, got {min_repeats}")
    if int(max_repeats) < int(min_repeats):
        raise ValueError(f"time_calls: max_repeats ({max_repeats}) must be >= min_repeats ({min_repeats})")
    if float(min_time) < 0:
        raise ValueError(f"time_calls: min_time must be >= 0 seconds, got {min_time}")

    sync = synchronizer(device)
    clock = time.perf_counter
    for fn in fns.values():
        for _ in range(int(warmup)):
            fn()
        sync()

    times = {name: [] for name in fns}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = clock()
        rounds = 0
        while True:
            for name, fn in fns.items():
                t0 = clock()
                fn()
                sync()
                times[name].append(clock() - t0)
            rounds += 1
            if rounds >= max_repeats:
                break
            if rounds >= min_repeats and clock() - start >= min_time:
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: Timing.from_times(ts) for name, ts in times.items()}


def time_call(fn, **kwargs):
    """Time one no-argument function: :func:`time_calls` with one entry; returns its :class:`Timing`."""
    return time_calls({"fn": fn}, **kwargs)["fn"]


def match_thread_pools(num_threads=None):
    """Size numba's thread pool to torch's; return the number of threads used.

    With ``num_threads`` given, set torch's intra-op pool to it first. numba's
    pool cannot grow past ``NUMBA_NUM_THREADS`` (fixed when numba starts), so
    the result is clamped to it.
    """
    if num_threads is not None and int(num_threads) < 1:
        raise ValueError(f"match_thread_pools: num_threads must be >= 1, got {num_threads}")
    try:
        import numba  # only for its thread pool: the kernels live in rnnlab.kernels
    except ImportError:  # pragma: no cover - numba is a dependency
        numba = None
    if numba is not None:
        # Start numba's pool first. Starting it (on the first parallel kernel, or in
        # numba.set_num_threads) resets OpenMP's thread count, which torch reads when both
        # use the same libgomp: a torch.set_num_threads made before would silently be undone.
        numba.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(int(num_threads))
    n = torch.get_num_threads()
    if numba is None:  # pragma: no cover
        return n
    n = max(1, min(n, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n)
    return n


def keep_freed_memory():
    """Ask glibc to keep freed large buffers for reuse instead of unmapping them.

    By default glibc serves every allocation above a (dynamic) threshold with
    a fresh ``mmap`` and returns it to the system when freed, so an op that
    allocates a 32 MiB output page-faults on every page of it, every call
    (about 15 ms per call on the 2-core machines here: more than the scan
    itself). The memory floor ``addcmul(..., out=h)`` allocates nothing, so
    without this the comparison measures the kernel plus the operating
    system's page faults. This raises glibc's mmap and trim thresholds (the
    same as ``MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296``
    in the environment), for this process only. Returns True when it took
    effect (glibc only), False elsewhere.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)) and bool(libc.mallopt(M_TRIM_THRESHOLD, (1 << 31) - 1))
    except (OSError, AttributeError):
        return False


def available_memory_bytes():
    """Memory available to new allocations (``MemAvailable`` on Linux), or None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


_ENV_VARS = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "NUMBA_DISABLE_JIT", "NUMBA_ENABLE_CUDASIM",
             "CUDA_VISIBLE_DEVICES", "THP_MEM_ALLOC_ENABLE", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def _transparent_hugepages():
    """The kernel's transparent-huge-page mode (``always``/``madvise``/``never``), or None."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
        return text[text.index("[") + 1:text.index("]")]
    except (OSError, ValueError):
        return None


def cpu_pressure():
    """Share of the last 10 s (percent) in which some runnable task waited for a CPU, or None.

    Linux's pressure-stall information (``/proc/pressure/cpu``): well above
    zero means other processes competed for the CPUs while the benchmark ran.
    """
    try:
        with open("/proc/pressure/cpu") as f:
            for line in f:
                if line.startswith("some"):
                    return float(line.split("avg10=")[1].split()[0])
    except (OSError, IndexError, ValueError):
        pass
    return None


def _cpu_busy_seconds():
    """CPU-seconds spent busy by all CPUs since boot (``/proc/stat``; steal counted as busy), or None."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    except (OSError, ValueError):
        return None
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds():
    """CPU time of this process and of its finished children (a benchmark may time in child processes)."""
    import resource
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                   resource.getrusage(resource.RUSAGE_CHILDREN)))


class CpuMonitor:
    """How much CPU other processes used while a benchmark ran (Linux).

    ::

        with CpuMonitor() as mon:
            ...
        mon.result  # {"wall_s", "own_cpu_s", "others_cpu_s", "others_share"}

    ``others_share`` is the other processes' CPU time (including time the
    hypervisor gave to other machines, "steal") over the CPU time the usable
    CPUs offered: 0 on a quiet machine, 0.5 when others used half of it.
    """

    def __enter__(self):
        self._busy0 = _cpu_busy_seconds()
        self._own0 = _own_cpu_seconds()
        self._t0 = time.perf_counter()
        self.result = None
        return self

    def __exit__(self, *exc):
        wall = time.perf_counter() - self._t0
        busy1 = _cpu_busy_seconds()
        own = _own_cpu_seconds() - self._own0
        result = {"wall_s": wall, "own_cpu_s": own, "others_cpu_s": None, "others_share": None}
        if busy1 is not None and self._busy0 is not None and wall > 0:
            others = max(0.0, (busy1 - self._busy0) - own)
            result["others_cpu_s"] = others
            result["others_share"] = others / (wall * (os.cpu_count() or 1))
        self.result = result
        return False


def busy_warning(info):
    """Why the CPUs looked shared in :func:`machine_info`'s ``info`` (a short phrase), or None."""
    cpus = info.get("cpu_usable") or info.get("cpu_count") or 1
    load = info.get("load_average_1_5_15min")
    pressure = info.get("cpu_pressure_some_avg10")
    busy = []
    if load is not None and load[0] >= max(1.0, 0.5 * cpus):
        busy.append(f"1-min load average {load[0]:.2f} on {cpus} CPUs")
    if pressure is not None and pressure >= 10:
        busy.append(f"tasks waited for a CPU {pressure:.0f}% of the last 10 s")
    return ", ".join(busy) or None


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info():
    """What a benchmark result depends on: CPU, threads, load, versions, device (JSON-ready)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    try:
        load = list(os.getloadavg())
    except (AttributeError, OSError):
        load = None
    numba_threads = numba_layer = None
    try:
        import numba
        numba_threads = numba.get_num_threads()
        try:
            numba_layer = numba.threading_layer()
        except ValueError:  # no parallel kernel has run yet
            pass
    except ImportError:  # pragma: no cover
        pass
    info = {
        "time": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "load_average_1_5_15min": load,
        "cpu_pressure_some_avg10": cpu_pressure(),
        "memory_available_bytes": available_memory_bytes(),
        "transparent_hugepages": _transparent_hugepages(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "numba": _version("numba"),
        "numba_threads": numba_threads,
        "numba_threading_layer": numba_layer,
        "environment": {k: os.environ[k] for k in _ENV_VARS if k in os.environ},
        "numba_cuda": _version("numba-cuda"),
        "numpy": _version("numpy"),
        "rnnlab": _version("rnnlab"),
        "cuda_available": torch.cuda.is_available(),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch_cuda": torch.version.cuda,
    }
    return info
