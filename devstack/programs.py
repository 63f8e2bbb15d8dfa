"""The one-off programs of `scripts/` (chaos.py, check_workflows.py, check_imports.py),
loaded as modules so that their tests can call them: they are programs, not a package."""
import importlib.util
import os

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")


def load(name):
    """`scripts/<name>.py` as a module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(SCRIPTS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
