"""Listing calls, their revisions and raw bodies, and erasing them, over HTTP through the
local API Gateway with several instances per function: pagination while calls arrive
through other instances, cursors of another workspace, erase then read, list and resubmit."""
import gzip
import json
import threading
from concurrent.futures import ThreadPoolExecutor

from devstack.stack import request


def body_for(call_id, start_s, **fields):
    return {
        "call_id": call_id, "call_type": "phone_call",
        "start_timestamp": start_s * 1000, "end_timestamp": start_s * 1000 + 42000,
        "recording_url": "https://recordings.example.com/x.wav",
        "transcript_with_tool_calls": [
            {"role": "agent", "text": "Hello, how can I help?", "start_ms": 0, "end_ms": 1800}],
        **fields,
    }


class Tenant:
    """A workspace of its own, with an agent, a key that may do everything and a high rate
    limit (the tests send many requests a second)."""

    def __init__(self, stack, name):
        self.stack = stack
        self.ws = stack.ctl("workspace", "create", "--name", name)["id"]
        stack.ctl("workspace", "limit", "--id", self.ws, "--per-second", 1000)
        stack.ctl("agent", "create", "--workspace", self.ws, "--remote-id", "bot", "--name", "Bot")
        self.key = stack.ctl("key", "create", "--workspace", self.ws, "--name", "all",
                             "--scope", "send", "--scope", "read", "--scope", "erase")["token"]

    def headers(self, key=None, extra=None):
        return {"Authorization": f"Bearer {key or self.key}", "Content-Type": "application/json", **(extra or {})}

    def post(self, body, raw=None):
        url = f"{self.stack.url}/api/v1/public/call?workspace_id={self.ws}&agent_remote_identifier=bot"
        answer = request("POST", url, raw if raw is not None else json.dumps(body).encode(), self.headers())
        assert answer.status in (200, 201), answer
        return answer

    def call(self, method, path, key=None, headers=None):
        sep = "&" if "?" in path else "?"
        return request(method, f"{self.stack.url}/api/v1/public{path}{sep}workspace_id={self.ws}", None,
                       self.headers(key, headers))


def listed_ids(answer):
    return [c["provider_call_id"] for c in answer.body["calls"]]


def test_pages_list_every_call_once_while_calls_arrive_through_other_instances(stack):
    t = Tenant(stack, "pages")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: t.post(body_for(f"p-{i:02}", 1_763_700_000 + i * 60)), range(40)))
    before = {f"p-{i:02}" for i in range(40)}

    # While the pages are read, other clients keep storing calls, older and newer than
    # every call listed so far, through other instances.
    stop = threading.Event()
    arrived = []

    def keep_sending():
        n = 0
        while not stop.is_set():
            for call_id, start in ((f"old-{n}", 1_763_000_000 - n), (f"new-{n}", 1_764_000_000 + n)):
                t.post(body_for(call_id, start))
                arrived.append(call_id)
            n += 1

    sender = threading.Thread(target=keep_sending)
    sender.start()
    seen, cursor, pages = [], None, 0
    try:
        while True:
            path = "/calls?limit=7" + (f"&cursor={cursor}" if cursor else "")
            olds_at_last_page = sum(1 for a in list(arrived) if a.startswith("old-"))
            page = t.call("GET", path)
            assert page.status == 200, page
            seen += listed_ids(page)
            pages += 1
            cursor = page.body["next_cursor"]
            if cursor is None:
                break
    finally:
        stop.set()
        sender.join()
    assert pages > 40 // 7, pages
    assert len(seen) == len(set(seen)), f"listed twice: {sorted(s for s in seen if seen.count(s) > 1)}"
    assert before <= set(seen), f"skipped: {sorted(before - set(seen))}"
    # Each "old" call is older than every call listed before it was stored: the ones stored
    # before the last page was read are on a page.
    olds = [a for a in arrived if a.startswith("old-")]
    assert olds and set(olds[:olds_at_last_page]) <= set(seen), "older calls stored meanwhile are listed"


def test_a_cursor_of_another_workspace_or_agent_is_refused(stack):
    a, b = Tenant(stack, "cursor-a"), Tenant(stack, "cursor-b")
    for t in (a, b):
        for i in range(3):
            t.post(body_for(f"c-{i}", 1_763_700_000 + i))
    first = a.call("GET", "/calls?limit=2")
    cursor = first.body["next_cursor"]
    assert listed_ids(first) == ["c-2", "c-1"] and cursor
    for answer in (b.call("GET", f"/calls?cursor={cursor}"),
                   a.call("GET", f"/calls?cursor={cursor}&agent_remote_identifier=bot"),
                   a.call("GET", f"/calls?cursor={cursor[:-2]}")):
        assert answer.status == 400 and answer.body["type"].endswith(":invalid-cursor"), answer
        assert "calls" not in answer.body
    assert listed_ids(a.call("GET", f"/calls?limit=2&cursor={cursor}")) == ["c-0"]


def test_revisions_raw_bodies_and_erasing_over_http(stack):
    t = Tenant(stack, "erase")
    # Over 1 KiB, so that it is worth compressing.
    raw1 = json.dumps(body_for("e-1", 1_763_700_000, notes="kept as sent " * 100), indent=3).encode()
    created = t.post(None, raw=raw1)
    call_id = created.body["id"]
    t.post(body_for("e-1", 1_763_700_000, call_status="ended"))
    revisions = t.call("GET", f"/call/{call_id}/revisions")
    assert [r["revision"] for r in revisions.body["revisions"]] == [1, 2], revisions
    first = t.call("GET", f"/call/{call_id}/revisions/1")
    assert first.status == 200 and "call_status" not in first.body["document"]["call"]
    raw = t.call("GET", f"/call/{call_id}/raw?revision=1")
    assert raw.status == 200 and raw.raw == raw1, "byte for byte as sent"
    zipped = t.call("GET", f"/call/{call_id}/raw?revision=1", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers.get("content-encoding") == "gzip" and gzip.decompress(zipped.raw) == raw1
    # A large call (its frame in S3) of the same workspace.
    big = json.loads(stack.callgen("--bytes", 2_500_000, "--seed", 7))
    big["call_id"] = "e-big"
    big_id = t.post(big).body["id"]

    reader = stack.ctl("key", "create", "--workspace", t.ws, "--scope", "read")["token"]
    denied = t.call("DELETE", f"/call/{call_id}", key=reader)
    assert denied.status == 403 and "`erase`" in denied.body["detail"], denied
    other = Tenant(stack, "erase-other")
    theirs = request("DELETE", f"{stack.url}/api/v1/public/call/{call_id}?workspace_id={other.ws}", None,
                     other.headers())
    assert theirs.status == 200 and theirs.body["erased"] is False
    assert t.call("GET", f"/call/{call_id}").status == 200

    for target, items in ((call_id, 2), (big_id, None)):
        erased = t.call("DELETE", f"/call/{target}")
        assert erased.status == 200 and erased.body["erased"] is True, erased
        if items:
            assert erased.body["items_removed"] == items
        for path in (f"/call/{target}", f"/call/{target}/revisions", f"/call/{target}/raw"):
            assert t.call("GET", path).status == 404, path
    assert listed_ids(t.call("GET", "/calls")) == []
    again = t.call("DELETE", f"/call/{call_id}")
    assert again.status == 200 and again.body == {"id": call_id, "erased": False, "items_removed": 0}

    resent = t.post(body_for("e-1", 1_763_700_000))
    assert resent.status == 201 and resent.body["is_new"] is True and resent.body["id"] != call_id
    assert listed_ids(t.call("GET", "/calls")) == ["e-1"]
