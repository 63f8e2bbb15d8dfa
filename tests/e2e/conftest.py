"""The local stack (devstack.stack) for every HTTP test of a run: the local DynamoDB
behind its fault layer and every function with several instances each."""
import os

import pytest

from devstack.stack import Stack

INSTANCES = 8
# Short, so that the revocation test can outlast it.
CACHE_TTL_SECS = 2


@pytest.fixture(scope="session")
def stack():
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "call-ingest-e2e-stack.log"), "w")
    # A retention day of 2 s: the retention test's calls expire within seconds (only the
    # local stack may shorten it; template.rs asserts AWS never does).
    # Events' retries a hundred times sooner than Svix's schedule (5 s becomes 1 s, 5 min
    # 3 s): the tests see the third attempt within seconds. A receiver's Retry-After is
    # never shortened.
    env = {"DIRECTORY_CACHE_TTL_SECS": str(CACHE_TTL_SECS), "RETENTION_DAY_SECONDS": "2",
           "EVENTS_RETRY_SCALE": "0.01"}
    with Stack(instances=INSTANCES, log=log, env=env) as s:
        yield s


def pytest_configure(config):
    config.addinivalue_line("markers", "iam_denials: the test makes a function do what its IAM statements refuse")


@pytest.fixture(autouse=True)
def no_faults_left(stack, request):
    """Each test sets the faults it needs; none outlive it. And no function was refused
    anything by IAM (a refusal that the code swallows looks like success): the local stack
    holds each function to its statements in template.yaml (devstack.iam)."""
    stack.faults.reset_stats()
    yield
    stack.faults.clear()
    denied = stack.faults.stats().get("denied", {})
    if denied and request.node.get_closest_marker("iam_denials") is None:
        pytest.fail(f"IAM refused a function's request: {denied}")
