"""One way in: ``python -m rnnlab <command>`` reaches every command, and its help lists them all."""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

import rnnlab.__main__ as cli
from rnnlab.experiments import TRAIN_TASKS


def test_every_tool_is_a_module_with_main_argv():
    for name, (module, help_text) in cli.TOOLS.items():
        main = importlib.import_module(module).main
        assert list(inspect.signature(main).parameters) == ["argv"], name
        assert help_text and len(help_text) < 100, name


def test_help_lists_every_command_and_every_task(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    shown = capsys.readouterr().out
    for name in ["train", "sweep", "control", "grade", *cli.TOOLS]:
        assert f"    {name}" in shown, name
    for task in TRAIN_TASKS:          # the module docstring names every training task
        assert f"        {task} " in cli.__doc__, task
    for name in cli.TOOLS:
        assert name in cli.__doc__, name


def test_a_tool_gets_the_rest_of_the_command_line(monkeypatch):
    seen = {}
    module = importlib.import_module(cli.TOOLS["figures"][0])
    monkeypatch.setattr(module, "main", lambda argv: seen.setdefault("argv", argv) and 7)
    assert cli.main(["figures", "--check", "--root", "x"]) == 7
    assert seen["argv"] == ["--check", "--root", "x"]


def test_book_words_through_the_one_entry_point(capsys):
    page = Path(__file__).resolve().parents[1] / "book" / "scans" / "01_associative_scan.ipynb"
    assert cli.main(["book", "words", str(page)]) == 0
    assert "main line" in capsys.readouterr().out


def test_an_unknown_command_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bencj"])
    assert "invalid choice: 'bencj'" in capsys.readouterr().err
