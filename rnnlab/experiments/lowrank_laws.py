"""The appendix's laws at initialisation (Tumma et al. 2024, A.6, A.7, A.10), measured and saved.

``python -m rnnlab.experiments.lowrank_laws --n 512 --out book/lowrank/data/laws-n512.json``
runs :func:`rnnlab.theory.initialisation_laws` (about 40 s on one core at
n = 512), prints the table and the verdicts, and writes the rows as JSON for
the book, which plots them (:func:`rnnlab.theory.laws.laws_from_json`).
"""
import torch

from ..theory.laws import initialisation_laws, law_verdicts, laws_table, laws_to_json
from ..theory.laws import seed_tuple as _seeds


def main(argv=None):
    """``python -m rnnlab.experiments.lowrank_laws --n 512 --out FILE``: the laws table, printed and saved as JSON."""
    import argparse
    import json
    import platform
    import time

    parser = argparse.ArgumentParser(prog="python -m rnnlab.experiments.lowrank_laws", description=main.__doc__)
    parser.add_argument("--n", type=int, default=512, help="hidden size (default 512, the appendix's figures)")
    parser.add_argument("--seeds", type=int, default=None, help="draws per setting (default: 3 at n >= 256, else 30)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    rows = initialisation_laws(args.n, args.seeds)
    seconds = time.perf_counter() - start
    print(laws_table(rows))
    for (law, quantity), (verdict, count) in law_verdicts(rows).items():
        print(f"{law:8s} {quantity:40s} {verdict:14s} {count}")
    print(f"{len(rows)} rows in {seconds:.0f} s")
    if args.out:
        meta = {"n": args.n, "seeds": list(_seeds(args.seeds, args.n)), "seconds": round(seconds, 1),
                "torch": torch.__version__, "machine": platform.machine(),
                "command": f"python -m rnnlab.experiments.lowrank_laws --n {args.n} --threads {args.threads}"
                           + (f" --seeds {args.seeds}" if args.seeds else "") + f" --out {args.out}"}
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "rows": laws_to_json(rows)}, f, indent=1)
        print("wrote", args.out)


if __name__ == "__main__":
    main()
