"""Providers' webhooks as the providers send them, for the HTTP tests (tests/e2e/test_webhooks.py)
and `make chaos`'s webhooks phase: a hook made with callctl, a fixture of the provider
mappings' tests as a call of one's own, signed as its provider signs it, and the call read
back by its provider call id.

    url, secret, hook_id = hook(stack, "retell", "key_retell")
    body = fixture("retell_call_analyzed", call_7f3a9c2e1b="my-call")
    post(url, body, sent_headers("retell", secret, body))
    read(stack, "my-call")                       # Get Call by provider call id
"""
import hashlib
import hmac
import os
import time

from devstack.stack import ROOT, request

FIXTURES = os.path.join(ROOT, "shared", "core", "tests", "fixtures", "providers")


def fixture(name, **replace_ids):
    """The bytes of fixture `name`, each call id given replaced (everywhere it occurs)."""
    with open(os.path.join(FIXTURES, f"{name}.json"), "rb") as f:
        raw = f.read()
    for old, new in replace_ids.items():
        raw = raw.replace(old.encode(), new.encode())
    return raw


def hook(stack, provider, secret=None, agent=True):
    """A hook of the development workspace, its agent the default one unless `agent` is
    False: (URL, secret, hook id). Retell's and ElevenLabs' `secret` reaches callctl in a
    file only its owner may read (callctl refuses any other), removed once read; Vapi's
    secret is callctl's to make."""
    args = ["webhook", "create", "--workspace", stack.dev["workspace_id"], "--provider", provider,
            "--api-url", stack.url]
    if agent:
        args += ["--agent", stack.dev["agent_remote_identifier"]]
    if secret is None:
        made = stack.ctl(*args)
    else:
        path = os.path.join(stack.tmp, f"{provider}-signing-key")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secret + "\n")
        try:
            made = stack.ctl(*args, "--signing-key-file", path)
        finally:
            os.remove(path)
    return made["url"], made.get("secret") or secret, made["hook"]["id"]


def hmac_hex(secret, message):
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signed(provider, secret, body, at_ms=None):
    """The signature headers of `body` at `at_ms` (now when None): Vapi's HMAC credential
    (`x-signature` of "<ms>.<body>", `x-timestamp`), Retell's `x-retell-signature`
    (v=<ms>,d=HMAC of the body then the ms), ElevenLabs' `ElevenLabs-Signature`
    (t=<s>,v0=HMAC of "<s>.<body>")."""
    at_ms = at_ms if at_ms is not None else int(time.time() * 1000)
    if provider == "vapi":
        return {"x-timestamp": str(at_ms), "x-signature": hmac_hex(secret, f"{at_ms}.".encode() + body)}
    if provider == "retell":
        return {"x-retell-signature": f"v={at_ms},d={hmac_hex(secret, body + str(at_ms).encode())}"}
    t = at_ms // 1000
    return {"ElevenLabs-Signature": f"t={t},v0={hmac_hex(secret, f'{t}.'.encode() + body)}"}


def sent_headers(provider, secret, body):
    """What `provider` sends with `body` unless told otherwise: Vapi its Bearer Token
    credential (what a hook made without --header expects), Retell and ElevenLabs their
    signatures, made now."""
    if provider == "vapi":
        return {"Authorization": f"Bearer {secret}"}
    return signed(provider, secret, body)


def post(url, body, headers, timeout=30):
    return request("POST", url, body, {"Content-Type": "application/json", **headers}, timeout=timeout)


def read(stack, call_id, timeout=30):
    """Get Call of the development workspace by provider call id, with its API key."""
    q = f"workspace_id={stack.dev['workspace_id']}&provider_call_id={call_id}"
    return request("GET", f"{stack.url}/api/v1/public/call?{q}", None,
                   {"Authorization": f"Bearer {stack.dev['api_key']}"}, timeout=timeout)
