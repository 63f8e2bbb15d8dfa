"""The local stack's stand-in for AWS Comprehend's `DetectPiiEntities` (JSON 1.1,
`X-Amz-Target: Comprehend_20171127.DetectPiiEntities`), served by the fault layer
(devstack/faults.py) after IAM's check, as moto serves DynamoDB and S3. moto's own Comprehend
answers canned entities whatever the text; this one reads it, so a test can plant a name
and an address and find them gone.

Not a model: it finds `NAME` as a capitalised word of a fixed list of first names, with the
capitalised word after it (a surname), and `ADDRESS` as a number followed by capitalised words
ending in a street suffix (and a town after a comma). Offsets count characters, as
Comprehend's do. AWS's limits and refusals: 100 KB of UTF-8 text at most
(TextSizeLimitExceededException), `en` and `es` only (UnsupportedLanguageException)."""
import json
import re

FIRST_NAMES = {
    "margaret", "james", "maria", "john", "robert", "patricia", "jennifer", "michael", "linda", "david",
    "elizabeth", "william", "barbara", "richard", "susan", "joseph", "jessica", "thomas", "sarah", "charles",
    "karen", "daniel", "nancy", "matthew", "lisa", "anthony", "betty", "mark", "sandra", "donald", "ashley",
    "steven", "kimberly", "paul", "emily", "andrew", "donna", "joshua", "michelle", "kenneth", "carol",
    "kevin", "amanda", "brian", "melissa", "george", "deborah", "timothy", "stephanie", "ronald", "rebecca",
    "jose", "carmen", "luis", "lucia", "javier", "sofia", "ana", "diego", "isabel", "priya", "wei", "aisha",
}
SUFFIXES = r"(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Calle|Avenida)"
WORD = r"[A-ZÁÉÍÓÚÑ][a-záéíóúñ'’-]+"
NAME = re.compile(rf"\b({WORD})(?:\s+({WORD}))?")
ADDRESS = re.compile(rf"\b\d{{1,6}}\s+(?:{WORD}\s+){{0,3}}{SUFFIXES}\b\.?(?:,\s*{WORD}(?:\s+{WORD})?)?")
MAX_BYTES = 100_000
TARGET = "Comprehend_20171127."


def entities(text):
    """The entities of `text`, as DetectPiiEntities answers them (character offsets)."""
    found = []
    for m in ADDRESS.finditer(text):
        found.append({"Score": 0.9991, "Type": "ADDRESS", "BeginOffset": m.start(), "EndOffset": m.end()})
    taken = [(e["BeginOffset"], e["EndOffset"]) for e in found]
    for m in NAME.finditer(text):
        if m.group(1).lower() not in FIRST_NAMES or any(a <= m.start() < b for a, b in taken):
            continue
        found.append({"Score": 0.9987, "Type": "NAME", "BeginOffset": m.start(), "EndOffset": m.end()})
    return sorted(found, key=lambda e: e["BeginOffset"])


def answer(op, body):
    """(status, JSON) of Comprehend's answer to `op` with request `body` (bytes)."""
    def refuse(kind, message):
        return 400, {"__type": kind, "Message": message}

    if op != "DetectPiiEntities":
        return refuse("InvalidRequestException", f"the local Comprehend answers DetectPiiEntities only, not {op}")
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return refuse("InvalidRequestException", "the body is not JSON")
    text, language = request.get("Text"), request.get("LanguageCode")
    if not isinstance(text, str) or not text:
        return refuse("InvalidRequestException", "1 validation error detected: Value at 'text' failed to satisfy "
                                                 "constraint: Member must have length greater than or equal to 1")
    if len(text.encode("utf-8")) > MAX_BYTES:
        return refuse("TextSizeLimitExceededException", "Input text size exceeds limit. Max length of request text "
                                                        "allowed is 100000 bytes")
    if language not in ("en", "es"):
        return refuse("UnsupportedLanguageException", f"{language} is not a supported language for this API")
    return 200, {"Entities": entities(text)}
