"""Builds libsmla with CMake from the repository this package sits in (python/ -> ..) and
bundles it as smla/libsmla.so, so the installed package needs no other library.

Environment:
  SMLA_LIBRARY     bundle this prebuilt libsmla.so instead of building one;
  SMLA_CMAKE_ARGS  extra CMake arguments (e.g. -DSMLA_CUDA=OFF; CUDA is built when nvcc
                   is found, as in the repository's own build).
"""
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

REPOSITORY = Path(__file__).resolve().parent.parent
LIBRARY = "libsmla.so"


def project_version():
    """The version in CMakeLists.txt's project() (also smla_version() and --version)."""
    text = (REPOSITORY / "CMakeLists.txt").read_text()
    return re.search(r"project\(smla VERSION ([0-9.]+)", text).group(1)


def build_library(build_dir):
    """Configures and builds the smla target; returns the path of libsmla.so."""
    if not (REPOSITORY / "CMakeLists.txt").is_file() or \
            not (REPOSITORY / "include" / "smla.h").is_file():
        raise RuntimeError(f"smla: no repository at {REPOSITORY} to build libsmla from; "
                           "set SMLA_LIBRARY=/path/to/libsmla.so to bundle a built one")
    configure = ["cmake", "-S", str(REPOSITORY), "-B", str(build_dir),
                 "-DCMAKE_BUILD_TYPE=Release"] + shlex.split(os.environ.get("SMLA_CMAKE_ARGS", ""))
    subprocess.check_call(configure)
    subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "smla",
                           "-j", str(os.cpu_count() or 1)])
    return build_dir / LIBRARY


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        prebuilt = os.environ.get("SMLA_LIBRARY")
        library = Path(prebuilt) if prebuilt else \
            build_library(Path(self.get_finalized_command("build").build_temp) / "cmake")
        target = Path(self.build_lib) / "smla" / LIBRARY
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(library, target)


class BinaryDistribution(Distribution):
    """The wheel holds a native library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(version=project_version(), cmdclass={"build_py": BuildPyWithLibrary},
      distclass=BinaryDistribution)
