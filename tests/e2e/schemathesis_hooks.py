"""Schemathesis hooks for tests/e2e/test_schemathesis.py (named in schemathesis.toml).

* The readers of one call (getCall, its revisions and raw body) read the call the test
  stored (ST_CALL_ID): generated ids would all be 404. Set here rather than as a fixed
  parameter in schemathesis.toml: Schemathesis then knows the request carries a valid id,
  and does not expect a request it generated with `id: 0` (then sent with the stored id) to
  be rejected.
* Schemathesis picks `Content-Encoding` from the document's enum but sends the body as it
  generated it, uncompressed: a `gzip` request would always be 400 `bad-encoding` and its
  body never validated nor stored. Requests that say `gzip` / `x-gzip` are sent with their
  body gzip-compressed, as a client would send them. (`zstd` stays uncompressed, 400: the
  standard library has no zstd before Python 3.14.) The curl commands Schemathesis prints
  show the body uncompressed.
"""
import gzip
import json
import os

import schemathesis

READERS_BY_ID = {"getCall", "listCallRevisions", "getCallRevision", "getCallRaw"}


def _encoding(case):
    for name, value in (case.headers or {}).items():
        if name.lower() == "content-encoding" and isinstance(value, str):
            return value.strip().lower()
    return None


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.schema.get_operation_id(case.operation) in READERS_BY_ID:
        case.path_parameters = {**(case.path_parameters or {}), "id": int(os.environ["ST_CALL_ID"])}
    if _encoding(case) in ("gzip", "x-gzip") and "json" in (case.media_type or ""):
        try:
            raw = json.dumps(case.body, allow_nan=False).encode()
        except (TypeError, ValueError):
            return  # no generated body (NOT_SET) or not JSON: sent as generated
        kwargs["data"] = gzip.compress(raw)
