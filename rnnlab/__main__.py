"""Command line: ``python -m rnnlab <command> ...`` (also installed as ``rnnlab``).

Commands:

    train <task> [options]    train a model on a task, with a progress bar,
                              resumable checkpoints and a metrics file
        copy-memory           the copying-memory experiment (Kaul 2020's LDS)
        transduction          stack/queue/deque LSTMs and Deep LSTMs on transduction tasks
                              (Grefenstette et al. 2015)
        combo-net             Sparse and SVD Combo Nets (RNNs of RNNs) on sequential images
                              (Kozachkov et al. 2022)
        control-imitation     low-rank and sparse RNN/LSTM/GRU/CfC policies imitating an expert
                              in closed loop (Tumma et al. 2024)
    sweep [task] --out DIR --grid NAME=V1,V2 --set NAME=V ...
                              a grid of `train <task>` runs on Ray Tune (local, or a
                              cluster with --address), resumable, results as JSON/CSV
                              (rnnlab.sweep; needs pip install 'ray[tune]')
    control train-expert|record|evaluate
                              the closed-loop experts: PPO on HalfCheetah (resumable,
                              exported weights-only), expert rollouts, evaluations
                              (rnnlab.control; needs pip install 'rnnlab[control]')
    grade SUBMISSIONS/        grade a folder of submitted notebooks into a CSV
                              and one feedback file per student, verdicts decided
                              away from student code, hidden cases, points
                              (rnnlab.checks.grade)

    bench, book, figures, course-plan, course-exercises, course-quiz, course-slides, autograder, gradebook,
    lowrank-laws, combo-summary,
    transduction-grid, transduction-paper, control-tables
                              the maintenance and results commands of :data:`TOOLS`:
                              ``python -m rnnlab bench scan`` is ``python -m rnnlab.bench scan``
                              (the module entry points keep working)

``python -m rnnlab train copy-memory --help`` lists a task's options. Tasks
live in :data:`rnnlab.experiments.TRAIN_TASKS` (read by ``train`` and by
``sweep``): each maps a name to a module with ``add_arguments(parser)`` and
``main(args)``; adding a task is one entry. :data:`TOOLS` is the registry of the
other commands: each maps a name to a module whose ``main(argv)`` parses the rest
of the command line; adding one is one entry, and ``python -m rnnlab --help``
lists it.
"""
import argparse
import importlib
import sys

from .experiments import TRAIN_TASKS

# name -> (module with main(argv), one line of help). Each runs as ``python -m rnnlab NAME ARGS...``,
# the same as ``python -m MODULE ARGS...``.
TOOLS = {
    "bench": ("rnnlab.bench.__main__", "benchmarks, as ratios against a baseline in the same run (scan, lds, ...)"),
    "book": ("rnnlab.book.__main__", "the book's notebooks: sync-setup, check, execute, editions, student, lint, words"),
    "figures": ("rnnlab.figures.__main__", "draw the book's schematics (SVG and PNG), or --check them"),
    "course-plan": ("rnnlab.course.plan", "rewrite the term plans of book/teaching.md from the pages"),
    "course-exercises": ("rnnlab.checks.grade.kit", "rewrite the exercise tables of book/teaching.md"),
    "course-quiz": ("rnnlab.course.quiz", "a seeded quiz and its answer key from the question bank"),
    "course-slides": ("rnnlab.course.slides", "one lecture deck per chapter (HTML, MathJax) written from its pages"),
    "autograder": ("rnnlab.course.gradescope", "a Gradescope autograder (zip) that grades with python -m rnnlab grade"),
    "gradebook": ("rnnlab.course.gradebook", "the grades CSV as a Canvas or Moodle gradebook import"),
    "lowrank-laws": ("rnnlab.experiments.lowrank_laws", "measure the low-rank laws at initialisation, for the book"),
    "combo-summary": ("rnnlab.experiments.combo_summary", "collect finished combo-net runs into the JSON the book plots"),
    "transduction-grid": ("rnnlab.experiments.transduction_grid", "a grid of teaching-scale transduction runs"),
    "transduction-paper": ("rnnlab.experiments.transduction_paper",
                           "collect paper-scale transduction runs into the JSON the book plots"),
    "control-tables": ("rnnlab.control.analysis", "tables of a finished imitation grid"),
}

def build_parser():
    parser = argparse.ArgumentParser(prog="python -m rnnlab",
                                     description="rnnlab: recurrent networks as dynamical systems")
    commands = parser.add_subparsers(dest="command", metavar="command")
    commands.required = True
    train = commands.add_parser("train", help="train a model on a task (resumable)",
                                description="Train a model on a task, with checkpoints and a metrics file.")
    tasks = train.add_subparsers(dest="task", metavar="task")
    tasks.required = True
    for name, (module, help_text) in TRAIN_TASKS.items():
        sub = tasks.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(sub)
        sub.set_defaults(_module=module)
    from .sweep import runner as sweeping   # Ray is imported only when a sweep runs
    sweep = commands.add_parser("sweep", help="a grid of training runs on Ray Tune (resumable)",
                                description=sweeping.DESCRIPTION,
                                epilog=sweeping.EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sweeping.add_arguments(sweep)
    from .control import cli as controlling   # gymnasium is imported only when a command runs
    control = commands.add_parser("control", help="closed-loop control: train the expert, record rollouts",
                                  description=controlling.DESCRIPTION,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    controlling.add_arguments(control)
    from .checks import grade as grading   # NumPy and the standard library: cheap to import
    grade = commands.add_parser("grade", help="grade a folder of submitted notebooks",
                                description=grading.DESCRIPTION, epilog=grading.LAYOUT_HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    grading.add_arguments(grade)
    for name, (module, help_text) in TOOLS.items():   # parsed by the module itself (see main)
        commands.add_parser(name, help=help_text, add_help=False,
                            description=f"{help_text}; python -m rnnlab {name} --help for its options")
    return parser


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in TOOLS:
        return importlib.import_module(TOOLS[argv[0]][0]).main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            return importlib.import_module(args._module).main(args)
        if args.command == "sweep":
            from .sweep import runner
            return runner.main(args, argv)
        if args.command == "control":
            from .control import cli
            return cli.main(args)
        if args.command == "grade":
            from .checks import grade
            return grade.main(args)
    except KeyboardInterrupt:       # the one place: every command stops cleanly on Ctrl-C
        print("stopped; run the same command again to " + ("grade again" if args.command == "grade" else "resume"),
              file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
