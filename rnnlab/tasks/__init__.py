"""Tasks: data for the book's experiments (copying memory, transduction, sequential images, control)."""
from .copy_memory import copy_memory, copy_memory_baseline, copy_memory_loss, recall_accuracy  # noqa: F401
from .images import (  # noqa: F401
    IMAGE_DATASETS,
    ImageSequenceInfo,
    SequentialImages,
    image_permutation,
    permutation_hash,
    sequential_image_splits,
    sequential_images,
)
from .transduction import (  # noqa: F401
    BOS,
    EOS,
    IGNORE_INDEX,
    ITG_TASKS,
    PAD,
    PAPER_TEST_LENGTHS,
    PAPER_TRAIN_LENGTHS,
    SEP,
    SPECIAL,
    SYNTHETIC_TASKS,
    TASKS,
    decode,
    itg_length_probabilities,
    itg_parse,
    joint_sequences,
    joint_vocab,
    transduction,
    transduction_accuracy,
    transduction_vocab,
)
