// Verifies events with the npm `standardwebhooks` library (the reference implementation's
// JavaScript one), for tests/e2e/test_events_delivered.py: each line of stdin is
// {"secret", "body", "headers"}; each line of stdout what the library made of it,
// {"ok": true, "event": …} or {"ok": false, "error": "…"}.
import { createInterface } from "node:readline";
import { Webhook } from "standardwebhooks";

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { secret, body, headers } = JSON.parse(line);
  try {
    const event = new Webhook(secret).verify(body, headers);
    console.log(JSON.stringify({ ok: true, event }));
  } catch (e) {
    console.log(JSON.stringify({ ok: false, error: String(e && e.message || e) }));
  }
}
