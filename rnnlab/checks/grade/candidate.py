"""The candidate's own process: runs one exercise's exported function on the judge's cases.

Started by :mod:`rnnlab.checks.grade.judge`, one process per exercise and
notebook, as ``python -c BOOT this_file JOB_DIR`` (:func:`rnnlab.checks.grade.sandbox.script`),
in an empty folder, with the
network off (its own network namespace where ``unshare`` works, and
:data:`GUARD`), a memory limit and a wall-clock limit that the judge enforces
by killing the whole process group. It loads the candidate (cloudpickled by the
student's kernel) and the cases (pickled by the judge), calls the candidate
once per case and writes one JSON line per case to ``JOB_DIR/results.jsonl``:
the returned value as plain data (numbers, strings, arrays and tensors as
base64 bytes with their dtype and shape, tuples, lists, dicts), or what it
raised. Nothing here decides anything: the judge compares the values with the
references it computed itself, before any student code ran. Whatever the
candidate does in this process (patch modules, walk stack frames, print,
write files, forge lines of the results file, exit) can at worst change the
values the judge sees, which is no more than the candidate returning them.

Standard library only at the top: loaded by path, it never imports rnnlab
(nor torch, unless the cases or the candidate need it).
"""
import base64
import json
import os
import sys
import traceback

# Set for the kernel and for this process: no package index, no proxies that work.
PROXY = "http://127.0.0.1:9"            # the discard port: nothing answers there
OFFLINE_ENV = {"PIP_NO_INDEX": "1", "UV_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               **{name: PROXY for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                                           "ALL_PROXY")}, "no_proxy": "localhost,127.0.0.1",
               "NO_PROXY": "localhost,127.0.0.1", "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}

# Run before the student's first cell and before a candidate is loaded: refuses
# connections, datagrams and name look-ups for anything but loopback (a guard
# against accidents, not a sandbox; the network namespace is the wall).
GUARD = """\
def _rnnlab_grade_offline():
    import errno, ipaddress, socket
    def remote(address):
        host = address[0] if isinstance(address, tuple) else address
        host = (host.decode() if isinstance(host, bytes) else str(host)).split("%")[0]
        try:
            return not (host in ("", "localhost") or ipaddress.ip_address(host).is_loopback)
        except ValueError:
            return True
    def refuse(address):
        if isinstance(address, tuple) and remote(address):
            raise ConnectionRefusedError(errno.ECONNREFUSED, f"network access is disabled while grading ({address[0]})")
    def no_lookup(host):
        if host is not None and remote(host):
            raise socket.gaierror(socket.EAI_NONAME, "name look-ups are disabled while grading")
    S, getaddrinfo = socket.socket, socket.getaddrinfo
    connect, connect_ex, sendto = S.connect, S.connect_ex, S.sendto
    S.connect = lambda self, address: refuse(address) or connect(self, address)
    S.connect_ex = lambda self, address: (errno.ECONNREFUSED if isinstance(address, tuple) and remote(address)
                                          else connect_ex(self, address))
    S.sendto = lambda self, data, *args: refuse(args[-1]) or sendto(self, data, *args)
    socket.getaddrinfo = lambda host, *args, **kwargs: no_lookup(host) or getaddrinfo(host, *args, **kwargs)
_rnnlab_grade_offline()
del _rnnlab_grade_offline"""

KINDS = "biufc"                          # the array dtypes that come back: bool, int, uint, float, complex
MAX_DEPTH, MAX_ITEMS, MAX_TEXT = 8, 10_000, 10_000


class Unsupported(Exception):
    """A returned value that is not plain data (the judge says so in the verdict)."""


class TooLarge(Exception):
    """A returned value far larger than the expected one: not encoded at all."""


def encode(x, depth=0):
    """``x`` as JSON-ready plain data; raises :class:`Unsupported` for anything else."""
    if depth > MAX_DEPTH:
        raise Unsupported("a value nested too deeply")
    if x is None or type(x) in (bool, int):
        return x
    if type(x) is float:
        return x if x == x and abs(x) != float("inf") else {"float": repr(x)}
    if type(x) is complex:
        return {"complex": [repr(x.real), repr(x.imag)]}
    if type(x) is str:
        return {"str": x[:MAX_TEXT]}
    if type(x) in (tuple, list):
        if len(x) > MAX_ITEMS:
            raise Unsupported(f"a {type(x).__name__} of {len(x)} items")
        return {type(x).__name__: [encode(v, depth + 1) for v in x]}
    if type(x) is dict:
        if len(x) > MAX_ITEMS:
            raise Unsupported(f"a dict of {len(x)} items")
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]}
    numpy = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach().cpu().resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return {"tensor": _array(t.contiguous().numpy()), "dtype": str(t.dtype).replace("torch.", "")}
    if numpy is not None and isinstance(x, numpy.ndarray):
        return {"ndarray": _array(x)}
    if numpy is not None and isinstance(x, numpy.generic):
        return {"scalar": _array(numpy.asarray(x))}
    raise Unsupported(article(type(x).__name__))


def article(name):
    """``name`` after its indefinite article: ``"an int"``, ``"a generator"`` (the grader's one copy)."""
    name = str(name)
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


MAX_BYTES = [1 << 30]                    # of one returned value's arrays, set by main() from the judge's cap


def _array(a):
    if a.dtype.kind not in KINDS or a.dtype.hasobject:
        raise Unsupported(f"an array of {a.dtype}")
    MAX_BYTES[0] -= a.nbytes
    if MAX_BYTES[0] < 0:
        raise TooLarge()
    import numpy
    a = numpy.ascontiguousarray(a)
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode("ascii")}


def error_line(exc):
    """``TypeError: ... (line 3 of your code)`` without the traceback (as rnnlab.checks says it)."""
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        if last.filename != __file__ and "rnnlab" not in last.filename.replace("\\", "/").split("/"):
            where = f" (line {last.lineno} of your code)"
    text = str(exc)
    return f"{type(exc).__name__}: {text[:300]}{'...' if len(text) > 300 else ''}{where}"


def limit_memory(megabytes):
    import resource
    if megabytes > 0:
        size = int(megabytes) << 20
        try:
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
        except (ValueError, OSError):
            pass
    for name, value in (("RLIMIT_CORE", 0), ("RLIMIT_FSIZE", 64 << 20)):
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
        except (ValueError, OSError, AttributeError):
            pass


def _message(stream):
    """One message of the judge: 8 bytes of length, then that many bytes (None at the end)."""
    head = stream.read(8)
    if len(head) < 8:
        return None
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    return data if len(data) == size else None


def block(names):
    """Make each named function (``"module:attribute"``) raise in this process, wherever
    ``rnnlab`` holds it: the functions that compute an exercise's answer are not the
    candidate's to call. Returns how many places were blocked."""
    import importlib

    originals = []
    for name in names:
        module_name, _, attribute = name.partition(":")
        try:
            module = importlib.import_module(module_name)
            owner, leaf = module, attribute
            *path, leaf = attribute.split(".")
            for part in path:
                owner = getattr(owner, part)
            originals.append((getattr(owner, leaf), name))
        except Exception:  # noqa: BLE001 (a name that no longer exists blocks nothing)
            continue

    def blocked(name):
        def refuse(*args, **kwargs):
            raise PermissionError(f"{name.replace(':', '.')} computes this exercise's answer: it is not "
                                  "available to your function while grading")
        refuse.__name__ = refuse.__qualname__ = name.rpartition(":")[2].rpartition(".")[2]
        return refuse

    count, named = 0, {name.partition(":")[0] for name in names}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name in named or module_name.split(".")[0] == "rnnlab"):
            continue
        holders = [module]
        try:
            holders += [v for v in vars(module).values() if isinstance(v, type)]
        except TypeError:
            continue
        for holder in holders:
            for key, value in list(vars(holder).items()):
                for original, name in originals:
                    if value is original:
                        try:
                            setattr(holder, key, blocked(name))
                            count += 1
                        except (AttributeError, TypeError):
                            pass
    try:
        from rnnlab.checks import core
        for ex in core._REGISTRY.values():
            ex.reference = blocked(f"{ex.reference.__module__}:{getattr(ex.reference, '__qualname__', 'reference')}")
    except Exception:  # noqa: BLE001
        pass
    try:
        import importlib as _importlib
        reload = _importlib.reload

        def guarded_reload(module):
            if getattr(module, "__name__", "").split(".")[0] == "rnnlab":
                raise PermissionError("rnnlab's modules cannot be reloaded while grading")
            return reload(module)
        _importlib.reload = guarded_reload
    except Exception:  # noqa: BLE001
        pass
    return count


def main(job, megabytes="0", blocked="[]", cap=str(1 << 30)):
    """Talk with the judge: the candidate is ``JOB/candidate.pkl``; the cases come one at a
    time on stdin (8 bytes of length, then a pickle), each only after the last one's
    result went back; one JSON line per result on the original stdout (a private
    descriptor: what the candidate prints goes nowhere)."""
    limit_memory(float(megabytes))
    exec(GUARD, {"__name__": "rnnlab_grade_guard"})
    channel = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    out = os.fdopen(channel, "w", encoding="utf-8")
    cases_in = os.fdopen(os.dup(0), "rb")
    os.dup2(null, 0)

    def emit(record):
        out.write(json.dumps(record) + "\n")
        out.flush()

    import pickle
    names = json.loads(blocked)
    if names:
        try:
            block(names)
        except BaseException as exc:  # noqa: BLE001 (the grader's own failure: nothing is graded)
            return emit({"broken": f"the grader could not block the reference ({type(exc).__name__})"})
    try:
        with open(os.path.join(job, "candidate.pkl"), "rb") as f:
            candidate = pickle.load(f)
    except BaseException as exc:  # noqa: BLE001
        return emit({"unloadable": error_line(exc)})
    if not callable(candidate):
        try:
            kind = encode(candidate) and type(candidate).__name__
        except BaseException:  # noqa: BLE001
            kind = type(candidate).__name__
        return emit({"uncallable": kind})
    emit({"ready": True})
    i = 0
    while True:
        data = _message(cases_in)
        if data is None:
            break
        try:
            args, kwargs = pickle.loads(data)
        except BaseException as exc:  # noqa: BLE001
            emit({"case": i, "broken": f"the grader could not load its case ({type(exc).__name__})"})
            break
        del data
        try:
            value = candidate(*args, **kwargs)
        except NotImplementedError:
            emit({"case": i, "not implemented": True})
            i += 1
            continue
        except BaseException as exc:  # noqa: BLE001 (SystemExit and KeyboardInterrupt too: they end a case)
            emit({"case": i, "raised": error_line(exc), "type": type(exc).__name__[:60]})
            i += 1
            continue
        try:
            MAX_BYTES[0] = int(cap) * 3 // 4
            emit({"case": i, "value": encode(value)})
        except TooLarge:
            emit({"case": i, "too large": True})
        except Unsupported as why:
            emit({"case": i, "unsupported": str(why)})
        except BaseException as exc:  # noqa: BLE001 (a value that breaks while being read)
            emit({"case": i, "raised": f"its return value could not be read ({error_line(exc)})",
                  "type": type(exc).__name__[:60]})
        i += 1
    emit({"done": True})
    out.close()
