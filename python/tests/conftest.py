"""Shared test set-up: the random seed (fresh each run, SMLA_TEST_SEED repeats one) and the
repository's independent NumPy oracle (tests/oracle) on the import path."""
import os
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "oracle"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SEED = int(os.environ.get("SMLA_TEST_SEED") or np.random.SeedSequence().entropy % 2**32)


def pytest_report_header(config):
    return f"smla seed {SEED} (set SMLA_TEST_SEED to repeat)"


@pytest.fixture
def rng(request):
    """A generator seeded from the run's seed and the test's name."""
    print(f"smla seed {SEED} (set SMLA_TEST_SEED to repeat)")  # shown when a test fails
    return np.random.default_rng([SEED, zlib.crc32(request.node.nodeid.encode())])
