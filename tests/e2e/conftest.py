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
    with Stack(instances=INSTANCES, log=log, env={"DIRECTORY_CACHE_TTL_SECS": str(CACHE_TTL_SECS)}) as s:
        yield s


@pytest.fixture(autouse=True)
def no_faults_left(stack):
    """Each test sets the faults it needs; none outlive it."""
    yield
    stack.faults.clear()
