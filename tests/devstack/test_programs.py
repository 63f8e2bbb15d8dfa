"""Each program of the local stack runs as `python -m devstack.<module>` (make run, the
tests and the Rust test support start them so)."""
import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["devstack.dynamodb", "devstack.gateway"])
def test_a_server_runs_as_a_module(module):
    out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: python -m {module} "), out.stdout


def test_dev_setup_runs_as_a_module_and_says_how_to_use_it():
    out = subprocess.run([sys.executable, "-m", "devstack.dev_setup"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "python -m devstack.dev_setup --curl FILE" in out.stderr
