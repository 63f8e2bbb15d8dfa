"""Reading calls back over HTTP (get-call), through the local API Gateway with several
instances per function: the README's flow, tenancy, scopes, ETags, and the largest calls
against Lambda's real answer limit."""
import gzip
import http.client
import json

from devstack.stack import request


def body_for(call_id, **fields):
    return {
        "call_id": call_id, "call_type": "phone_call",
        "start_timestamp": 1763700000000, "end_timestamp": 1763700042000,
        "recording_url": "https://recordings.example.com/x.wav",
        "transcript_with_tool_calls": [
            {"role": "agent", "text": "Hello, how can I help?", "start_ms": 0, "end_ms": 1800}],
        **fields,
    }


def get(stack, path_and_query, token=None, headers=None):
    h = {"Authorization": f"Bearer {token or stack.dev['api_key']}", **(headers or {})}
    return request("GET", f"{stack.url}{path_and_query}", None, h)


def unzipped(answer):
    assert answer.headers.get("content-encoding") == "gzip", answer
    return json.loads(gzip.decompress(answer.raw))


def ws(stack):
    return stack.dev["workspace_id"]


def test_a_stored_call_reads_back_by_provider_call_id_and_by_id(stack):
    # Over 1 KiB of answer, so that it is worth compressing.
    body = body_for("read-e2e-1", user_sentiment="Positive", notes="kept as an unknown field " * 60)
    created = stack.post_create_call(json.dumps(body).encode())
    assert created.status == 201, created
    call_id = created.body["id"]
    by_provider = get(stack, f"/api/v1/public/call?workspace_id={ws(stack)}&provider_call_id=read-e2e-1")
    assert by_provider.status == 200, by_provider
    assert by_provider.body["id"] == call_id
    assert by_provider.body["document"]["call"]["user_sentiment"] == "positive"
    assert by_provider.body["agent_remote_identifier"] == stack.dev["agent_remote_identifier"]
    by_id = get(stack, f"/api/v1/public/call/{call_id}?workspace_id={ws(stack)}", headers={"Accept-Encoding": "gzip"})
    assert by_id.status == 200, by_id
    assert unzipped(by_id)["document"] == by_provider.body["document"]
    assert by_id.headers["etag"] == by_provider.headers["etag"]
    # Other methods on the paths: 405 with what they serve.
    put = request("PUT", f"{stack.url}/api/v1/public/call/{call_id}?workspace_id={ws(stack)}", b"{}", stack.auth())
    assert (put.status, put.headers.get("allow")) == (405, "GET, DELETE")
    put = request("PUT", f"{stack.url}/api/v1/public/call", b"{}", stack.auth())
    assert (put.status, put.headers.get("allow")) == (405, "GET, POST")


def test_etag_and_if_none_match(stack):
    stack.post_create_call(json.dumps(body_for("read-e2e-etag")).encode())
    path = f"/api/v1/public/call?workspace_id={ws(stack)}&provider_call_id=read-e2e-etag"
    first = get(stack, path)
    etag = first.headers["etag"]
    again = get(stack, path, headers={"If-None-Match": etag})
    assert (again.status, again.raw) == (304, b"")
    stack.post_create_call(json.dumps(body_for("read-e2e-etag", call_status="ended")).encode())
    changed = get(stack, path, headers={"If-None-Match": etag})
    assert changed.status == 200 and changed.body["revision"] == 2
    assert changed.headers["etag"] != etag


def test_other_workspaces_and_keys_without_the_scope_see_nothing(stack):
    created = stack.post_create_call(json.dumps(body_for("read-e2e-tenant")).encode())
    other_ws = stack.ctl("workspace", "create", "--name", "other")["id"]
    other = stack.ctl("key", "create", "--workspace", other_ws, "--scope", "read")["token"]
    theirs = get(stack, f"/api/v1/public/call/{created.body['id']}?workspace_id={other_ws}", token=other)
    missing = get(stack, f"/api/v1/public/call/{created.body['id'] + 10**9}?workspace_id={other_ws}", token=other)
    assert theirs.status == missing.status == 404
    strip = lambda b: {k: v for k, v in b.items() if k != "request_id"}
    assert strip(theirs.body) == strip(missing.body)
    assert get(stack, f"/api/v1/public/call/{created.body['id']}?workspace_id={ws(stack)}", token=other).status == 403
    sender = stack.ctl("key", "create", "--workspace", ws(stack))["token"]
    denied = get(stack, f"/api/v1/public/call?workspace_id={ws(stack)}&provider_call_id=read-e2e-tenant", token=sender)
    assert denied.status == 403 and "`read`" in denied.body["detail"], denied


def test_a_58_mb_call_reads_back_whole_within_lambdas_answer_limit(stack):
    call = json.loads(stack.callgen("--bytes", 5_800_000, "--seed", 58))
    call["call_id"] = "read-e2e-big"
    raw = json.dumps(call, separators=(",", ":")).encode()
    assert len(raw) > 5_700_000
    # Too large for the event uncompressed: sent gzip-compressed, without Content-Type.
    # (http.client: urllib would add a form Content-Type.)
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120)
    conn.request("POST", f"/api/v1/public/call?workspace_id={ws(stack)}"
                 f"&agent_remote_identifier={stack.dev['agent_remote_identifier']}", gzip.compress(raw),
                 {"Authorization": f"Bearer {stack.dev['api_key']}", "Content-Encoding": "gzip"})
    stored = conn.getresponse()
    assert stored.status == 201, stored.read()
    conn.close()
    path = f"/api/v1/public/call?workspace_id={ws(stack)}&provider_call_id=read-e2e-big"
    whole = get(stack, path, headers={"Accept-Encoding": "gzip"})
    assert whole.status == 200, whole
    document = unzipped(whole)["document"]["call"]
    assert len(document["transcript_with_tool_calls"]) == len(call["transcript_with_tool_calls"])
    plain = get(stack, path)
    assert plain.status == 406 and "Accept-Encoding: gzip" in plain.body["detail"], plain
