"""torch.nn.Modules of the papers the book teaches."""
from .lds import LDS, count_parameters, parameter_breakdown  # noqa: F401
from .ldstack import LDStack, LDStackExact  # noqa: F401
from .combo import SparseComboNet, SVDComboNet  # noqa: F401
from .memory_lstm import DeepLSTM, MemoryLSTM, table2_parameter_counts  # noqa: F401
from .cells import (CELLS, CfC, GRU, LSTM, RNN, LowRankSparseCell, init_recurrent, parameter_count,  # noqa: F401
                    recurrent_matrix, table10_parameter_counts, unmasked_parameter_count)
from .policy import PAPER_NET, ImitationNet  # noqa: F401
