"""The stack runner (devstack.stack) waits for every routed function of functions/, through
one route of each that template.yaml declares; the others run on a schedule, or are fed by
a queue or a table's stream."""
from devstack import gateway, stack
from devstack.queues import Queues
from devstack.streams import Streams


def test_the_stack_waits_for_every_routed_function_and_the_rest_run_on_events():
    # A function may be both (erase-call: routed, and the retention sweep on a schedule).
    fed = {c[0] for c in Queues(gateway.TEMPLATE_DOC).consumers()}
    fed |= {s[0] for s in Streams(gateway.TEMPLATE_DOC).sources()}
    assert sorted({*stack.one_route_each(), *gateway.SCHEDULED, *fed}) == stack.FUNCTIONS


def test_each_wait_is_a_request_a_route_serves():
    for method, path in stack.one_route_each().values():
        assert method in {"GET", "POST", "DELETE"}, method
        assert path.startswith("/") and "{" not in path, path
