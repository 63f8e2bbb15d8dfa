"""API Gateway's route throttles: the local gateway's token buckets (devstack.throttles), and
template.yaml's sizing of them from reserved concurrency."""
from devstack import gateway
from devstack.throttles import Throttles

TEMPLATE = gateway.TEMPLATE_DOC


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_route_lets_its_burst_through_then_its_rate():
    clock = Clock()
    t = Throttles(TEMPLATE, clock)
    burst, rate = t.limits("POST /v1/calls")
    assert sum(t.admit("POST /v1/calls") for _ in range(int(burst) + 5)) == burst
    assert not t.admit("POST /v1/calls")
    # Each route has its own bucket.
    assert t.admit("POST /api/v1/public/call")
    # Refilled at its rate, up to the burst.
    clock.now += 0.1
    assert sum(t.admit("POST /v1/calls") for _ in range(int(burst))) == round(rate * 0.1)
    clock.now += 60
    assert sum(t.admit("POST /v1/calls") for _ in range(int(burst) + 5)) == burst


def parameter(value):
    return int(TEMPLATE["Parameters"][value["Ref"]]["Default"]) if isinstance(value, dict) else int(value)


# Concurrency an AWS account always keeps unreserved: the functions that reserve none share it.
UNRESERVED = 100


def test_what_api_gateway_lets_through_lambda_can_run():
    """A route's burst is at most its function's reserved concurrency (a request Lambda
    throttles is a 500 to the client), its rate what that concurrency serves at 250 ms a
    call, and a burst of 100 calls fits each sending route. The routes of functions that
    reserve nothing share the account's 100 unreserved the same way, together."""
    t = Throttles(TEMPLATE)
    shared_burst = shared_rate = 0
    for method, path, binary in gateway.ROUTES:
        function = next(r["Properties"] for r in TEMPLATE["Resources"].values()
                        if r.get("Metadata", {}).get("BuildProperties", {}).get("Binary") == binary)
        burst, rate = t.limits(f"{method} {path}")
        if "ReservedConcurrentExecutions" not in function:
            assert method != "POST", (method, path, "a sending route reserves its concurrency")
            shared_burst, shared_rate = shared_burst + burst, shared_rate + rate
            continue
        reserved = parameter(function["ReservedConcurrentExecutions"])
        assert burst <= reserved, (method, path, burst, reserved)
        assert rate <= reserved / 0.25, (method, path, rate, reserved)
        # The sending routes (their functions reserve the senders' concurrency; the event
        # endpoints' POSTs are a reader's).
        if method == "POST" and function["ReservedConcurrentExecutions"] == {"Ref": "ReservedConcurrency"}:
            assert burst >= 100, (method, path, burst)
    assert shared_burst <= UNRESERVED and shared_rate <= UNRESERVED / 0.25, (shared_burst, shared_rate)
    # Fixed, not from the readers' parameters: a larger ReaderReservedConcurrency must not
    # take the unreserved routes past the account's 100.
    assert all(f"{m} {p}" in t.routes for m, p, b in gateway.ROUTES if b in ("get-me", "call-viewer"))
    # A first page load of the viewer (13 files) passes its route's burst.
    assert t.limits("GET /app/{proxy+}")[0] >= 13
