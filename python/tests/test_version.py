"""One version everywhere: CMakeLists.txt's project version is smla.__version__ (read from
libsmla's smla_version()) and the Python package's (python/setup.py reads it)."""
import re
import subprocess
import sys

import smla
from conftest import REPO


def cmake_version():
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"project\(smla VERSION ([0-9.]+)", text).group(1)


def test_version_is_cmakes():
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", smla.__version__)
    assert smla.__version__ == cmake_version()


def test_package_version_is_cmakes():
    printed = subprocess.run([sys.executable, "setup.py", "--version"], cwd=REPO / "python",
                             capture_output=True, text=True, check=True).stdout
    assert printed.strip().splitlines()[-1] == cmake_version()
