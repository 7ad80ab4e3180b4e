"""Tasks: data for the book's experiments (copying memory, transduction, sequential images, control)."""
from .copy_memory import copy_memory, copy_memory_baseline, copy_memory_loss, recall_accuracy  # noqa: F401
