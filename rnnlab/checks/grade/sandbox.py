"""Where student code runs while grading: a bubblewrap sandbox per kernel and per candidate.

Every submitted notebook, and every exercise function exported from it, is
treated as hostile code. :func:`command` wraps a command in `bubblewrap
<https://github.com/containers/bubblewrap>`_ (``bwrap``, the sandbox Flatpak
uses), which gives it

* its own PID namespace: everything it starts (a ``setsid`` daemon included)
  dies with it, finished or not; the grader signals only the ``bwrap`` process
  it started itself, never a process ID that a student could have written;
* its own user, network (loopback only), IPC and UTS namespaces, no
  capabilities, a new session (no terminal to inject into);
* a file system of its own: the system (``/usr``, ``/etc``), Python, the
  installed packages and ``rnnlab``'s own package folder, all read-only; a
  fresh ``/tmp``; and one writable folder, ``/job``, which holds only this
  job's files (the notebook's copy or the candidate, its HOME, its numba cache: a
  private copy of the cache the grader compiled for this run before any student code ran).
  The grader's files, its command line, the teacher's cases, the submissions
  folder and the book's full edition are not there;
* a minimal environment (:func:`environment`), nothing of the teacher's.

:func:`read_regular` is how the grader reads anything a student process could
have written: regular files only, no symlinks, non-blocking, capped in size.
"""
from __future__ import annotations

import errno
import functools
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

JOB = "/job"                       # the writable folder, inside the sandbox
# How the grader starts its standalone files (worker.py, candidate.py) by path, without importing
# rnnlab (torch's import would count against a student's time): ``python -c BOOT FILE ARGS...``
# loads FILE as the module ``rnnlab_grade_<its stem>`` and calls its ``main(*ARGS)``.
BOOT = ("import importlib.util as u, os, sys; p = sys.argv[1]; "
        "s = u.spec_from_file_location('rnnlab_grade_' + os.path.basename(p)[:-3], p); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); m.main(*sys.argv[2:])")
UNSAFE_GIVES_UP = (
    "--unsafe: no sandbox. Notebooks and candidates run as your own user: they can read your files "
    "(the other submissions, the teacher's cases, the grader's own), write anywhere you can, leave "
    "processes running after grading, and reach the network where unshare does not work. Grade only "
    "submissions you trust this way.")
WHY_NO_SANDBOX = (
    "no sandbox: python -m rnnlab grade runs every notebook in bubblewrap (bwrap), which is not "
    "installed or does not work here (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap; inside a container, user namespaces must be allowed). --unsafe grades without it: "
    "see --help")


class NotRegular(OSError):
    """A student-writable path that is not a plain file (a symlink, a FIFO, a device, a folder)."""


def read_regular(path, cap, *, dir_fd=None):
    """The bytes of ``path`` if it is a regular file of at most ``cap`` bytes (no symlink
    followed, never blocking on a FIFO); :class:`NotRegular` or ``OSError`` otherwise, and
    ``ValueError`` when it is larger than ``cap``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegular(errno.ELOOP, "a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file")
        if info.st_size > cap:
            raise ValueError(f"larger than {cap} bytes")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                raise ValueError(f"larger than {cap} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_dir(path, *, dir_fd=None):
    """A file descriptor of the folder ``path`` (no symlink followed); OSError otherwise."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)


@functools.lru_cache(maxsize=None)
def bwrap():
    """The path of a working ``bwrap``, or None (it is tried once, on ``true``)."""
    path = shutil.which("bwrap")
    if not path:
        return None
    try:
        ok = subprocess.run([path, *_isolation(), *_system(), "true"], capture_output=True,
                            timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return path if ok else None


def available():
    return bwrap() is not None


def _isolation():
    return ["--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000", "--hostname", "grading",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]


ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "host.conf", "hosts", "localtime",
       "alternatives", "fonts", "mime.types", "ssl/certs", "ca-certificates", "ca-certificates.conf",
       "matplotlibrc", "os-release")


def _system():
    """The read-only system: /usr, a few files of /etc (the loader's cache, time zone, fonts;
    no password file, no key), the /lib, /bin... links as the host has them."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ETC:                       # not all of /etc: the sandbox's user may own what root owns there
        if os.path.lexists("/etc/" + name):
            args += ["--ro-bind", "/etc/" + name, "/etc/" + name]
    for top in ("lib", "lib64", "lib32", "bin", "sbin"):
        path = Path("/" + top)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), "/" + top]
        elif path.is_dir():
            args += ["--ro-bind", "/" + top, "/" + top]
    return args + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def python_roots():
    """The folders Python needs, read-only: its installation, the environment's packages,
    ``rnnlab``'s package folder (only it, not the checkout around it) and the folders of
    ``$PYTHONPATH`` (the teacher's ``--import`` modules)."""
    import rnnlab

    roots = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.exec_prefix), Path(sys.base_exec_prefix),
             Path(rnnlab.__file__).resolve().parent}
    roots |= {Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    for entry in sys.path:      # site-packages outside the prefixes (a user site, a --target folder)
        if entry.endswith("-packages") and Path(entry).is_dir():
            roots.add(Path(entry))
    roots = sorted({r.resolve() for r in roots if r.is_dir()} | {r for r in roots if r.is_dir()})
    system = ("/usr", "/lib", "/lib64", "/bin", "/sbin")
    return [r for r in roots if str(r) != "/" and not any(str(r) == s or str(r).startswith(s + "/") for s in system)]


def book_data_roots():
    """The book's committed data folders (``book/<chapter>/data`` of the checkout rnnlab is installed
    from), read-only: the chapters read their committed results with :func:`rnnlab.notebook.book_file`. Only
    those folders: the rest of the checkout (the full edition's solutions among it) stays out of sight."""
    import rnnlab

    book = Path(rnnlab.__file__).resolve().parent.parent / "book"
    return sorted(p for p in book.glob("*/data") if p.is_dir()) if book.is_dir() else []


def environment(extra=None, threads=1):
    """The sandbox's whole environment: no variable of the teacher's (a token, a path) reaches it."""
    from .candidate import OFFLINE_ENV

    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {**OFFLINE_ENV, "PATH": path, "HOME": f"{JOB}/home", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "LC_ALL": "C.UTF-8", "USER": "student", "LOGNAME": "student", "JUPYTER_RUNTIME_DIR": "/tmp/jupyter",
           "MPLCONFIGDIR": f"{JOB}/home/.matplotlib", "NUMBA_CACHE_DIR": f"{JOB}/numba",
           "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": str(threads), "PYTHONNOUSERSITE": "1",
           "RNNLAB_GRADING": "1"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.update(extra or {})
    return env


def command(argv, job, env, cwd=f"{JOB}/work"):
    """``argv`` run in a sandbox whose only writable folder is ``job`` (seen as ``/job``)."""
    args = [bwrap(), *_isolation(), *_system()]
    for root in python_roots() + book_data_roots():
        args += ["--ro-bind", str(root), str(root)]
    args += ["--bind", str(job), JOB, "--chdir", cwd]
    for name, value in env.items():
        args += ["--setenv", name, str(value)]
    return [*args, "--", *argv]


def script(module):
    """The command line that runs the grader's standalone ``module`` (:mod:`.worker` or
    :mod:`.candidate`) by path: ``[python, "-c", BOOT, its file]``; append its arguments."""
    return [sys.executable, "-c", BOOT, module.__file__]


def popen(command, **kwargs):
    """``subprocess.Popen`` of a :func:`command`: bwrap reads its arguments from a pipe
    (``--args FD``), so that the sandbox's PID 1 (bwrap) shows no host path in its
    ``/proc/1/cmdline``; any other command is started as it is."""
    if not command or command[0] != bwrap():
        return subprocess.Popen(command, **kwargs)
    cut = command.index("--")             # the options go through the pipe, the command (inside paths) not
    data = b"".join(os.fsencode(str(arg)) + b"\0" for arg in command[1:cut])
    read, write = os.pipe()
    try:
        if len(data) > 60_000:
            raise ValueError("the sandbox's arguments do not fit a pipe")
        os.write(write, data)
        os.close(write)
        write = None
        return subprocess.Popen([command[0], "--args", str(read), *command[cut:]], pass_fds=(read,), **kwargs)
    finally:
        os.close(read)
        if write is not None:
            os.close(write)


def seed_numba_cache(seed, job):
    """A fresh numba cache for one kernel or candidate (``job/numba``): a private, writable copy
    of ``seed`` (the cache the grader compiled for this run, :func:`.kernel.numba_seed`, which no
    student process can write), never shared with another job and removed with its job folder."""
    target = Path(job) / "numba"
    if seed is not None and Path(seed).is_dir():
        shutil.copytree(seed, target, symlinks=False, ignore_dangling_symlinks=True,
                        ignore=shutil.ignore_patterns(".lock", ".seeded", "*.tmp"))
    target.mkdir(exist_ok=True)
    return target


def children(pid):
    """The process IDs below ``pid``, read from /proc (the kernel's own data, not a student's file)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            found += kids
            todo += kids
    return found


def kill_tree(proc):
    """Kill a process this grader started (``start_new_session``), its group and every process
    below it that /proc still shows; in a sandbox, killing ``bwrap`` ends its whole PID namespace."""
    below = children(proc.pid) if proc.poll() is None else []
    for pid in [proc.pid, *below]:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
