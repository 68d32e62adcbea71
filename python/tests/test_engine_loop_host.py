"""The host half of the GPU suite's engine loop (tests/gpu/test_python_engine_loop.py):
its workload, plan rebuilds and reference checks, run on the CPU through a host plan."""
import importlib.util

from conftest import REPO

spec = importlib.util.spec_from_file_location(
    "engine_loop", REPO / "tests" / "gpu" / "test_python_engine_loop.py")
engine_loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(engine_loop)


def test_engine_loop_on_the_host(rng):
    engine_loop.run_engine_loop(engine_loop.HostRunner, steps=3,
                                seed=int(rng.integers(2**32)))


def test_flash_mla_engine_loop_on_the_host(rng):
    engine_loop.run_engine_loop(engine_loop.FlashMlaRunner, steps=3,
                                seed=int(rng.integers(2**32)))
