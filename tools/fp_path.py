"""Say which floating-point path this process takes, and fail when `make test-fp`'s
alternative path did not take effect (an environment variable a library ignores
would make `make test-fp` a second run of the default path, a test that cannot fail).

    python tools/fp_path.py            # reports; exit 1 when the variables of
                                       # `make test-fp` are set but not honoured

It reports torch's CPU capability (its vectorised kernels), the BLAS libraries
loaded and the kernel OpenBLAS picked (threadpoolctl), MKL's instruction limit,
the CPU numba compiles for, and the thread counts.
"""
from __future__ import annotations

import os
import sys


def describe():
    """``{what: value}`` of the floating-point path of this process."""
    import numba
    import numpy  # noqa: F401  (loads its OpenBLAS)
    import torch
    from threadpoolctl import threadpool_info

    blas = [f"{i.get('internal_api')} {i.get('version') or ''} kernel {i.get('architecture') or '?'}, "
            f"{i.get('num_threads')} thread(s) ({os.path.basename(i.get('filepath', ''))})"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    from numba.core import config

    return {
        "torch CPU capability": torch.backends.cpu.get_cpu_capability(),
        "torch threads": torch.get_num_threads(),
        "BLAS": blas,
        "MKL_ENABLE_INSTRUCTIONS": os.environ.get("MKL_ENABLE_INSTRUCTIONS", "(unset: the CPU's best)"),
        "numba target CPU": config.CPU_NAME or "host",
        "numba threads": numba.config.NUMBA_NUM_THREADS,
        "numba cache": os.environ.get("NUMBA_CACHE_DIR", "(rnnlab's default)"),
    }


def _openblas_kernels(without=None):
    """The kernels numpy's OpenBLAS picks, in a fresh process (with ``without`` unset)."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != without}
    code = ("import numpy; from threadpoolctl import threadpool_info; "
            "print(' '.join(sorted(str(i.get('architecture')) for i in threadpool_info() "
            "if i.get('internal_api') == 'openblas')))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    return out.stdout.split()


def problems(info, env=os.environ):
    """What the environment asked for but this process does not do."""
    out = []
    if env.get("ATEN_CPU_CAPABILITY") and info["torch CPU capability"].lower() != env["ATEN_CPU_CAPABILITY"].lower():
        out.append(f"ATEN_CPU_CAPABILITY={env['ATEN_CPU_CAPABILITY']} is set, but torch runs "
                   f"{info['torch CPU capability']}")
    if env.get("NUMBA_CPU_NAME") and info["numba target CPU"] != env["NUMBA_CPU_NAME"]:
        out.append(f"NUMBA_CPU_NAME={env['NUMBA_CPU_NAME']} is set, but numba compiles for "
                   f"{info['numba target CPU']}")
    if env.get("OPENBLAS_CORETYPE"):
        chosen, default = _openblas_kernels(), _openblas_kernels(without="OPENBLAS_CORETYPE")
        if chosen and chosen == default:
            out.append(f"OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']} is set, but OpenBLAS runs the "
                       f"kernel it picks without it ({', '.join(chosen)})")
    if env.get("OMP_NUM_THREADS") and info["torch threads"] != int(env["OMP_NUM_THREADS"]):
        out.append(f"OMP_NUM_THREADS={env['OMP_NUM_THREADS']} is set, but torch uses {info['torch threads']} threads")
    return out


def main():
    info = describe()
    print("floating-point path of this process:")
    for key, value in info.items():
        for i, v in enumerate(value if isinstance(value, list) else [value]):
            print(f"  {key if i == 0 else '':<24} {v}")
    bad = problems(info)
    for p in bad:
        print("not in effect:", p, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
