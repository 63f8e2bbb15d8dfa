"""The local API Gateway (devstack.gateway) on its own, in front of stand-in functions
(fake_function.py: the Lambda Runtime API, no Rust binary): it takes many connections at
once, and answers a request no route serves as API Gateway does, 404
`{"message":"Not Found"}` in JSON, whatever the method."""
import http.client
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

from devstack import gateway
from devstack.queues import Queues

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_function.py")
# Clients connecting at the same moment.
CONNECTIONS = 200
# API Gateway's answer to a request no route serves.
NOT_FOUND = b'{"message":"Not Found"}'


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    """devstack.gateway serving template.yaml's routes and running its scheduled functions,
    each function a fake_function.py."""
    bin_dir = tmp_path_factory.mktemp("bin")
    fed = {c[0] for c in Queues(gateway.TEMPLATE_DOC).consumers()}
    for name in {name for _, _, name in gateway.ROUTES} | set(gateway.SCHEDULED) | fed:
        exe = bin_dir / name
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, FAKE_EVENTS_LOG=str(bin_dir / "scheduled.log"), LOCAL_SCHEDULE_SECONDS="0.2")
    p = subprocess.Popen([sys.executable, "-m", "devstack.gateway", "--port", "0",
                          "--instances", "2", "--bin", str(bin_dir)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline()
        assert line.startswith("READY "), f"devstack.gateway did not start: {line!r}"
        yield int(line.split()[1])
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def call(port, method, path):
    """(status, headers, body) of one request."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


@pytest.mark.parametrize("method, path", [
    ("TRACE", "/"),
    ("GET", "/nope"),
    ("POST", "/nope"),
    ("GET", "/"),
    ("TRACE", "/api/v1/public"),
    ("PROPFIND", "/nope"),
    ("GET", "/api/v1/public/call/abc/other"),
    ("CONNECT", "example.com:443"),
])
def test_a_request_no_route_serves_is_404_json(port, method, path):
    status, headers, body = call(port, method, path)
    assert status == 404, body
    assert headers["content-type"] == "application/json"
    assert body == NOT_FOUND


def raw(port, data):
    """All the bytes devstack.gateway answers to `data`, sent as they are, until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


def test_head_with_no_route_is_404_without_a_body(port):
    """HEAD: the status and headers only, so that the next answer on the connection
    starts where it should."""
    answer = raw(port, b"HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, rest = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 404 ")
    assert rest.startswith(b"HTTP/1.1 404 "), rest[:60]
    assert rest.endswith(b"\r\n\r\n" + NOT_FOUND)


def test_a_malformed_request_is_refused_in_json(port):
    """http.server's own refusals are JSON too, never its HTML error page."""
    answer = raw(port, b"GET /a path with spaces HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"Content-Type: application/json" in answer
    assert answer.endswith(b"\r\n\r\n" + b'{"message":"Bad Request"}')


@pytest.mark.parametrize("method, path, function, route", [
    ("GET", "/api/v1/public/call/abc", "get-call", "GET /api/v1/public/call/{id}"),
    ("POST", "/api/v1/public/call", "create-call", "POST /api/v1/public/call"),
    ("GET", "/api/v1/public/call", "get-call", "GET /api/v1/public/call"),
    # A method the path's routes do not name reaches the path's ANY route: the function
    # answers (405 with Allow), not the gateway.
    ("DELETE", "/v1/calls", "send-call-data", "ANY /v1/calls"),
    ("TRACE", "/v1/calls", "send-call-data", "ANY /v1/calls"),
    ("PROPFIND", "/api/v1/public/call/abc/revisions", "call-revisions", "ANY /api/v1/public/call/{id}/revisions"),
])
def test_a_routed_request_reaches_its_function(port, method, path, function, route):
    status, _, body = call(port, method, path)
    assert status == 200, body
    answer = json.loads(body)
    assert answer.pop("instance") > 0
    assert answer == {"function": function, "routeKey": route, "method": method}


def test_many_connections_at_once_all_get_an_answer(port):
    """CONNECTIONS clients connect at the same moment and each sends a request: each gets
    an HTTP answer (none is refused or reset by a full listen backlog): served, or refused
    by the route's throttle beyond its burst."""
    start = threading.Barrier(CONNECTIONS)
    outcomes = [None] * CONNECTIONS

    def client(i):
        start.wait()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(b"GET /api/v1/public/call/c%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i)
                answer = b""
                while chunk := s.recv(65536):
                    answer += chunk
            outcomes[i] = answer.split(b"\r\n", 1)[0].decode()
        except OSError as e:
            outcomes[i] = repr(e)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The route's throttle (template.yaml: a burst of 10 on reading routes) answers the rest
    # 429, as API Gateway does; an answer all the same.
    throttled = "HTTP/1.1 429 Too Many Requests"
    failed = [o for o in outcomes if o not in ("HTTP/1.1 200 OK", throttled)]
    assert not failed, f"{len(failed)} of {CONNECTIONS} connections failed, e.g. {failed[:3]}"
    served = outcomes.count("HTTP/1.1 200 OK")
    burst, rate = gateway.THROTTLES.limits("GET /api/v1/public/call/{id}")
    assert served >= burst and outcomes.count(throttled) > 0, (served, burst, rate)


def test_scheduled_functions_run_on_their_schedule(port, tmp_path_factory):
    """template.yaml's scheduled functions (commit-pending; erase-call, the retention sweep,
    which API Gateway routes to as well) get EventBridge's event, again and again (locally
    every LOCAL_SCHEDULE_SECONDS)."""
    assert sorted(gateway.SCHEDULED) == ["commit-pending", "erase-call"]
    logs = list(tmp_path_factory.getbasetemp().glob("bin*/scheduled.log"))
    deadline = time.time() + 5
    while time.time() < deadline:
        lines = [json.loads(line) for log in logs for line in log.read_text().splitlines()] if logs else []
        if len(lines) >= 2:
            break
        time.sleep(0.2)
        logs = list(tmp_path_factory.getbasetemp().glob("bin*/scheduled.log"))
    assert len(lines) >= 2, lines
    assert {line["function"] for line in lines} <= {"commit-pending", "erase-call"}, lines
    assert {line["detail-type"] for line in lines} == {"Scheduled Event"}, lines


def test_a_scheduled_function_keeps_every_instance_requests_were_given(port):
    """erase-call is both routed (DELETE) and scheduled (the retention sweep): requests are
    served by the gateway's --instances (2 here), not queued behind the sweep's one instance.
    Four overlapping requests reach two instances."""
    path = "/api/v1/public/call/c1?hold=1"
    outcomes = []

    def erase():
        outcomes.append(call(port, "DELETE", path))

    threads = [threading.Thread(target=erase) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bodies = [json.loads(body) for status, _, body in outcomes if status == 200]
    assert len(bodies) == 4, outcomes
    assert {b["function"] for b in bodies} == {"erase-call"}, bodies
    assert len({b["instance"] for b in bodies}) == 2, bodies
