"""Events out (issue 33), the endpoints: `callctl endpoint` makes, lists, disables,
enables, rotates and deletes a workspace's endpoints, prints each secret once in the
Standard Webhooks form (checked with the reference library), and refuses any URL that is
not https to a public host, in every spelling of a private, loopback, link-local or
metadata address. These run with `EVENTS_ALLOW_LOOPBACK` off, as in AWS."""
import json
import subprocess
import uuid

import pytest
import standardwebhooks

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
