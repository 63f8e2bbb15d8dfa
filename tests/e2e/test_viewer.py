"""The call viewer (`/app/…`) in a real browser: Debian's Chromium driven by Playwright,
against the local stack. Recordings come from a local HTTP server that serves a generated
WAV with byte ranges, so the audio really plays and seeks. Screenshots of the list and of
a call page are kept in $VIEWER_ARTIFACTS (default .local/artifacts/viewer)."""
import gzip
import http.client
import http.server
import io
import json
import math
import os
import shutil
import struct
import threading
import time
import wave

import pytest

from devstack.stack import request
from playwright import sync_api as playwright_sync

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARTIFACTS = os.environ.get("VIEWER_ARTIFACTS") or os.path.join(ROOT, ".local", "artifacts", "viewer")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# What a script the payloads name would set, were it ever run.
PWNED = "window.__pwned = 1"
XSS = [
    "<script>window.__pwned = 1</script>",
    "<img src=x onerror=\"window.__pwned = 1; alert(1)\">",
    "javascript:window.__pwned = 1",
    "\u202eevil.exe\u202c and \u2066isolated\u2069",
]


# ----------------------------------------------------------------------------- recordings

def wav_bytes(seconds, rate=8000):
    """A mono 8-bit WAV of a quiet tone, `seconds` long."""
    frames = bytes(128 + int(20 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(int(seconds * rate)))
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(rate)
        w.writeframes(frames)
    return out.getvalue()


class Recordings(http.server.ThreadingHTTPServer):
    daemon_threads = True


def recording_handler(body):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            start, end = 0, len(body) - 1
            asked = self.headers.get("Range", "")
            if asked.startswith("bytes="):
                first, _, last = asked[6:].partition("-")
                start = int(first or 0)
                end = min(int(last), end) if last else end
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(body)}")
            else:
                self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(end - start + 1))
            self.end_headers()
            self.wfile.write(body[start:end + 1])

    return Handler


@pytest.fixture(scope="module")
def recording():
    server = Recordings(("127.0.0.1", 0), recording_handler(wav_bytes(130)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


# ----------------------------------------------------------------------------- the workspace

class Viewer:
    """A workspace of its own with three keys (everything, read, send), and its calls."""

    def __init__(self, stack):
        self.stack = stack
        self.ws = stack.ctl("workspace", "create", "--name", "viewer")["id"]
        # The tests send calls faster than the default budget (a send over it would be 202).
        stack.ctl("workspace", "limit", "--id", self.ws, "--per-second", 1000)
        self.agents = ["front-desk", "billing", XSS[1]]
        for agent in self.agents:
            stack.ctl("agent", "create", "--workspace", self.ws, "--remote-id", agent, "--name", "viewer agent")
        key = lambda *scopes: stack.ctl("key", "create", "--workspace", self.ws, "--name", "viewer",
                                        *[a for s in scopes for a in ("--scope", s)])["token"]
        self.full = key("send", "read", "erase")
        self.reader = key("read")
        self.sender = key("send")

    def post(self, body, agent="front-desk", headers=None):
        raw = json.dumps(body, separators=(",", ":")).encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=120)
        from urllib.parse import quote
        conn.request("POST", f"/api/v1/public/call?workspace_id={self.ws}&agent_remote_identifier={quote(agent)}",
                     gzip.compress(raw), {"Authorization": f"Bearer {self.full}", "Content-Encoding": "gzip", **(headers or {})})
        answer = conn.getresponse()
        payload = json.loads(answer.read() or b"{}")
        conn.close()
        assert answer.status in (200, 201), (answer.status, payload)
        return payload["id"]

    def get(self, id):
        conn = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=60)
        conn.request("GET", f"/api/v1/public/call/{id}?workspace_id={self.ws}", headers={"Authorization": f"Bearer {self.full}"})
        answer = conn.getresponse()
        body = answer.read()
        conn.close()
        return answer.status, (json.loads(body) if answer.status == 200 else None)

    def call(self, minutes=2, seed=1, call_id=None, **fields):
        body = json.loads(self.stack.callgen("--minutes", minutes, "--seed", seed))
        if call_id:
            body["call_id"] = call_id
        body.update(fields)
        return body


@pytest.fixture(scope="module")
def viewer(stack):
    return Viewer(stack)


@pytest.fixture(scope="module")
def browser():
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        yield b
        b.close()


class Page:
    """A browser tab, recording page errors and dialogs (none may happen)."""

    def __init__(self, browser, stack):
        self.context = browser.new_context(viewport={"width": 1200, "height": 900})
        self.page = self.context.new_page()
        self.base = stack.url
        self.errors, self.dialogs = [], []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # Console errors too (a refused policy, a failed asset), but for the 401 a bad
        # credential is answered with and callgen's recordings (recordings.example.com).
        self.page.on("console", lambda m: m.type == "error" and "status of 401" not in m.text
                     and "ERR_NAME_NOT_RESOLVED" not in m.text and self.errors.append(m.text))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open(self, path):
        self.page.goto(self.base + path)
        return self.page

    def sign_in(self, token, path):
        page = self.open(path)
        page.fill("#credential", token)
        page.click("form.sign-in button[type=submit]")
        return page

    def close(self):
        self.context.close()


@pytest.fixture
def tab(browser, stack):
    t = Page(browser, stack)
    yield t
    t.close()
    assert t.dialogs == [], t.dialogs


def screenshot(page, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    page.screenshot(path=os.path.join(ARTIFACTS, name), full_page=False)


def wait_until(page, expression, timeout=20):
    """Until `expression` is true in the page. (Playwright's wait_for_function evaluates
    its predicate with eval, which the page's Content-Security-Policy refuses, as it should;
    evaluate() goes through the DevTools protocol.)"""
    deadline = time.time() + timeout
    while not page.evaluate(expression):
        assert time.time() < deadline, f"not within {timeout} s: {expression}"
        time.sleep(0.05)


def wait_for_calls(page, count):
    wait_until(page, f"document.querySelectorAll('table.calls tbody tr').length >= {count}")


# ----------------------------------------------------------------------------- the tests

def test_the_app_is_served_with_its_headers_and_the_me_endpoint_answers(stack, viewer):
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=30)
    conn.request("GET", "/app/calls/1?workspace=1")
    page = conn.getresponse()
    html = page.read().decode()
    assert page.status == 200 and page.getheader("Cache-Control") == "no-store"
    csp = page.getheader("Content-Security-Policy")
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "script-src 'self';" in csp, csp
    assert "media-src 'self' https: http://127.0.0.1:*" in csp, csp
    asset = html.split('src="', 1)[1].split('"', 1)[0]
    conn.request("GET", asset)
    js = conn.getresponse()
    js.read()
    assert js.status == 200 and "immutable" in js.getheader("Cache-Control"), asset
    conn.request("GET", "/app")
    home = conn.getresponse()
    home.read()
    assert (home.status, home.getheader("Location")) == (308, "/app/calls")
    conn.request("GET", "/api/v1/public/me", headers={"Authorization": f"Bearer {viewer.reader}"})
    me = conn.getresponse()
    everything = {"storage": "everything", "retention_days": None, "raw_retention_days": None,
                  "pii_entities": ["phone_number", "email", "credit_card", "ssn", "iban", "date_of_birth"],
                  "pii_model": None}
    assert me.status == 200 and json.loads(me.read()) | {"public_id": None} == {
        "kind": "api_key", "public_id": None, "workspaces": [viewer.ws], "scopes": ["read"],
        "data_policies": [{"workspace_id": viewer.ws, "policy": everything}]}
    conn.close()


def test_sign_in_needs_read_and_sign_out_forgets_the_credential(tab, viewer):
    page = tab.sign_in(viewer.sender, f"/app/calls?workspace={viewer.ws}")
    page.wait_for_selector("#sign-in-message .notice.error")
    assert "not read calls" in page.inner_text("#sign-in-message")
    assert page.evaluate("sessionStorage.length") == 0
    page.fill("#credential", "cik_" + "0" * 48)
    page.click("form.sign-in button[type=submit]")
    wait_until(page, "document.querySelector('#sign-in-message').innerText.includes('not valid')")

    page.fill("#credential", viewer.reader)
    page.click("form.sign-in button[type=submit]")
    page.wait_for_selector("table.calls")
    assert viewer.reader not in page.url
    assert page.evaluate("document.cookie") == ""
    assert page.evaluate("sessionStorage.getItem('call-ingest.credential')") == viewer.reader
    page.click("#sign-out")
    page.wait_for_selector("form.sign-in")
    assert page.evaluate("sessionStorage.length") == 0
    assert tab.errors == []


def test_the_list_filters_by_agent_and_date_pages_on_and_the_url_holds_the_filters(tab, viewer):
    day = 86_400_000
    base = 1_764_000_000_000 - 1_764_000_000_000 % day  # a midnight UTC
    for i in range(55):
        agent = "billing" if i % 5 == 0 else "front-desk"
        viewer.post(viewer.call(minutes=0.2, seed=100 + i, call_id=f"list-{i:02}",
                                start_timestamp=base + i * 3_600_000, end_timestamp=base + i * 3_600_000 + 12_000), agent)
    page = tab.sign_in(viewer.reader, f"/app/calls?workspace={viewer.ws}")
    wait_for_calls(page, 50)
    first = page.locator("table.calls tbody tr").first.inner_text()
    assert "list-54" in first, first
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    scrolled = page.evaluate("window.scrollY")
    page.click("#load-more")
    wait_for_calls(page, 55)
    assert page.evaluate("window.scrollY") >= scrolled - 5, "loading more keeps the position"
    ids = page.eval_on_selector_all("table.calls tbody tr td:first-child", "tds => tds.map(t => t.innerText)")
    assert [i for i in ids if i.startswith("list-")][:55] == [f"list-{i:02}" for i in range(54, -1, -1)]
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "list.png")

    page.fill("#filter-agent", "billing")
    page.click("form.filters button[type=submit]")
    wait_until(page, "document.querySelectorAll('table.calls tbody tr').length === 11")
    assert "agent=billing" in page.url
    # The same view from its URL alone, in a new tab: the URL holds the filters, never the credential.
    date = time.strftime("%Y-%m-%d", time.gmtime((base + day) / 1000))
    shared = f"/app/calls?workspace={viewer.ws}&agent=front-desk&from={date}&to={date}"
    other = tab.context.new_page()
    other.goto(tab.base + shared)
    other.wait_for_selector("form.sign-in")
    other.fill("#credential", viewer.reader)
    other.click("form.sign-in button[type=submit]")
    other.wait_for_selector(".list-status span")
    ids = other.eval_on_selector_all("table.calls tbody tr td:first-child", "tds => tds.map(t => t.innerText)")
    expected = [f"list-{i:02}" for i in range(47, 23, -1) if i % 5 != 0]
    assert ids == expected, ids
    assert other.input_value("#filter-from") == date
    assert tab.errors == []


def test_a_call_page_plays_seeks_and_shows_tools_latencies_and_nodes(tab, viewer, recording):
    body = viewer.call(minutes=2, seed=21, call_id="viewer-call", recording_url=f"{recording}/call.wav",
                       recording_multi_channel_url=f"{recording}/call-mc.wav")
    id = viewer.post(body)
    page = tab.sign_in(viewer.full, f"/app/calls/{id}?workspace={viewer.ws}")
    page.wait_for_selector(".timeline .turn")
    assert page.get_attribute("audio", "src") == f"{recording}/call-mc.wav", "the multi-channel recording"
    wait_until(page, "document.querySelector('audio').readyState >= 1")

    segments = body["transcript_with_tool_calls"]
    # A word of the second agent turn: click it, and the audio moves there.
    turn = [s for s in segments if s["role"] == "agent"][1]
    word = turn["words"][3]
    target = page.locator(f".w[data-t='{word['start_ms']}']").first
    target.scroll_into_view_if_needed()
    target.click()
    wait_until(page, f"Math.abs(document.querySelector('audio').currentTime - {word['start_ms'] / 1000}) < 0.05")
    # Playing highlights the word being said.
    page.evaluate("document.querySelector('audio').play()")
    wait_until(page, "document.querySelector('audio').currentTime > %f" % (word["start_ms"] / 1000 + 0.3))
    page.evaluate("document.querySelector('audio').pause()")
    page.wait_for_selector(".w.now")
    now = page.evaluate("Number(document.querySelector('.w.now').dataset.t)")
    at = page.evaluate("document.querySelector('audio').currentTime") * 1000
    starts = sorted(w["start_ms"] for s in segments for w in s.get("words", []))
    assert now == max(t for t in starts if t <= at), (now, at)

    # Tool calls: a card each, with parameters, result and duration.
    calls = [s for s in segments if s["role"] == "agent_function"]
    results = {s["tool"]["request_id"]: s for s in segments if s["role"] == "agent_result"}
    cards = page.locator("details.tool")
    assert cards.count() == len(calls) > 0
    card = cards.first
    card.locator("summary").click()
    first = calls[0]["tool"]
    assert card.locator(".tool-name").inner_text() == first["name"]
    texts = card.locator("pre").all_inner_texts()
    assert json.loads(texts[0]) == first["params"]
    result = results[first["request_id"]]["tool"]
    assert json.loads(texts[1]) == result["result"]
    assert card.locator(".took").inner_text().strip() == f"{result['end_ms'] - result['start_ms']} ms"

    # Latency badges show the stored numbers; the chart's p50 and p95 are theirs.
    stored = [(m, s["metadata"][m]) for s in segments if s["role"] in ("agent", "user")
              for m in ("e2e_latency", "llm_node_ttft", "tts_node_ttfb", "stt_node_ttfb") if m in s.get("metadata", {})]
    shown = page.eval_on_selector_all(".badge[data-metric]", "bs => bs.map(b => [b.dataset.metric, b.querySelector('.value').innerText])")
    assert [(m, float(v)) for m, v in shown] == stored, (shown[:5], stored[:5])
    e2e = sorted(s["metadata"]["e2e_latency"] for s in segments if "e2e_latency" in s.get("metadata", {}))
    rank = lambda p: e2e[max(0, math.ceil(p / 100 * len(e2e)) - 1)]
    assert float(page.inner_text("#p50").split()[1]) == rank(50)
    assert float(page.inner_text("#p95").split()[1]) == rank(95)

    # Node transitions are dividers.
    nodes = [s["node"] for s in segments if s["role"] == "node_transition"]
    dividers = page.locator(".node").all_inner_texts()
    assert len(dividers) == len(nodes) and all(n["from"] in d and n["to"] in d for n, d in zip(nodes, dividers))
    # The header.
    facts = page.inner_text("dl.facts")
    for expected in ("viewer-call", "front-desk", body["disconnection_reason"], body["user_sentiment"], "gpt-4.1-mini"):
        assert expected in facts, expected
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "call.png")
    assert tab.errors == []


def test_revisions_show_what_changed_and_the_raw_body_downloads(tab, viewer):
    body = viewer.call(minutes=0.5, seed=31, call_id="viewer-revised")
    id = viewer.post(body)
    revised = dict(body, user_sentiment="negative", call_status="call_transferred")
    assert viewer.post(revised) == id
    page = tab.sign_in(viewer.reader, f"/app/calls/{id}?workspace={viewer.ws}")
    page.wait_for_selector(".timeline")
    assert page.locator("#erase").count() == 0, "no Erase without the erase scope"
    page.click("#section-revisions summary")
    page.wait_for_selector("#revision-pick option[value='2']", state="attached")
    page.select_option("#revision-pick", "2")
    page.wait_for_selector("#revision-diff table.diff")
    rows = page.eval_on_selector_all("#revision-diff tr", "rs => rs.map(r => [...r.cells].map(c => c.innerText))")
    changed = {r[1]: (r[0], r[2], r[3]) for r in rows}
    assert changed["/call/user_sentiment"] == ("changed", json.dumps(body["user_sentiment"]), '"negative"'), changed
    assert changed["/call/call_status"] == ("changed", '"call_ended"', '"call_transferred"'), changed
    assert not any(p.startswith("/call/transcript_with_tool_calls") for p in changed), "only what changed"

    with page.expect_download() as download:
        page.click("#download-raw")
    path = download.value.path()
    with open(path, "rb") as f:
        assert json.loads(f.read()) == revised
    assert tab.errors == []


def test_erase_asks_first_and_the_call_leaves_the_list(tab, viewer):
    id = viewer.post(viewer.call(minutes=0.2, seed=41, call_id="viewer-erase"))
    page = tab.sign_in(viewer.full, f"/app/calls/{id}?workspace={viewer.ws}")
    page.wait_for_selector(".timeline")
    page.click("#erase")
    assert viewer.get(id)[0] == 200, "nothing erased before it is confirmed"
    page.click("#erase-confirm")
    page.wait_for_selector("table.calls")
    page.wait_for_selector(".list-status span, .list-status .notice")
    assert "viewer-erase" not in page.inner_text("table.calls")
    assert viewer.get(id)[0] == 404
    assert tab.errors == []


def test_hostile_content_renders_as_inert_text(tab, viewer):
    body = viewer.call(minutes=1, seed=51, call_id=XSS[0], recording_url=XSS[2], recording_multi_channel_url=XSS[2])
    segments = body["transcript_with_tool_calls"]
    talk = [s for s in segments if s["role"] in ("agent", "user")]
    assert len(talk) >= len(XSS)
    for s, payload in zip(talk, XSS):
        s["text"] = payload
        s["words"][0]["word"] = payload
    segments.append({"role": "agent_function", "text": "", "start_ms": 1000,
                     "tool": {"name": XSS[1], "request_id": "x1", "params": {"q": XSS[0]}, "start_ms": 1000}})
    segments.append({"role": "agent_result", "text": "", "start_ms": 1200,
                     "tool": {"name": XSS[1], "request_id": "x1", "result": {"html": XSS[1], "url": XSS[2]},
                              "is_error": False, "start_ms": 1000, "end_ms": 1200}})
    body["call_analysis"] = {"summary": XSS[0], "link": XSS[2]}
    id = viewer.post(body, agent=XSS[1])
    page = tab.sign_in(viewer.reader, f"/app/calls?workspace={viewer.ws}&agent={XSS[1]}")
    wait_for_calls(page, 1)
    assert page.locator("table.calls tbody tr").first.locator("td").nth(3).inner_text() == XSS[1]
    page.click(f"table.calls a[href*='/app/calls/{id}']")
    page.wait_for_selector(".timeline .turn")
    page.locator("details.tool summary").first.click()
    page.click("#section-analysis summary")
    page.wait_for_selector("#section-analysis pre")
    # Each payload is the whole text of an element: shown as it was sent, bidi marks too.
    texts = page.evaluate("() => [...document.querySelectorAll('main *')].map(e => e.textContent)")
    for payload in XSS:
        assert payload in texts, payload
    # The bidi overrides are isolated: every element that holds one alone is `unicode-bidi: isolate`.
    bidi = page.evaluate("""b => [...document.querySelectorAll('main *')].filter(e => e.textContent === b)
                                     .map(e => getComputedStyle(e).unicodeBidi)""", XSS[3])
    assert bidi and set(bidi) == {"isolate"}, bidi
    assert XSS[0] in page.inner_text("#section-analysis pre")
    assert page.locator("audio").count() == 0, "a javascript: URL is no source"
    hrefs = page.eval_on_selector_all("body [href], body [src]", "es => es.map(e => e.getAttribute('href') || e.getAttribute('src'))")
    assert not [h for h in hrefs if not h.startswith(("/", "http"))], hrefs
    assert page.locator("main script, main img, main iframe").count() == 0
    assert page.evaluate("window.__pwned") is None
    screenshot(page, "hostile.png")
    assert tab.errors == [], tab.errors


def test_a_redacted_call_shows_its_values_as_redacted_and_its_data_policy(tab, viewer):
    body = viewer.call(minutes=1, seed=61, call_id="viewer-redacted")
    user = next(s for s in body["transcript_with_tool_calls"] if s["role"] == "user" and s.get("words"))
    said = "my number is (628) 555-0147 and my email is ada@example.com"
    start = user["words"][0]["start_ms"]
    user["text"] = said
    user["words"] = [{"word": w, "start_ms": start + 300 * i, "end_ms": start + 300 * i + 250}
                     for i, w in enumerate(said.split())]
    id = viewer.post(body, headers={"X-Data-Policy": "redacted"})
    page = tab.sign_in(viewer.reader, f"/app/calls/{id}?workspace={viewer.ws}")
    page.wait_for_selector(".timeline .redacted")
    kinds = page.eval_on_selector_all(".timeline .redacted", "es => es.map(e => [e.dataset.kind, e.textContent])")
    assert ["phone_number", "phone number"] in kinds and ["email", "e-mail"] in kinds, kinds
    # The redacted words keep their timing: each pill is inside its word, which seeks the recording.
    assert page.eval_on_selector_all(".timeline .w > .redacted", "es => es.length") >= 2
    facts = page.inner_text("main")
    assert "Data policy" in facts and "redacted (phone_number, email, credit_card, ssn, iban, date_of_birth)" in facts
    assert "555-0147" not in facts and "ada@example.com" not in facts
    page.locator(".timeline .redacted").first.scroll_into_view_if_needed()
    screenshot(page, "redacted.png")
    assert page.locator("header .policy").count() == 0, "the viewer's workspace keeps everything"

    # A workspace that keeps metadata only says so in the header, and its call page says what was not kept.
    stack = viewer.stack
    ws = stack.ctl("workspace", "create", "--name", "viewer-metadata")["id"]
    stack.ctl("workspace", "policy", "--id", ws, "--storage", "metadata_only")
    stack.ctl("agent", "create", "--workspace", ws, "--remote-id", "front-desk", "--name", "viewer agent")
    key = stack.ctl("key", "create", "--workspace", ws, "--name", "viewer", "--scope", "send", "--scope", "read")["token"]
    posted = request("POST", f"{stack.url}/api/v1/public/call?workspace_id={ws}&agent_remote_identifier=front-desk",
                     json.dumps(viewer.call(minutes=1, seed=62, call_id="viewer-metadata")).encode(),
                     {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    assert posted.status == 201, posted
    page.click("header button:has-text('Sign out')")
    page = tab.sign_in(key, f"/app/calls/{posted.body['id']}?workspace={ws}")
    page.wait_for_selector("header .policy")
    assert page.inner_text("header .policy") == "metadata only"
    page.wait_for_selector("h1")
    main = page.inner_text("main")
    assert "metadata only ·" in main and "words were not kept" in main and "kept as metadata only" in main
    screenshot(page, "metadata-only.png")
    assert tab.errors == [], tab.errors


@pytest.mark.parametrize("minutes", [2, 10, 60])
def test_first_screen_times(tab, viewer, minutes):
    id = viewer.post(viewer.call(minutes=minutes, seed=60 + minutes, call_id=f"viewer-{minutes}min"))
    page = tab.sign_in(viewer.reader, f"/app/calls?workspace={viewer.ws}")
    page.wait_for_selector("table.calls")
    times = []
    for _ in range(3):
        page.goto(f"{tab.base}/app/calls/{id}?workspace={viewer.ws}")
        page.wait_for_selector(".timeline .turn")
        times.append(page.evaluate("performance.getEntriesByName('call-first-screen')[0].startTime"))
    record(f"{minutes}-minute call", times)
    assert tab.errors == []


def record(what, times):
    os.makedirs(ARTIFACTS, exist_ok=True)
    with open(os.path.join(ARTIFACTS, "first-screen.txt"), "a") as f:
        f.write(f"{what}: first screen {sorted(times)[len(times) // 2]:.0f} ms (median of {[round(t) for t in times]})\n")


def test_the_largest_call_stays_usable(tab, viewer):
    body = json.loads(viewer.stack.callgen("--bytes", 25_000_000, "--seed", 25))
    body["call_id"] = "viewer-25mb"
    id = viewer.post(body)
    items = len(body["transcript_with_tool_calls"])
    page = tab.sign_in(viewer.reader, f"/app/calls?workspace={viewer.ws}")
    page.wait_for_selector("table.calls")
    answers = []
    page.on("response", lambda r: f"/call/{id}" in r.url and "/trace" not in r.url and answers.append((r.status, r.headers.get("content-encoding"))))
    times = []
    for _ in range(2):
        page.goto(f"{tab.base}/app/calls/{id}?workspace={viewer.ws}")
        page.wait_for_selector(".timeline .turn", timeout=60000)
        times.append(page.evaluate("performance.getEntriesByName('call-first-screen')[0].startTime"))
    record(f"{len(json.dumps(body)) / 1e6:.1f} MB call ({items} segments)", times)
    assert answers and all(a == (206, "gzip") for a in answers), answers
    assert len(answers) == 2 * 3, "three parts of at most 12 MiB, each gzip-compressed, per load"
    # Virtualised: a few blocks of the timeline hold elements, not every turn.
    drawn = page.locator(".timeline [data-item]").count()
    assert 0 < drawn < 400 < items, (drawn, items)
    # The end of the call draws when it is reached.
    page.evaluate("document.querySelector('.timeline').lastElementChild.scrollIntoView()")
    wait_until(page, f"document.querySelector('[data-item=\"{items - 1}\"]') !== null "
                     f"|| document.querySelectorAll('.timeline [data-item]').length > 0 && "
                     f"Math.max(...[...document.querySelectorAll('.timeline [data-item]')].map(e => +e.dataset.item)) > {items // 2}")
    assert page.locator(".timeline [data-item]").count() < 400
    assert tab.errors == []


# ----------------------------------------------------------------------------- traces (issue 31)

def traced_call(recording):
    """A call whose turns have text with case and punctuation and their word timings, and
    the pipecat spans of its two agent turns (OTLP JSON), offsets from the call's start."""
    start_ms = 1_763_700_000_000
    words = lambda text, at: [{"word": w.strip(",.!?").lower(), "start_ms": at + 300 * i, "end_ms": at + 300 * i + 250}
                              for i, w in enumerate(text.split())]
    said = [("user", "Hi, I'd like my ORDER status!", 0), ("agent", "Sure. It's on its way, Dana.", 2_400),
            ("user", "Great, thanks!", 6_000), ("agent", "You're welcome; goodbye!", 8_200)]
    segments = [{"role": r, "text": t, "start_ms": at, "end_ms": at + 300 * len(t.split()), "words": words(t, at)}
                for r, t, at in said]
    body = {"call_id": "viewer-traced", "call_type": "phone_call", "start_timestamp": start_ms,
            "end_timestamp": start_ms + 12_000, "recording_url": f"{recording}/traced.wav",
            "transcript_with_tool_calls": segments}

    def span(sid, parent, name, at, took, **attributes):
        values = [{"key": k.replace("__", "."), "value": {"doubleValue": v} if isinstance(v, float) else {"stringValue": v}}
                  for k, v in attributes.items()]
        values.append({"key": "conversation.id", "value": {"stringValue": "viewer-traced"}})
        s = {"traceId": "cd" * 16, "spanId": f"{sid:016x}", "name": name, "kind": 1,
             "startTimeUnixNano": str((start_ms + at) * 1_000_000), "endTimeUnixNano": str((start_ms + at + took) * 1_000_000),
             "attributes": values}
        if parent:
            s["parentSpanId"] = f"{parent:016x}"
        return s

    spans = [span(1, None, "conversation", 0, 12_000),
             span(2, 1, "turn", 1_500, 3_000, turn__user_bot_latency_seconds=0.9),
             span(3, 2, "stt", 1_500, 300, gen_ai__operation__name="stt", metrics__ttfb=0.12),
             span(4, 2, "llm", 1_800, 500, gen_ai__operation__name="chat", metrics__ttfb=0.35),
             span(5, 2, "llm_tool_call", 1_900, 200, tool__function_name="lookup_order"),
             span(6, 2, "tts", 2_300, 1_800, gen_ai__operation__name="tts", metrics__ttfb=0.2),
             span(7, 1, "turn", 7_500, 2_500, turn__user_bot_latency_seconds=0.6),
             span(8, 7, "stt", 7_500, 200, gen_ai__operation__name="stt", metrics__ttfb=0.1),
             span(9, 7, "llm", 7_700, 300, gen_ai__operation__name="chat", metrics__ttfb=0.25),
             span(10, 7, "tts", 8_000, 1_500, gen_ai__operation__name="tts", metrics__ttfb=0.18)]
    export = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "pipecat"}, "spans": spans}]}]}
    return body, export


def test_a_traced_call_shows_each_turns_waterfall_the_latency_breakdown_and_its_text_as_sent(tab, viewer, recording):
    body, export = traced_call(recording)
    id = viewer.post(body)
    conn = http.client.HTTPConnection("127.0.0.1", viewer.stack.port, timeout=30)
    conn.request("POST", "/otel/v1/traces", json.dumps(export).encode(),
                 {"Authorization": f"Bearer {viewer.sender}", "Content-Type": "application/json"})
    assert conn.getresponse().status == 200
    conn.close()
    deadline = time.time() + 30
    while True:  # commit-pending indexes the batch (the queue)
        conn = http.client.HTTPConnection("127.0.0.1", viewer.stack.port, timeout=30)
        conn.request("GET", f"/api/v1/public/call/{id}/trace?workspace_id={viewer.ws}", headers={"Authorization": f"Bearer {viewer.reader}"})
        table = json.loads(conn.getresponse().read())
        conn.close()
        if len(table.get("turns", [])) == 2:
            break
        assert time.time() < deadline, table
        time.sleep(0.3)

    page = tab.sign_in(viewer.reader, f"/app/calls/{id}?workspace={viewer.ws}")
    page.wait_for_selector(".waterfall")
    # Each agent turn shows its trace turn's waterfall: a bar per step, in order, to one
    # scale (a bar's width is its duration, in every turn).
    falls = page.locator(".turn.agent .waterfall")
    assert falls.count() == 2
    bars = [falls.nth(i).locator("rect.step").evaluate_all(
        "rs => rs.map(r => [r.dataset.kind, Number(r.dataset.duration), r.getBBox().width, r.getBBox().x])") for i in range(2)]
    assert [b[0] for b in bars[0]] == ["stt", "llm", "tool", "tts"] and [b[0] for b in bars[1]] == ["stt", "llm", "tts"]
    per_ms = [width / ms for b in bars for _, ms, width, _ in b]
    assert max(per_ms) - min(per_ms) < 0.01 * max(per_ms), per_ms
    assert [x for *_, x in bars[0]] == sorted(x for *_, x in bars[0]), "from the turn's start, as they ran"
    # The breakdown: a stacked bar per turn, labelled axes, the caller's wait and its percentiles.
    chart = page.locator(".latency-breakdown")
    assert chart.locator(".turn-bar").count() == 2
    labels = chart.locator(".axis-label").all_text_contents()
    assert labels == ["latency (ms)", "turn"], labels
    stacked = chart.locator(".turn-bar").first.locator("rect").evaluate_all("rs => rs.map(r => [r.dataset.kind, Number(r.dataset.ms)])")
    assert stacked == [["stt", 120], ["llm", 350], ["tool", 200], ["tts", 200]], stacked
    assert page.inner_text("#wait-p50") == "p50 600 ms" and page.inner_text("#wait-p95") == "p95 900 ms"
    # The text as sent, its words highlighted as the audio plays.
    first = page.locator(".turn.user .words").first
    assert first.inner_text() == "Hi, I'd like my ORDER status!"
    order = first.locator(".w", has_text="ORDER")
    order.click()
    wait_until(page, "Math.abs(document.querySelector('audio').currentTime - 1.2) < 0.05")
    page.evaluate("document.querySelector('audio').play()")
    wait_until(page, "document.querySelector('audio').currentTime > 1.6")
    page.evaluate("document.querySelector('audio').pause()")
    now = page.inner_text(".w.now")
    at = page.evaluate("document.querySelector('audio').currentTime") * 1000
    spoken = [(w["start_ms"], t) for s in body["transcript_with_tool_calls"] for w, t in zip(s["words"], s["text"].split())]
    assert now == max((s, t) for s, t in spoken if s <= at)[1], (now, at)
    page.locator(".latency-breakdown").scroll_into_view_if_needed()
    screenshot(page, "trace.png")
    assert tab.errors == []
