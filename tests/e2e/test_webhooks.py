"""Providers' webhooks end to end, through the local API Gateway and several instances of
provider-webhook: a hook made with callctl, a signed payload posted as the provider would,
the call read back with the read API. Replays are idempotent; a bad signature, a stale
timestamp and a revoked hook are 401 with nothing stored. Signatures are checked against the
providers' own verifiers (retell-sdk's `verify`, elevenlabs' `construct_event`): what they
accept we accept, what they refuse we refuse (one deliberate difference: a timestamp over
5 minutes ahead)."""
import hashlib
import hmac
import json
import os
import tempfile
import time

import pytest

from devstack.stack import request

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "core", "tests", "fixtures", "providers")


def fixture(name, **replace_ids):
    with open(os.path.join(FIXTURES, f"{name}.json"), "rb") as f:
        raw = f.read()
    for old, new in replace_ids.items():
        raw = raw.replace(old.encode(), new.encode())
    return raw


def hook(stack, provider, secret=None, agent=True):
    args = ["webhook", "create", "--workspace", stack.dev["workspace_id"], "--provider", provider,
            "--api-url", stack.url]
    if agent:
        args += ["--agent", stack.dev["agent_remote_identifier"]]
    if secret is not None:
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(secret + "\n")
        args += ["--signing-key-file", f.name]
    made = stack.ctl(*args)
    return made["url"], made.get("secret") or secret, made["hook"]["id"]


def hmac_hex(secret, message):
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signed(provider, secret, body, at_ms=None):
    at_ms = at_ms if at_ms is not None else int(time.time() * 1000)
    if provider == "vapi":
        return {"x-timestamp": str(at_ms), "x-signature": hmac_hex(secret, f"{at_ms}.".encode() + body)}
    if provider == "retell":
        return {"x-retell-signature": f"v={at_ms},d={hmac_hex(secret, body + str(at_ms).encode())}"}
    t = at_ms // 1000
    return {"ElevenLabs-Signature": f"t={t},v0={hmac_hex(secret, f'{t}.'.encode() + body)}"}


def post(url, body, headers):
    return request("POST", url, body, {"Content-Type": "application/json", **headers})


def read(stack, call_id):
    q = f"workspace_id={stack.dev['workspace_id']}&provider_call_id={call_id}"
    return request("GET", f"{stack.url}/api/v1/public/call?{q}", None,
                   {"Authorization": f"Bearer {stack.dev['api_key']}"})


CASES = [
    ("vapi", None, "vapi_tools", "vapi-call-tools-1"),
    ("retell", "key_retell_webhooks_e2e", "retell_call_analyzed", "call_7f3a9c2e1b"),
    ("elevenlabs", "wsec_elevenlabs_e2e", "elevenlabs_transcription", "conv_01jxyz"),
]


@pytest.mark.parametrize("provider,secret,name,call_id", CASES)
def test_a_signed_call_is_stored_once_and_reads_back(stack, provider, secret, name, call_id):
    url, secret, _ = hook(stack, provider, secret)
    ours = f"{call_id}-{provider}-e2e"
    body = fixture(name, **{call_id: ours})
    first = post(url, body, signed(provider, secret, body))
    assert first.status == 200 and first.body["status"] == "stored", first
    again = post(url, body, signed(provider, secret, body))
    assert again.status == 200 and again.body["status"] == "unchanged", again
    got = read(stack, ours)
    assert got.status == 200, got
    doc = got.body["document"]
    assert doc["operation"] == "provider_webhook" and doc["call"]["provider"] == provider
    assert got.body["revision"] == 1, "a replay is no revision"
    assert got.body["agent_remote_identifier"] == stack.dev["agent_remote_identifier"], "the hook's default agent"
    raw = request("GET", f"{stack.url}/api/v1/public/call/{got.body['id']}/raw?workspace_id={stack.dev['workspace_id']}",
                  None, {"Authorization": f"Bearer {stack.dev['api_key']}"})
    assert raw.status == 200 and raw.raw == body, "the payload, byte for byte"


@pytest.mark.parametrize("provider,secret,name,call_id", CASES)
def test_bad_signatures_stale_timestamps_and_revoked_hooks_are_401_and_store_nothing(
        stack, provider, secret, name, call_id):
    url, secret, hook_id = hook(stack, provider, secret)
    ours = f"{call_id}-{provider}-refused"
    body = fixture(name, **{call_id: ours})
    now = int(time.time() * 1000)
    for headers in [
        signed(provider, secret + "x", body),
        signed(provider, secret, body, at_ms=now - 31 * 60 * 1000),
        signed(provider, secret, body, at_ms=now + 6 * 60 * 1000),
        signed(provider, secret, body.replace(b"call", b"cal1", 1)),
        {},
    ]:
        refused = post(url, body, headers)
        assert refused.status == 401, (headers, refused)
        assert refused.body["type"].endswith("unauthorized") and refused.body["detail"], refused
    stack.ctl("webhook", "revoke", "--hook", hook_id)
    revoked = post(url, body, signed(provider, secret, body))
    assert revoked.status == 401, revoked
    assert read(stack, ours).status == 404, "nothing was stored"


def test_retells_two_events_in_either_order_are_one_call_with_its_analysis(stack):
    url, secret, _ = hook(stack, "retell", "key_retell_order_e2e")
    for order, call_id in [(("call_ended", "call_analyzed"), "retell-order-1"), (("call_analyzed", "call_ended"), "retell-order-2")]:
        for event in order:
            body = fixture(f"retell_{event}", call_7f3a9c2e1b=call_id)
            answer = post(url, body, signed("retell", secret, body))
            assert answer.status == 200 and answer.body["status"] in ("stored", "revised"), answer
        # A late replay of call_ended changes nothing either.
        body = fixture("retell_call_ended", call_7f3a9c2e1b=call_id)
        assert post(url, body, signed("retell", secret, body)).body["status"] == "unchanged"
        got = read(stack, call_id)
        assert got.status == 200
        assert got.body["document"]["call"]["call_analysis"]["call_summary"], (order, got.body["document"]["call"])


def test_other_events_are_200_ignored_and_a_call_with_no_agent_is_422(stack):
    url, secret, _ = hook(stack, "vapi")
    body = fixture("vapi_status_update")
    ignored = post(url, body, signed("vapi", secret, body))
    assert ignored.status == 200 and ignored.body == {
        "status": "ignored", "event": "status-update", "message": "not a call event: nothing stored"}
    url, secret, _ = hook(stack, "vapi", agent=False)
    body = fixture("vapi_tools", **{"vapi-call-tools-1": "vapi-no-agent"})
    refused = post(url, body, {"x-vapi-secret": secret})
    assert refused.status == 422 and "asst-desk" in refused.body["errors"][0]["message"], refused
    assert read(stack, "vapi-no-agent").status == 404


def test_a_rotated_secret_keeps_the_old_one_for_a_day(stack):
    url, old, hook_id = hook(stack, "vapi")
    rotated = stack.ctl("webhook", "rotate", "--hook", hook_id)
    new = rotated["secret"]
    for secret, call_id in [(old, "vapi-rotated-old"), (new, "vapi-rotated-new")]:
        body = fixture("vapi_voicemail", **{"vapi-call-voicemail-1": call_id})
        assert post(url, body, {"x-vapi-secret": secret}).status == 200
    body = fixture("vapi_voicemail", **{"vapi-call-voicemail-1": "vapi-rotated-wrong"})
    assert post(url, body, {"x-vapi-secret": "not-" + new}).status == 401
    listed = stack.ctl("webhook", "list", "--workspace", stack.dev["workspace_id"])["hooks"]
    assert any(h["id"] == hook_id and h["previous_until"] for h in listed)
    assert all("secret" not in json.dumps(h) for h in listed), "never a secret in a listing"


def reference_cases(provider, secret, body):
    """(headers, label) pairs: valid, tampered, wrong key, stale, ahead, malformed."""
    now = int(time.time() * 1000)
    s = lambda **k: signed(provider, secret, body, **k)
    name = "x-retell-signature" if provider == "retell" else "ElevenLabs-Signature"
    value = s()[name]
    return [
        (s(), "valid"),
        (signed(provider, secret + "!", body), "wrong key"),
        (s(at_ms=now - 4 * 60 * 1000), "4 min old"),
        (s(at_ms=now - 29 * 60 * 1000), "29 min old"),
        (s(at_ms=now - 31 * 60 * 1000), "31 min old"),
        (s(at_ms=now + 60 * 1000), "1 min ahead"),
        ({name: value.upper()}, "upper case"),
        ({name: value + ",x=1"}, "an extra part"),
        ({name: " " + value}, "a leading space"),
        ({name: value.replace(",", ", ")}, "a space after the comma"),
        ({name: value[:-1]}, "a digit short"),
        ({name: ""}, "empty"),
        ({name: "garbage"}, "garbage"),
    ]


def reference_accepts(provider, secret, body, headers):
    # A header's value as any HTTP server hands it over: without surrounding white space
    # (RFC 9110 5.5), which is what a provider's own integration gives the reference too.
    headers = {k: v.strip() for k, v in headers.items()}
    if provider == "retell":
        from retell.lib.webhook_auth import verify
        return bool(verify(body.decode(), secret, headers["x-retell-signature"]))
    from elevenlabs import ElevenLabs
    try:
        ElevenLabs(api_key="unused").webhooks.construct_event(body.decode(), headers["ElevenLabs-Signature"], secret)
        return True
    except Exception:  # BadRequestError, or the reference's own ValueError on a bad t=
        return False


@pytest.mark.parametrize("provider,secret", [("retell", "key_retell_reference"), ("elevenlabs", "wsec_reference")])
def test_we_accept_what_the_providers_reference_verifier_accepts_and_refuse_what_it_refuses(stack, provider, secret):
    url, secret, _ = hook(stack, provider, secret)
    name = "retell_call_ended" if provider == "retell" else "elevenlabs_transcription"
    old_id = "call_7f3a9c2e1b" if provider == "retell" else "conv_01jxyz"
    for i in range(len(reference_cases(provider, secret, fixture(name)))):
        # Each case its own call, so that one stored is not another's replay.
        body = fixture(name, **{old_id: f"ref-{provider}-{i}"})
        headers, label = reference_cases(provider, secret, body)[i]
        expected = reference_accepts(provider, secret, body, headers)
        got = post(url, body, headers)
        assert (got.status == 200) == expected, (label, expected, got)
    # The deliberate difference: the references take any time ahead; we refuse over 5 min.
    body = fixture(name, **{old_id: f"ref-{provider}-ahead"})
    ahead = signed(provider, secret, body, at_ms=int(time.time() * 1000) + 10 * 60 * 1000)
    assert reference_accepts(provider, secret, body, ahead) is (provider == "elevenlabs")
    assert post(url, body, ahead).status == 401


def test_a_webhook_call_storage_cannot_take_in_time_is_accepted_and_committed(stack):
    """The durable path, as for Create Call: DynamoDB refusing the call's writes makes it
    pending in S3 and `accepted` (200: the provider does not retry), then commit-pending
    maps the raw payload again and stores it."""
    url, secret, _ = hook(stack, "retell", "key_retell_durable")
    call_id = "retell-durable-1"
    body = fixture("retell_call_analyzed", call_7f3a9c2e1b=call_id)
    stack.faults.add({"op": "PutItem", "fault": "throttle", "times": 1000, "table": stack.calls_table})
    answer = post(url, body, signed("retell", secret, body))
    stack.faults.clear()
    assert answer.status == 200 and answer.body["status"] == "accepted", answer
    deadline = time.time() + 60
    while (got := read(stack, call_id)).status != 200 and time.time() < deadline:
        time.sleep(0.5)
    assert got.status == 200, got
    assert got.body["document"]["operation"] == "provider_webhook"
    assert got.body["document"]["call"]["call_analysis"]["call_summary"]


def test_a_payload_expanding_past_8_mib_is_413_and_stores_nothing(stack):
    import gzip
    url, secret, _ = hook(stack, "vapi")
    body = fixture("vapi_voicemail", **{"vapi-call-voicemail-1": "vapi-too-large"})
    padded = body[:-1] + b',"pad":"' + b" " * (9 << 20) + b'"}'
    packed = gzip.compress(padded)
    answer = post(url, packed, {"x-vapi-secret": secret, "Content-Encoding": "gzip"})
    assert answer.status == 413, answer
    assert read(stack, "vapi-too-large").status == 404


def test_a_pending_analysis_still_becomes_current_after_a_later_call_ended(stack):
    """call_analyzed made pending (DynamoDB refusing), then call_ended stored directly: when
    the pending analysis commits, its later stage wins over the received times."""
    url, secret, _ = hook(stack, "retell", "key_retell_pending_order")
    call_id = "retell-pending-order"
    analyzed = fixture("retell_call_analyzed", call_7f3a9c2e1b=call_id)
    stack.faults.add({"op": "PutItem", "fault": "throttle", "times": 1000, "table": stack.calls_table})
    assert post(url, analyzed, signed("retell", secret, analyzed)).body["status"] == "accepted"
    stack.faults.clear()
    ended = fixture("retell_call_ended", call_7f3a9c2e1b=call_id)
    assert post(url, ended, signed("retell", secret, ended)).body["status"] in ("stored", "revised")
    deadline = time.time() + 60
    while time.time() < deadline:
        got = read(stack, call_id)
        if got.status == 200 and got.body["document"]["call"].get("call_analysis"):
            break
        time.sleep(0.5)
    assert got.body["document"]["call"]["call_analysis"]["call_summary"], got.body["document"]["call"]


def test_an_operation_after_a_webhook_takes_its_usual_place(stack):
    """Stages compare between one provider's events only: a Create Call of the same call id
    after Retell's analysis becomes the current content, as any revision does."""
    url, secret, _ = hook(stack, "retell", "key_retell_then_b")
    call_id = "retell-then-b"
    body = fixture("retell_call_analyzed", call_7f3a9c2e1b=call_id)
    assert post(url, body, signed("retell", secret, body)).body["status"] == "stored"
    b = json.dumps({"call_id": call_id, "call_type": "phone_call", "start_timestamp": 1732000000000,
                    "end_timestamp": 1732000042500, "recording_url": "https://recordings.example/b.wav",
                    "transcript_with_tool_calls": [{"role": "agent", "text": "Hi", "start_ms": 0, "end_ms": 500}]}).encode()
    assert stack.post_create_call(b).status == 200
    got = read(stack, call_id)
    assert got.body["operation"] == "create_call" and got.body["revision"] == 2, got.body
