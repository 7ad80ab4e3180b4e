"""rnnlab.bench.roofline: the counting model of one step (exact integers), the roofline's time, and the
measurement and command line at tiny sizes (no timing is asserted: performance is a benchmark)."""
import pytest

from rnnlab import bench
from rnnlab.bench import roofline


def test_registered_as_a_benchmark():
    assert bench.BENCHMARKS["roofline"] == "rnnlab.bench.roofline"


def test_step_counts_of_the_page():
    # B = 16, H = 128: the LDS scans 64 complex channels, the LSTM multiplies (16 x 128).(128 x 512)
    assert roofline.step_cost("lds", 16, 128) == (8 * 16 * 64, 16 * 16 * 64 + 8 * 64)
    assert roofline.step_cost("lstm", 16, 128) == (2 * 16 * 128 * 512, 4 * (128 * 512 + 16 * 128 + 16 * 512))
    assert roofline.step_cost("ldstack", 16, 128, 1) == roofline.step_cost("lds", 16, 128)
    flops, nbytes = roofline.step_cost("ldstack", 2, 8, 3)
    assert (flops, nbytes) == (8 * 2 * 4 + 17 * 2 * 2 * 4, 8 * 2 * 4 * 4 + 12 * 4)
    assert roofline.intensity("lstm", 16, 128) == pytest.approx(2097152 / 303104)


def test_roofline_time_is_the_larger_roof():
    assert roofline.roofline_time(100, 10, peak=10.0, bandwidth=1.0) == 10.0
    assert roofline.roofline_time(100, 10, peak=1.0, bandwidth=10.0) == 100.0
    assert roofline.ridge_point(40e9, 4e9) == 10.0


@pytest.mark.parametrize("args, word", [(("rnn", 1, 8), "model"), (("lds", 0, 8), "B"),
                                        (("lds", 1, 7), "even"), (("lds", 1, 8, 2), "depth 1")])
def test_bad_arguments_name_what_is_wrong(args, word):
    with pytest.raises(ValueError, match=word):
        roofline.step_cost(*args)


def test_measure_and_the_command_line_at_tiny_sizes(capsys):
    from rnnlab.bench.__main__ import main

    m = roofline.measure(threads=1, n=4096, matrix=16, min_time=0.0)
    assert m["bandwidth"] > 0 and m["peak"] > 0 and m["ridge"] == m["peak"] / m["bandwidth"]
    assert main(["roofline", "--no-json", "--threads", "1", "--n", "4096", "--matrix", "16",
                 "--min-time", "0"]) == 0
    out = capsys.readouterr().out
    assert "GB/s" in out and "GFLOP/s" in out and "lstm_B16_H128 6.92" in out
