"""The stack runner (devstack.stack) waits for every function of functions/, through one
route of each that template.yaml declares."""
from devstack import stack


def test_the_stack_waits_for_every_function():
    assert sorted(stack.one_route_each()) == stack.FUNCTIONS


def test_each_wait_is_a_request_a_route_serves():
    for method, path in stack.one_route_each().values():
        assert method in {"GET", "POST", "DELETE"}, method
        assert path.startswith("/") and "{" not in path, path
