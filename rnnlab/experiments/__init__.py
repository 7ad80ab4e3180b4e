"""Experiment configurations behind ``python -m rnnlab train <task>``: one module per task."""
