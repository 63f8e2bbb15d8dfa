"""The HTTP edge as AWS has it, through the local API Gateway (devstack.gateway): the
event limit, bodies that are not UTF-8, compressed bodies, and the largest calls."""
import gzip
import http.client
import json
import os
import subprocess

from devstack import gateway
from devstack.stack import request

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

# Exactly the headers each request here sends (http.client adds none of its own).
def headers_for(stack, body, extra=()):
    return [("Host", f"127.0.0.1:{stack.port}"), ("Authorization", f"Bearer {stack.dev['api_key']}"),
            ("Content-Type", "application/json"), ("Content-Length", str(len(body))), *extra]


def post_exact(stack, path_and_query, body, extra=()):
    """A POST carrying exactly `headers_for`: answers (status, headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120)
    conn.putrequest("POST", path_and_query, skip_host=True, skip_accept_encoding=True)
    for k, v in headers_for(stack, body, extra):
        conn.putheader(k, v)
    conn.endheaders()
    conn.send(body)
    r = conn.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    conn.close()
    return out


def create_path(stack):
    return (f"/api/v1/public/call?workspace_id={stack.dev['workspace_id']}"
            f"&agent_remote_identifier={stack.dev['agent_remote_identifier']}")


def event_size(stack, path_and_query, body):
    path, _, query = path_and_query.partition("?")
    return len(gateway.build_event("POST", path, query, headers_for(stack, body), body, "127.0.0.1"))


def test_the_largest_body_whose_event_fits_goes_through_and_one_byte_more_is_refused_as_aws_does(stack):
    base = json.loads(stack.callgen("--bytes", 5_400_000, "--seed", 21))
    base["call_id"] = "edge-limit"
    body = json.dumps(base, separators=(",", ":")).encode()
    path = create_path(stack)
    # Pad with trailing spaces (still the same JSON) until the event is exactly the limit.
    body += b" " * (gateway.EVENT_LIMIT - event_size(stack, path, body))
    assert event_size(stack, path, body) == gateway.EVENT_LIMIT
    assert len(body) > 5_000_000
    status, headers, out = post_exact(stack, path, body)
    assert status == 201, out[:300]
    assert headers.get("x-request-id")
    over = body + b" "
    status, headers, out = post_exact(stack, path, over)
    assert (status, json.loads(out)) == (413, {"message": "Request Too Long"})
    assert "x-request-id" not in headers, "refused in front of the function, as API Gateway does"


def test_a_body_that_is_not_utf8_reaches_the_handler_and_is_400_on_both_endpoints(stack):
    bad = b'\xcb\xb1\xbfj\x02"'
    for url in (stack.url + create_path(stack), stack.url + "/v1/calls"):
        a = request("POST", url, bad, stack.auth())
        assert a.status == 400, a
        assert a.headers["content-type"] == "application/problem+json"
        assert a.headers.get("x-request-id")


def test_a_header_value_lambda_http_cannot_read_is_400_with_a_request_id(stack):
    body = json.dumps({"call_id": "x"}).encode()
    status, headers, out = post_exact(stack, create_path(stack), body, [("X-Caller-Name", "Zo\u00eb \x01")])
    assert status == 400, out
    assert headers.get("x-request-id")
    assert headers["content-type"] == "application/problem+json"


def test_a_20_mb_call_sent_gzip_is_stored_and_reads_back_byte_for_byte(stack):
    base = json.loads(stack.callgen("--bytes", 20_000_000, "--seed", 22))
    base["call_id"] = "edge-20mb"
    body = json.dumps(base, separators=(",", ":")).encode()
    assert len(body) > 19_000_000
    packed = gzip.compress(body, 6)
    status, headers, out = post_exact(stack, create_path(stack), packed, [("Content-Encoding", "gzip")])
    assert status == 201, out[:300]
    raw = subprocess.run([stack.callctl, "call", "get", "--workspace", str(stack.dev["workspace_id"]),
                          "--call-id", "edge-20mb", "--raw"], env=stack.env, capture_output=True, check=True).stdout
    assert raw == body


def test_an_unknown_encoding_is_415_and_a_bomb_413(stack):
    body = json.dumps({"call_id": "x"}).encode()
    status, headers, out = post_exact(stack, create_path(stack), body, [("Content-Encoding", "br")])
    assert status == 415 and headers.get("accept-encoding") == "gzip, zstd", out
    bomb = gzip.compress(b" " * (40 << 20), 9)
    status, headers, out = post_exact(stack, create_path(stack), bomb, [("Content-Encoding", "gzip")])
    assert status == 413 and headers.get("x-request-id"), out


def test_event_files_can_be_invoked_as_they_are_through_lambdas_invoke_api(stack):
    """`POST /2015-03-31/functions/<name>/invocations` (what `cargo lambda invoke` and
    events/README.md use): the event reaches the function unchanged, its answer comes back."""
    import os
    root = os.path.join(os.path.dirname(__file__), "..", "..", "events")
    for name, event, status in [("create-call", "unreadable-header.json", 400),
                                ("create-call", "valid.json", 401),  # the fixture key is not make run's
                                ("send-call-data", "not-utf8.json", 401)]:
        with open(os.path.join(root, name, event), "rb") as f:
            data = f.read()
        conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=60)
        conn.request("POST", f"/2015-03-31/functions/{name}/invocations", body=data)
        r = conn.getresponse()
        out = json.loads(r.read())
        conn.close()
        assert r.status == 200 and out["statusCode"] == status, (name, event, out)
        assert out["headers"].get("x-request-id"), out
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=60)
    conn.request("POST", "/2015-03-31/functions/nope/invocations", body=b"{}")
    assert conn.getresponse().status == 404


def test_the_readmes_compressed_recipe_no_content_type_is_stored(stack):
    """README: a gzip body sent without a Content-Type (API Gateway then passes it
    base64-encoded) is read as JSON."""
    body = json.dumps(dict(json.loads(stack.callgen("--minutes", 2, "--seed", 23)), call_id="edge-no-type")).encode()
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=60)
    conn.request("POST", create_path(stack), body=gzip.compress(body), headers={
        "Authorization": f"Bearer {stack.dev['api_key']}", "Content-Encoding": "gzip"})
    r = conn.getresponse()
    out = r.read()
    conn.close()
    assert r.status == 201, out[:300]


def peak_rss(pids):
    """The highest peak resident set (VmHWM, bytes) among `pids`."""
    peak = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
        except FileNotFoundError:
            pass
    return peak


def test_adversarial_compressed_bodies_stay_under_half_the_functions_memory(stack):
    """Issue 17, item 3: bodies built to cost the most memory per byte, sent gzip (a few KB
    on the wire), are refused or judged with every function process's peak RSS (a debug
    build) under half of MemorySize. 600,000 empty segments took one process to 578 MB."""
    import yaml
    with open(os.path.join(ROOT, "template.yaml")) as f:
        memory_mb = yaml.safe_load(f)["Globals"]["Function"]["MemorySize"]
    budget = memory_mb * 1024 * 1024 // 2
    wide = "{" + ",".join(f'"k{i}":0' for i in range(10_000)) + "}"
    words = '{"words":[' + ",".join(["{}"] * 20_000) + "]}"
    shapes = {
        "600,000 empty segments": '{"transcript_with_tool_calls":[' + ",".join(["{}"] * 600_000) + "]}",
        "empty segments at the limit": '{"transcript_with_tool_calls":[' + ",".join(["{}"] * 50_000) + "]}",
        "empty words at the limit": '{"transcript_with_tool_calls":[' + ",".join([words] * 20) + "]}",
        "huge metadata objects": '{"metadata":{' + ",".join(f'"m{j}":{wide}' for j in range(49)) + "}}",
        "deep nesting": '{"call_analysis":{"x":[' + ",".join(["[" * 61 + "]" * 61] * 6_100) + "]}}",
        "all limits at once": '{"transcript_with_tool_calls":[' + ",".join([words] * 20 + ["{}"] * 49_980)
                              + '],"call_analysis":{"x":[' + ",".join(["0"] * 1_299_000) + "]}}",
    }
    pids = stack.function_pids()
    for name, body in shapes.items():
        status, headers, out = post_exact(stack, create_path(stack), gzip.compress(body.encode(), 6),
                                          [("Content-Encoding", "gzip")])
        assert status == 422, (name, out[:300])
        assert headers.get("x-request-id")
        peak = peak_rss(pids)
        print(f"{name}: gzip {len(gzip.compress(body.encode(), 6))} bytes, peak RSS so far {peak / 1e6:.1f} MB")
        assert peak < budget, f"{name}: a function process peaked at {peak} bytes, over {budget}"
    # The largest call of operation A, long `content` strings, stored and read back whole.
    items = [{"role": ["agent", "user"][i % 2], "content": "word " * 20_000} for i in range(300)]
    body = json.dumps({"agentId": stack.dev["agent_id"], "callId": "edge-a-max", "transcript": items}).encode()
    status, headers, out = post_exact(stack, "/v1/calls", gzip.compress(body, 6), [("Content-Encoding", "gzip")])
    assert status == 201, out[:300]
    a = request("GET", f"{stack.url}/api/v1/public/call?workspace_id={stack.dev['workspace_id']}"
                       f"&provider_call_id=edge-a-max", headers=stack.auth({"Accept-Encoding": "gzip"}), timeout=120)
    assert a.status == 200, a
    peak = peak_rss(pids)
    assert peak < budget, f"storing and reading operation A's largest call peaked at {peak} bytes"
