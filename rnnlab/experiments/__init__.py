"""Experiment configurations behind ``python -m rnnlab train <task>``: one module per task.

:data:`TRAIN_TASKS` is the registry of those tasks, read by the command line
(``rnnlab.__main__``) and by the sweeps (``rnnlab.sweep.grid``). Importing this
package imports no experiment: each task's module is imported when it is used.
"""

TRAIN_TASKS = {
    "copy-memory": ("rnnlab.experiments.copy_memory",
                    "copying memory: remember 10 symbols over T steps (Kaul 2020, Arjovsky et al. 2016)"),
    "transduction": ("rnnlab.experiments.transduction",
                     "transduction (copy, reversal, bigram flip, ITGs) with neural stacks, queues, deques "
                     "and Deep LSTMs (Grefenstette et al. 2015)"),
    "combo-net": ("rnnlab.experiments.combo_net",
                  "Sparse and SVD Combo Nets (stable RNNs of RNNs) on sequential and permuted sequential images "
                  "(Kozachkov et al. 2022)"),
    "control-imitation": ("rnnlab.experiments.imitation",
                          "closed-loop imitation with low-rank and sparse RNN/LSTM/GRU/CfC policies on Pendulum "
                          "(velocity hidden) and HalfCheetah, in distribution and under input shifts "
                          "(Tumma et al. 2024, A.9-A.11)"),
}
