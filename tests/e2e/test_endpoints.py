"""Events out (issue 33), the endpoints: `callctl endpoint` makes, lists, disables,
enables, rotates and deletes a workspace's endpoints, prints each secret once in the
Standard Webhooks form (checked with the reference library), and refuses any URL that is
not https to a public host, in every spelling of a private, loopback, link-local or
metadata address. These run with `EVENTS_ALLOW_LOOPBACK` off, as in AWS."""
import json
import subprocess
import time
import uuid

import pytest
import standardwebhooks

from devstack.stack import request
from devstack.storage import found_stored


class Tenant:
    def __init__(self, stack, name):
        self.stack = stack
        self.ws = stack.ctl("workspace", "create", "--name", f"{name}-{uuid.uuid4().hex[:8]}")["id"]


def ctl(stack, *args, loopback=False):
    """callctl --json …, with EVENTS_ALLOW_LOOPBACK as asked (off: as in AWS)."""
    env = {k: v for k, v in stack.env.items() if k != "EVENTS_ALLOW_LOOPBACK"}
    if loopback:
        env["EVENTS_ALLOW_LOOPBACK"] = "1"
    return subprocess.run([stack.callctl, "--json", *map(str, args)], env=env, capture_output=True, text=True)


def created(stack, ws, url, *more):
    out = ctl(stack, "endpoint", "create", "--workspace", ws, "--url", url, *more)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_an_endpoint_is_made_with_a_standard_webhooks_secret_shown_once(stack):
    t = Tenant(stack, "events-endpoints")
    made = created(stack, t.ws, "https://Hooks.Example.com/in?team=7", "--event", "call.stored", "--event",
                   "call.erased")
    endpoint, secret = made["endpoint"], made["secret"]
    assert endpoint["url"] == "https://hooks.example.com/in?team=7"
    assert endpoint["events"] == ["call.stored", "call.erased"], endpoint
    assert endpoint["id"].startswith("ep_") and endpoint["disabled"] is None
    # The reference library takes it: whsec_ and base64 of at least 24 bytes.
    assert secret.startswith("whsec_")
    hook = standardwebhooks.Webhook(secret)
    assert len(hook._whsecret) >= 24
    # Listed without it; stored only sealed.
    listed = stack.ctl("endpoint", "list", "--workspace", t.ws)["endpoints"]
    assert [e["id"] for e in listed] == [endpoint["id"]] and "secret" not in listed[0]
    assert found_stored(stack, [secret, secret.removeprefix("whsec_")]) == []

    # Rotated: a new secret, the old one signing beside it for 24 hours; --now: alone.
    rotated = stack.ctl("endpoint", "rotate", "--endpoint", endpoint["id"])
    assert rotated["secret"] != secret and rotated["endpoint"]["previous_until"] is not None
    now = stack.ctl("endpoint", "rotate", "--endpoint", endpoint["id"], "--now")
    assert now["endpoint"]["previous_until"] is None

    # Disabled and enabled again; deleted.
    off = stack.ctl("endpoint", "disable", "--endpoint", endpoint["id"])
    assert off["disabled"] == "by_hand" and off["disabled_at"] is not None
    on = stack.ctl("endpoint", "enable", "--endpoint", endpoint["id"])
    assert on["disabled"] is None and on["failing_since"] is None
    stack.ctl("endpoint", "delete", "--endpoint", endpoint["id"])
    assert stack.ctl("endpoint", "list", "--workspace", t.ws)["endpoints"] == []
    again = ctl(stack, "endpoint", "delete", "--endpoint", endpoint["id"])
    assert again.returncode != 0 and "no endpoint" in again.stderr


def test_a_workspace_has_at_most_ten_endpoints(stack):
    t = Tenant(stack, "events-ten")
    ids = [created(stack, t.ws, f"https://hooks{i}.example.com/")["endpoint"]["id"] for i in range(10)]
    full = ctl(stack, "endpoint", "create", "--workspace", t.ws, "--url", "https://eleven.example.com/")
    assert full.returncode != 0 and "10 endpoints" in full.stderr, full.stderr
    stack.ctl("endpoint", "delete", "--endpoint", ids[0])
    created(stack, t.ws, "https://eleven.example.com/")
    assert len(stack.ctl("endpoint", "list", "--workspace", t.ws)["endpoints"]) == 10


@pytest.mark.parametrize("url", [
    "http://hooks.example.com/",               # not https
    "ftp://hooks.example.com/",
    "https://user:pw@hooks.example.com/",      # credentials in the URL
    "https://10.0.0.1/",                       # private ranges
    "https://172.16.5.4/",
    "https://192.168.0.10/",
    "https://127.0.0.1/",                      # loopback
    "https://169.254.169.254/latest/meta-data/",  # the metadata service
    "https://[::ffff:127.0.0.1]/",             # IPv4-mapped IPv6
    "https://[::1]/",
    "https://[fd00:ec2::254]/",                # the metadata service over IPv6
    "https://[fe80::1]/",                      # link-local
    "https://2130706433/",                     # 127.0.0.1 as one number
    "https://0x7f.1/",                         # and in hex
    "https://localhost/",
    "https://metadata/",                       # a name without a dot
])
def test_urls_into_our_own_network_are_refused_when_made(stack, url):
    t = Tenant(stack, "events-ssrf")
    out = ctl(stack, "endpoint", "create", "--workspace", t.ws, "--url", url)
    assert out.returncode != 0, out.stdout
    reasons = ("is https", "no user name", "must be public", "not a public name")
    assert any(r in out.stderr for r in reasons), out.stderr
    assert stack.ctl("endpoint", "list", "--workspace", t.ws)["endpoints"] == [], "nothing made"


def test_the_local_stack_may_reach_its_own_receivers_over_loopback(stack):
    t = Tenant(stack, "events-loopback")
    out = ctl(stack, "endpoint", "create", "--workspace", t.ws, "--url", "http://127.0.0.1:9/hook", loopback=True)
    assert out.returncode == 0, out.stderr
    # And nothing else more: a private address stays refused.
    out = ctl(stack, "endpoint", "create", "--workspace", t.ws, "--url", "http://10.0.0.1/", loopback=True)
    assert out.returncode != 0


# The same over the API, for keys with the `manage` scope (sessions hold every scope).

class ApiTenant(Tenant):
    """A workspace with a key that may manage its endpoints (and one that may not)."""

    def __init__(self, stack, name):
        super().__init__(stack, name)
        self.key = stack.ctl("key", "create", "--workspace", self.ws, "--name", "manage", "--scope", "manage")["token"]
        self.reader = stack.ctl("key", "create", "--workspace", self.ws, "--name", "read", "--scope", "read")["token"]

    def call(self, method, path="", body=None, key=None, ws=None):
        url = f"{self.stack.url}/api/v1/public/endpoints{path}?workspace_id={ws or self.ws}"
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Authorization": f"Bearer {key or self.key}", "Content-Type": "application/json"}
        # As a client should: API Gateway's own 429 (these routes share 10 instances, so
        # their bursts are small) is sent again a moment later.
        for _ in range(50):
            answer = request(method, url, data, headers)
            if answer.status != 429 or answer.body != {"message": "Too Many Requests"}:
                return answer
            time.sleep(0.1)
        return answer


def test_the_api_makes_lists_disables_enables_rotates_and_deletes_endpoints(stack):
    t = ApiTenant(stack, "events-api")
    made = t.call("POST", body={"url": "https://Hooks.Example.com/in", "events": ["call.stored", "call.erased"]})
    assert made.status == 201, made
    endpoint, secret = made.body["endpoint"], made.body["secret"]
    assert endpoint["url"] == "https://hooks.example.com/in" and endpoint["state"] == "active"
    assert endpoint["events"] == ["call.stored", "call.erased"] and endpoint["workspace_id"] == t.ws
    assert standardwebhooks.Webhook(secret) and secret.startswith("whsec_")
    # What callctl lists is what the API made; neither shows the secret again.
    assert [e["id"] for e in stack.ctl("endpoint", "list", "--workspace", t.ws)["endpoints"]] == [endpoint["id"]]
    listed = t.call("GET")
    assert listed.status == 200 and [e["id"] for e in listed.body["endpoints"]] == [endpoint["id"]], listed
    assert secret not in json.dumps(listed.body) and secret not in json.dumps(t.call("GET", f"/{endpoint['id']}").body)
    assert found_stored(stack, [secret, secret.removeprefix("whsec_")]) == []

    off = t.call("POST", f"/{endpoint['id']}/disable")
    assert off.status == 200 and (off.body["state"], off.body["disabled_reason"]) == ("disabled", "by_hand"), off
    on = t.call("POST", f"/{endpoint['id']}/enable")
    assert on.status == 200 and on.body["state"] == "active" and on.body["disabled_at"] is None, on
    rotated = t.call("POST", f"/{endpoint['id']}/rotate")
    assert rotated.status == 200 and rotated.body["secret"] not in (secret, None), rotated
    assert rotated.body["endpoint"]["previous_secret_until"] is not None, "the old secret signs beside it"
    alone = t.call("POST", f"/{endpoint['id']}/rotate", {"overlap_seconds": 0})
    assert alone.status == 200 and alone.body["endpoint"]["previous_secret_until"] is None, alone

    gone = t.call("DELETE", f"/{endpoint['id']}")
    assert gone.status == 200 and gone.body == {"id": endpoint["id"], "deleted": True}, gone
    assert t.call("GET").body["endpoints"] == []
    for method, path in [("GET", ""), ("DELETE", ""), ("POST", "/disable"), ("POST", "/rotate")]:
        again = t.call(method, f"/{endpoint['id']}{path}")
        assert (again.status, again.body["type"]) == (404, "urn:call-ingest:problem:endpoint-not-found"), again


def test_endpoints_need_the_manage_scope_and_stay_in_their_workspace(stack):
    t, other = ApiTenant(stack, "events-api-a"), ApiTenant(stack, "events-api-b")
    refused = t.call("POST", body={"url": "https://hooks.example.com/"}, key=t.reader)
    assert (refused.status, refused.body["type"]) == (403, "urn:call-ingest:problem:insufficient-scope"), refused
    assert "manage" in refused.body["detail"]
    assert t.call("GET", key=t.reader).status == 403
    mine = t.call("POST", body={"url": "https://hooks.example.com/"}).body["endpoint"]["id"]
    # Another workspace's key: not its workspace (403), nor its endpoint (404 as a missing one).
    assert t.call("GET", key=other.key).status == 403
    for method, path in [("GET", ""), ("DELETE", ""), ("POST", "/disable"), ("POST", "/enable")]:
        seen = other.call(method, f"/{mine}{path}")
        assert seen.status == 404, seen
    assert stack.ctl("endpoint", "list", "--workspace", t.ws)["endpoints"][0]["disabled"] is None, "untouched"
    # A session holds every scope, in each of its workspaces.
    session = stack.ctl("session", "create", "--user", "ada", "--workspace", t.ws, "--workspace", other.ws)["token"]
    assert t.call("GET", key=session).body["endpoints"][0]["id"] == mine
    assert other.call("GET", key=session).body["endpoints"] == []


@pytest.mark.parametrize("url", [
    "http://hooks.example.com/", "https://user:pw@hooks.example.com/", "https://10.0.0.1/", "https://172.16.5.4/",
    "https://192.168.0.10/", "https://169.254.169.254/latest/meta-data/", "https://[::ffff:10.0.0.1]/",
    "https://[fd00:ec2::254]/", "https://[fe80::1]/", "https://0x0a.1/", "https://localhost/", "https://metadata/",
])
def test_the_api_refuses_urls_into_our_own_network(stack, url):
    t = ApiTenant(stack, "events-api-ssrf")
    refused = t.call("POST", body={"url": url})
    assert refused.status == 422, refused
    assert [(e["pointer"], e["code"]) for e in refused.body["errors"]] == [("/url", "format")], refused
    assert t.call("GET").body["endpoints"] == [], "nothing made"


def test_the_api_answers_bad_bodies_paths_and_methods_with_their_problems(stack):
    t = ApiTenant(stack, "events-api-bad")
    cases = [
        ("POST", "", b"not json", 400, "invalid-json"),
        ("POST", "", b"[1]", 400, "invalid-json"),
        ("POST", "", b"{" + b" " * 20000 + b"}", 413, "payload-too-large"),
        ("POST", "", {"url": 7, "events": ["call.lost"]}, 422, "validation"),
        ("PUT", "", {}, 405, "method-not-allowed"),
        ("PATCH", "/ep_000000000000000000000000", {}, 405, "method-not-allowed"),
        ("GET", "/ep_000000000000000000000000/rotate", None, 405, "method-not-allowed"),
        ("GET", "/ep_000000000000000000000000", None, 404, "endpoint-not-found"),
        ("GET", "/not-an-id", None, 404, "endpoint-not-found"),
        ("POST", "/ep_000000000000000000000000/revoke", None, 404, "endpoint-not-found"),
        ("POST", "/ep_000000000000000000000000/rotate/now", None, 404, "endpoint-not-found"),
    ]
    for method, path, body, status, kind in cases:
        got = t.call(method, path, body)
        assert (got.status, got.body.get("type")) == (status, f"urn:call-ingest:problem:{kind}"), (method, path, got)
    assert t.call("PUT").headers["allow"] == "GET, POST"
    assert t.call("GET", "/ep_000000000000000000000000/enable").headers["allow"] == "POST"
    invalid = t.call("POST", body={"url": 7, "events": ["call.lost"]}).body["errors"]
    assert [(e["pointer"], e["code"]) for e in invalid] == [("/events/0", "one_of"), ("/url", "type")]
    full = ApiTenant(stack, "events-api-ten")
    for i in range(10):
        assert full.call("POST", body={"url": f"https://hooks{i}.example.com/"}).status == 201
    over = full.call("POST", body={"url": "https://eleven.example.com/"})
    assert over.status == 422 and over.body["errors"][0]["code"] == "limit", over
    assert len(full.call("GET").body["endpoints"]) == 10
