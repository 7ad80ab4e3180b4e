"""``python -m rnnlab.bench <benchmark> [options]``: print a table and write JSON, in one run.

Examples::

    python -m rnnlab.bench scan                      # the full scan benchmark (about a minute or two)
    python -m rnnlab.bench scan --quick              # small sizes, a few seconds
    python -m rnnlab.bench scan --T 1024 --sizes 16x256 --dtypes float32 --json out.json
    python -m rnnlab.bench scan --help               # every option
    python -m rnnlab.bench cells --threads 1         # recurrent_cell against its reference and torch.nn

The JSON goes to ``bench-results/<benchmark>-<timestamp>.json`` unless
``--json PATH`` or ``--no-json`` says otherwise; it holds the rows, the
configuration, the targets and the machine (CPU, threads, load average,
torch/numba versions, device).
"""
import argparse
import sys

from . import BENCHMARKS, default_json_path, load, positive_int, write_json
from .timing import CpuMonitor, busy_warning, keep_freed_memory, machine_info


def build_parser():
    """The parser, with one subcommand per entry of :data:`rnnlab.bench.BENCHMARKS`."""
    parser = argparse.ArgumentParser(
        prog="python -m rnnlab.bench",
        description="Benchmarks of rnnlab's kernels: a table on stdout and a JSON file, "
                    "every number from one run.")
    sub = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    common = argparse.ArgumentParser(add_help=False)
    out = common.add_mutually_exclusive_group()
    out.add_argument("--json", metavar="PATH",
                     help="where to write the JSON results (default bench-results/<benchmark>-<timestamp>.json)")
    out.add_argument("--no-json", action="store_true", help="print the table only")
    common.add_argument("--threads", type=positive_int, metavar="N",
                        help="torch threads (numba's pool is sized to match; default: torch's default)")
    common.add_argument("--allocator", choices=("reuse", "fresh"), default="reuse",
                        help="reuse: keep freed large buffers for reuse (glibc mallopt, see "
                             "rnnlab.bench.timing.keep_freed_memory), so outputs do not page-fault "
                             "on every call; fresh: the allocator's defaults (default reuse)")
    for name in BENCHMARKS:
        module = load(name)
        p = sub.add_parser(name, parents=[common], help=module.DESCRIPTION,
                           description=module.DESCRIPTION)
        module.add_arguments(p)
        p.set_defaults(_parser=p)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    module = load(args.benchmark)
    allocator = "reuse" if args.allocator == "reuse" and keep_freed_memory() else "fresh"
    before = machine_info()
    busy_before = busy_warning(before)
    if busy_before:
        print(f"warning: the machine is busy ({busy_before}): timings will be noisy", file=sys.stderr, flush=True)
    with CpuMonitor() as monitor:
        rows, config = module.from_args(args, args._parser)
    machine = machine_info()
    machine["before"] = {k: before[k] for k in ("time", "load_average_1_5_15min", "cpu_pressure_some_avg10")}
    machine["during"] = monitor.result
    machine["allocator"] = allocator
    busy = []
    if busy_before:
        busy.append(f"before the run: {busy_before}")
    share = monitor.result["others_share"]
    if share is not None and share >= 0.1:
        busy.append(f"during the run other processes used {100 * share:.0f}% of the CPU time")
    warnings = []
    if busy:
        warnings.append("the machine was busy (" + "; ".join(busy) + "), "
                        "so these timings are noisy; rerun on a quiet machine")
    title = (f"rnnlab.bench {args.benchmark}: {machine['cpu_model']}, {machine['cpu_usable']} CPUs, "
             f"{machine['torch_threads']} torch / {machine['numba_threads']} numba threads, "
             f"load {_load(machine)}, allocator {allocator}")
    table = module.format_table(rows, title=title)
    if warnings:
        table += "\n" + "\n".join(f"WARNING: {w}" for w in warnings)
    print(table)
    if not args.no_json:
        path = write_json(args.json or default_json_path(args.benchmark), args.benchmark, rows,
                          config=config, machine=machine, targets=getattr(module, "TARGETS", ()),
                          extra={"warnings": warnings})
        print(f"\nwrote {path}")
    return 0


def _load(machine):
    load = machine.get("load_average_1_5_15min")
    return "unknown" if load is None else "/".join(f"{x:.2f}" for x in load)


if __name__ == "__main__":
    sys.exit(main())
