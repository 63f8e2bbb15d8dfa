"""IAM for the local stack: each DynamoDB, S3, SQS and KMS request a function instance makes
is checked against that function's own `Policies` in template.yaml, and refused in the wire
shape AWS refuses it with. moto checks nothing of the kind; devstack.faults calls this first
for every request once `POST /_faults/iam` configured it.

Who asks: devstack.gateway gives each function instance the access key id `fn.<binary>.<n>`,
which SigV4 carries in `Credential=` (a presigned URL in `X-Amz-Credential`). Any other key
(`local`: callctl, the tests, the stack's own set-up, the queues' pollers) and an unsigned
request are the administrator: unrestricted. A `fn.` key whose binary the template does not
define may do nothing.

What is evaluated, as AWS evaluates a role's identity-based policies:
  * each request becomes the authorisations AWS checks (`authorisations`): action, resource
    ARN, condition keys. DynamoDB: the table's ARN (an index's own for Query/Scan on it),
    one per table for BatchGetItem/BatchWriteItem, one per item for TransactWriteItems
    (PutItem/UpdateItem/DeleteItem/ConditionCheckItem) and TransactGetItems (GetItem),
    `dynamodb:LeadingKeys` the partition key values touched. S3: object ARNs with the
    decoded key; CopyObject s3:PutObject on the target and s3:GetObject on the source;
    DeleteObjects s3:DeleteObject per key; listing s3:ListBucket with `s3:prefix`. SQS: the
    queue's ARN (the batch operations as their single ones, as AWS). KMS: the key's ARN
    (aliases resolved), `kms:EncryptionContextKeys`, `kms:EncryptionContext:<k>`.
  * every authorisation must be allowed: an explicit Deny wins, then an Allow whose
    Action/NotAction, Resource/NotResource and Condition all match; nothing else allows.
    Wildcards `*` and `?`; actions compared case-insensitively, resources case-sensitively.
  * conditions: String(Not)Equals[IgnoreCase], String(Not)Like, Bool, Null, `...IfExists`,
    the ForAllValues:/ForAnyValue: qualifiers; keys dynamodb:LeadingKeys, s3:prefix,
    kms:EncryptionContextKeys, kms:EncryptionContext:<k>, aws:SecureTransport (true: plain
    HTTP here stands for AWS's TLS). Any other operator or key fails closed: an Allow that
    needs it allows nothing, a Deny that has it denies; the log and the layer's
    `GET /_faults/iam` ("problems") say so, as they do for references that do not resolve.
  * S3 answers a missing object 403 (not 404) to a caller without s3:ListBucket on the
    bucket (devstack.faults does it with `missing_object_denial`).

Why not moto's evaluator (moto/iam/access_control.py, moto 5.2): it turns `*` into a regular
expression without escaping the rest, compares actions case-sensitively, turns an Allow whose
condition does not hold into a Deny (send-call-data could never take ids: WriteCalls'
`CALL#*` condition fails on `COUNTER` and would override TakeIds), and skips operators it does
not know (all but StringEquals: it fails open). Nothing there was worth reusing.

What AWS does that this does not:
  * resource-based policies (the bucket's TlsOnly Deny, the queue policy, the key policy:
    it grants the account, so the role's policy decides, as here), permission boundaries,
    SCPs, session policies, signature checks;
  * the managed policies SAM adds (AWSLambdaBasicExecutionRole: logs; for an SQS event
    AWSLambdaSQSQueueExecutionRole, i.e. the event source mapping's polling, which
    devstack.queues does with the administrator's key); managed policy names and SAM policy
    templates (`DynamoDBReadPolicy: ...`) in `Policies` allow nothing and are reported;
  * condition keys not listed above (dynamodb:Attributes, aws:SourceIp, ...), policy
    variables (`${aws:username}`), Numeric/Date/IpAddress/Arn operators: they deny;
  * `dynamodb:LeadingKeys` where the partition key value cannot be told (Scan; a Query
    whose key condition has no `<hash key> = :v`; a table or index the template does not
    define): the key is absent and, as in AWS, ForAllValues over an absent key is true;
  * PartiQL (AWS checks dynamodb:PartiQL*; here `dynamodb:ExecuteStatement`, which no
    statement names), virtual-hosted-style S3 requests, S3 sub-resources other than those
    in the tables below (`s3:Unsupported`, denied).
"""
import base64
import functools
import json
import logging
import os
import re
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

from devstack.wire import s3_operation

ACCOUNT = "123456789012"  # moto's account, whatever the access key
TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "template.yaml")
# The functions' own default when HOOK_KEY_ID is unset (shared/store/src/config.rs).
DEFAULT_KEYS = {"HOOK_KEY_ID": "alias/call-ingest-webhooks"}
FUNCTION_KEY = re.compile(r"fn\.(.+?)(?:\.(\d+))?")
CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/([^/]+)/")
TARGETS = {"DynamoDB_20120810": "dynamodb", "AmazonSQS": "sqs", "TrentService": "kms",
           "Comprehend_20171127": "comprehend"}
MULTIVALUED = {"dynamodb:leadingkeys", "kms:encryptioncontextkeys"}
KNOWN_KEYS = MULTIVALUED | {"s3:prefix", "aws:securetransport"}
# As AWS authorises them: the batch operations of SQS as their single ones.
SQS_ACTIONS = {"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage",
               "ChangeMessageVisibilityBatch": "ChangeMessageVisibility"}
# S3 sub-resources (query parameters) and the action each method needs.
S3_BUCKET_SUBRESOURCES = {
    "notification": {"GET": "GetBucketNotification", "PUT": "PutBucketNotification"},
    "policy": {"GET": "GetBucketPolicy", "PUT": "PutBucketPolicy", "DELETE": "DeleteBucketPolicy"},
    "acl": {"GET": "GetBucketAcl", "PUT": "PutBucketAcl"},
    "cors": {"GET": "GetBucketCORS", "PUT": "PutBucketCORS", "DELETE": "PutBucketCORS"},
    "lifecycle": {"GET": "GetLifecycleConfiguration", "PUT": "PutLifecycleConfiguration",
                  "DELETE": "PutLifecycleConfiguration"},
    "tagging": {"GET": "GetBucketTagging", "PUT": "PutBucketTagging", "DELETE": "PutBucketTagging"},
    "versioning": {"GET": "GetBucketVersioning", "PUT": "PutBucketVersioning"},
    "encryption": {"GET": "GetEncryptionConfiguration", "PUT": "PutEncryptionConfiguration",
                   "DELETE": "PutEncryptionConfiguration"},
    "publicAccessBlock": {"GET": "GetBucketPublicAccessBlock", "PUT": "PutBucketPublicAccessBlock",
                          "DELETE": "PutBucketPublicAccessBlock"},
    "ownershipControls": {"GET": "GetBucketOwnershipControls", "PUT": "PutBucketOwnershipControls",
                          "DELETE": "PutBucketOwnershipControls"},
    "location": {"GET": "GetBucketLocation"},
    "uploads": {"GET": "ListBucketMultipartUploads"},
    "versions": {"GET": "ListBucketVersions"},
    "delete": {"POST": "DeleteObject"},  # DeleteObjects: per key, below
}
S3_OBJECT_SUBRESOURCES = {
    "tagging": {"GET": "GetObjectTagging", "PUT": "PutObjectTagging", "DELETE": "DeleteObjectTagging"},
    "acl": {"GET": "GetObjectAcl", "PUT": "PutObjectAcl"},
    "attributes": {"GET": "GetObjectAttributes"},
    "uploadId": {"GET": "ListMultipartUploadParts", "DELETE": "AbortMultipartUpload", "PUT": "PutObject",
                 "POST": "PutObject"},
    "uploads": {"POST": "PutObject"},
}
# Parameters that select nothing (a listing's, a read's, the SDKs' own).
S3_PLAIN_PARAMETERS = {"prefix", "delimiter", "list-type", "max-keys", "continuation-token", "start-after",
                       "encoding-type", "fetch-owner", "marker", "x-id", "versionId", "partNumber"}
# Reads whose 404 S3 turns into a 403 for a caller without s3:ListBucket on the bucket.
S3_READS = {"GetObject", "HeadObject"}

log = logging.getLogger("devstack.iam")
_reported = set()


def report_once(message):
    if message not in _reported:
        _reported.add(message)
        log.warning("IAM: %s", message)


class Unresolved(Exception):
    """A template value that names nothing local."""


class Unsupported(Exception):
    """A condition this evaluator cannot decide: it fails closed."""


class Authorisation(NamedTuple):
    action: str
    resource: str
    context: dict = {}  # lower-case condition key -> list of values; an absent key is absent


class Denial(NamedTuple):
    binary: str
    action: str
    resource: str
    explicit: bool = False  # an explicit Deny, rather than no Allow
    reason: str = ""  # what the evaluator could not decide, when that is why

    def principal(self, account=ACCOUNT):
        return f"arn:aws:sts::{account}:assumed-role/{self.binary}-role/{self.binary}"

    def message(self, quote_resource=False):
        resource = f'"{self.resource}"' if quote_resource else self.resource
        why = ("with an explicit deny in an identity-based policy" if self.explicit
               else f"because no identity-based policy allows the {self.action} action")
        return f"User: {self.principal()} is not authorized to perform: {self.action} on resource: {resource} {why}"


# requests --------------------------------------------------------------------------------
@dataclass
class Request:
    """An HTTP request as a service receives it: the path decoded, header names in lower case."""
    method: str
    path: str
    query: str
    headers: dict
    body: bytes = b""

    @classmethod
    def from_environ(cls, environ, body):
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        path = environ.get("PATH_INFO", "")
        try:  # WSGI: the decoded path's UTF-8 bytes as latin-1 characters
            path = path.encode("latin-1").decode("utf-8")
        except UnicodeError:
            pass
        return cls(environ["REQUEST_METHOD"], path, environ.get("QUERY_STRING", ""), headers, body)

    @classmethod
    def from_url(cls, method, url, headers, body=b""):
        parts = urlsplit(url)
        headers = {k.lower(): v.decode() if isinstance(v, bytes) else v for k, v in headers.items()}
        body = body.encode() if isinstance(body, str) else (body or b"")
        return cls(method, unquote(parts.path), parts.query, headers, body)

    def environ(self):
        """The WSGI environ devstack.faults' helpers read."""
        env = {"REQUEST_METHOD": self.method, "PATH_INFO": self.path, "QUERY_STRING": self.query,
               "HTTP_AUTHORIZATION": self.headers.get("authorization", "")}
        if "x-amz-copy-source" in self.headers:
            env["HTTP_X_AMZ_COPY_SOURCE"] = self.headers["x-amz-copy-source"]
        return env

    def parameters(self):
        return dict(parse_qsl(self.query, keep_blank_values=True))

    def credential(self):
        """(access key id, region, service) the request is signed with, or Nones."""
        m = CREDENTIAL.search(self.headers.get("authorization", ""))
        if m:
            return m.groups()
        scope = self.parameters().get("X-Amz-Credential", "").split("/")
        return (scope[0], scope[2], scope[3]) if len(scope) >= 4 else (None, None, None)

    def target(self):
        """(service, operation) of an `X-Amz-Target` request, or ("", "")."""
        prefix, _, op = self.headers.get("x-amz-target", "").partition(".")
        return TARGETS.get(prefix, ""), op

    def service(self):
        return self.credential()[2] or self.target()[0]

    def json(self):
        try:
            value = json.loads(self.body or b"{}")
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


def function_of(access_key):
    """The binary a function instance's access key id names, or None (an administrator)."""
    if not access_key or not access_key.startswith("fn."):
        return None
    return FUNCTION_KEY.fullmatch(access_key).group(1)


# the template -----------------------------------------------------------------------------
class Statement:
    def __init__(self, spec, resolve, where, problems):
        self.sid = spec.get("Sid", "")
        self.effect = spec.get("Effect", "Deny")
        self.actions = as_list(spec.get("Action")) if "Action" in spec else None
        self.not_actions = as_list(spec.get("NotAction"))
        self.broken = None  # why this statement cannot be decided
        self.resources = []
        for value in as_list(spec.get("Resource")):
            try:
                self.resources.append(resolve(value))
            except Unresolved as e:
                problems.append(f"{where}: {e}: that resource matches nothing")
                report_once(f"{e}: the statements naming it match nothing")
        self.not_resources = None
        if "NotResource" in spec:
            try:
                self.not_resources = [resolve(v) for v in as_list(spec["NotResource"])]
            except Unresolved as e:
                self.broken = f"{where}: NotResource: {e}"
        try:
            self.conditions = {op: {k: [scalar(resolve(v)) for v in as_list(vs)] for k, vs in keys.items()}
                               for op, keys in (spec.get("Condition") or {}).items()}
        except (Unresolved, AttributeError) as e:
            self.conditions, self.broken = {}, f"{where}: Condition: {e}"
        if self.broken:
            problems.append(self.broken)
            report_once(self.broken)
        for op, keys in self.conditions.items():  # what evaluation would find it cannot decide
            for key, wanted in keys.items():
                try:
                    condition_holds(op, key.lower(), wanted, {key.lower(): [""]})
                except Unsupported as e:
                    problems.append(f"{where}: {e}: fails closed")
                    report_once(problems[-1])

    def concerns(self, action, resource):
        if self.actions is not None:
            acts = any(like(p, action, True) for p in self.actions)
        else:
            acts = not any(like(p, action, True) for p in self.not_actions)
        if self.not_resources is not None:
            return acts and not any(like(p, resource) for p in self.not_resources)
        return acts and any(like(p, resource) for p in self.resources)

    def holds(self, context):
        if self.broken:
            raise Unsupported(self.broken)
        return all(condition_holds(op, key.lower(), wanted, context)
                   for op, keys in self.conditions.items() for key, wanted in keys.items())


def as_list(value):
    return [] if value is None else value if isinstance(value, list) else [value]


def scalar(value):
    return str(value).lower() if isinstance(value, bool) else str(value)


@functools.lru_cache(maxsize=4096)
def wildcard(pattern, ignore_case):
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.S | (re.I if ignore_case else 0))


def like(pattern, value, ignore_case=False):
    return wildcard(pattern, ignore_case).fullmatch(value) is not None


def string_test(compare, negated):
    def test(value, wanted):
        return any(compare(value, w) for w in wanted) != negated
    test.negated = negated
    return test


OPERATORS = {
    "StringEquals": string_test(lambda v, w: v == w, False),
    "StringNotEquals": string_test(lambda v, w: v == w, True),
    "StringEqualsIgnoreCase": string_test(lambda v, w: v.lower() == w.lower(), False),
    "StringNotEqualsIgnoreCase": string_test(lambda v, w: v.lower() == w.lower(), True),
    "StringLike": string_test(lambda v, w: like(w, v), False),
    "StringNotLike": string_test(lambda v, w: like(w, v), True),
    "Bool": string_test(lambda v, w: v.lower() == w.lower(), False),
}


def condition_holds(operator, key, wanted, context):
    """Whether one `operator: {key: wanted}` holds for the request's `context`."""
    if key not in KNOWN_KEYS and not key.startswith("kms:encryptioncontext:"):
        raise Unsupported(f"condition key {key} is not emulated")
    if any("${" in w for w in wanted):
        raise Unsupported(f"policy variables ({key}: {wanted}) are not emulated")
    qualifier, _, base = operator.rpartition(":")
    if_exists = base.endswith("IfExists") and base != "Null"
    base = base.removesuffix("IfExists") if if_exists else base
    values = context.get(key)
    if base == "Null" and not qualifier:
        return any((values is None) == (w.lower() == "true") for w in wanted)
    test = OPERATORS.get(base)
    if test is None or qualifier not in ("", "ForAllValues", "ForAnyValue"):
        raise Unsupported(f"condition operator {operator} is not emulated")
    if values is None:
        # ForAllValues over nothing is true (AWS's own caveat); a negated operator is true too.
        return if_exists or qualifier == "ForAllValues" or (not qualifier and test.negated)
    if qualifier == "ForAllValues":
        return all(test(v, wanted) for v in values)
    if qualifier == "ForAnyValue":
        return any(test(v, wanted) for v in values)
    if key in MULTIVALUED:
        raise Unsupported(f"{operator} on {key}, which has several values: ForAllValues/ForAnyValue")
    return test(values[0], wanted)


class Policies:
    """The template's functions' statements, resolved to the local resources' names.

    `resources`: logical id -> local physical name (a KMS key: its id or ARN); `aliases`:
    KMS alias name -> key id, for requests that name a key by its alias."""

    def __init__(self, template, resources, region="us-east-1", account=ACCOUNT, stack_name="call-ingest",
                 aliases=None):
        self.template = template
        self.resources = dict(resources)
        self.region, self.account, self.stack_name = region, account, stack_name
        self.aliases = {alias_name(k): v for k, v in (aliases or {}).items()}
        self.problems = []
        self.statements = {}
        for logical, r in template.get("Resources", {}).items():
            if r.get("Type") == "AWS::Serverless::Function":
                binary = r["Metadata"]["BuildProperties"]["Binary"]
                self.statements[binary] = self.function_statements(logical, r.get("Properties", {}).get("Policies"))
        self.hash_keys = self.table_hash_keys()

    @classmethod
    def from_spec(cls, spec):
        """Policies as `POST /_faults/iam` describes them (the template re-read from its path)."""
        import yaml

        with open(spec.get("template") or TEMPLATE) as f:
            template = yaml.safe_load(f)
        return cls(template, spec.get("resources", {}), spec.get("region", "us-east-1"),
                   spec.get("account", ACCOUNT), spec.get("stack_name", "call-ingest"), spec.get("aliases"))

    def functions(self):
        return sorted(self.statements)

    def function_statements(self, logical, policies):
        found = []
        for i, policy in enumerate(as_list(policies)):
            where = f"{logical}.Policies[{i}]"
            if isinstance(policy, dict) and "Statement" in policy:
                for j, spec in enumerate(as_list(policy["Statement"])):
                    found.append(Statement(spec, self.resolve, f"{where}.Statement[{j}] {spec.get('Sid', '')}",
                                           self.problems))
            else:
                what = next(iter(policy)) if isinstance(policy, dict) and policy else policy
                self.problems.append(f"{where}: {what!r} (a managed policy or SAM policy template) is not "
                                     "emulated: it allows nothing")
                report_once(self.problems[-1])
        return found

    def table_hash_keys(self):
        """(local table name, index name or None) -> its partition key's attribute."""
        keys = {}
        for logical, r in self.template.get("Resources", {}).items():
            if r.get("Type") != "AWS::DynamoDB::Table" or logical not in self.resources:
                continue
            props, name = r.get("Properties", {}), self.resources[logical]
            for index, schema in [(None, props.get("KeySchema", []))] + [
                    (i["IndexName"], i["KeySchema"]) for i in
                    props.get("GlobalSecondaryIndexes", []) + props.get("LocalSecondaryIndexes", [])]:
                for k in schema:
                    if k.get("KeyType") == "HASH":
                        keys[(name, index)] = k["AttributeName"]
        return keys

    # intrinsic functions ---------------------------------------------------------------
    def resolve(self, value):
        if isinstance(value, (str, int, float, bool)):
            return value
        if isinstance(value, dict) and len(value) == 1:
            (fn, arg), = value.items()
            if fn == "Ref":
                return self.ref(arg)
            if fn == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.attribute(logical, attribute)
            if fn == "Fn::Sub":
                return self.sub(*arg) if isinstance(arg, list) else self.sub(arg)
            if fn == "Fn::Join":
                return arg[0].join(str(self.resolve(v)) for v in arg[1])
        raise Unresolved(f"cannot resolve {value!r}")

    def ref(self, name):
        pseudo = {"AWS::Region": self.region, "AWS::AccountId": self.account, "AWS::StackName": self.stack_name,
                  "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
        if name in pseudo:
            return pseudo[name]
        if name in self.template.get("Parameters", {}) and "Default" in self.template["Parameters"][name]:
            return str(self.template["Parameters"][name]["Default"])
        if name in self.resources:
            return self.resources[name]
        raise Unresolved(f"no local name for {name}")

    def attribute(self, logical, attribute):
        kind = self.template.get("Resources", {}).get(logical, {}).get("Type")
        name = self.ref(logical)
        if attribute == "Arn":
            if kind == "AWS::DynamoDB::Table":
                return f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}"
            if kind == "AWS::S3::Bucket":
                return f"arn:aws:s3:::{name}"
            if kind == "AWS::SQS::Queue":
                return f"arn:aws:sqs:{self.region}:{self.account}:{name}"
            if kind == "AWS::KMS::Key":
                return self.key_arn(name)
        if attribute == "QueueName" and kind == "AWS::SQS::Queue":
            return name
        raise Unresolved(f"{logical}.{attribute} ({kind}) is not emulated")

    def sub(self, text, variables=None):
        def one(m):
            name = m.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if variables and name in variables:
                return str(self.resolve(variables[name]))
            if "." in name and not name.startswith("AWS::"):
                return str(self.attribute(*name.split(".", 1)))
            return str(self.ref(name))
        return re.sub(r"\$\{([^}]+)\}", one, text)

    def key_arn(self, key, region=None):
        """The ARN of a KMS key given by id, key ARN, alias name or alias ARN (an alias
        that names no known key: the alias's ARN)."""
        region = region or self.region
        if key.startswith("arn:") and ":alias/" in key:
            alias = "alias/" + key.split(":alias/", 1)[1]
            return self.key_arn(self.aliases[alias], region) if alias in self.aliases else key
        if key.startswith("alias/"):
            if key in self.aliases:
                return self.key_arn(self.aliases[key], region)
            return f"arn:aws:kms:{region}:{self.account}:{key}"
        return key if key.startswith("arn:") else f"arn:aws:kms:{region}:{self.account}:key/{key}"

    # evaluation --------------------------------------------------------------------------
    def check(self, request):
        """The denial of `request`, or None when its signer may make it."""
        access_key = request.credential()[0]
        binary = function_of(access_key)
        if binary is None:
            return None
        try:
            asked = authorisations(request, self)
        except (AttributeError, TypeError, KeyError, ValueError) as e:  # malformed: refused, not crashed on
            return Denial(binary, f"{request.service() or '*'}:*", "*", reason=f"request not understood: {e!r}")
        return self.evaluate(access_key, asked)

    def evaluate(self, identity, authorisations):
        """None when `identity` (an access key id) may do every one of `authorisations`,
        else the Denial of the first it may not."""
        binary = function_of(identity)
        if binary is None:
            return None
        statements = self.statements.get(binary)
        if statements is None:
            first = authorisations[0] if authorisations else Authorisation("*", "*")
            return Denial(binary, first.action, first.resource, reason=f"{binary} is not a function of the template")
        for a in authorisations:
            denial = decide(binary, statements, a)
            if denial:
                return denial
        return None

    def describe(self):
        return {"functions": self.functions(), "problems": list(self.problems)}


def decide(binary, statements, a):
    """The Denial of one authorisation, or None when a statement allows it and none denies it."""
    context = dict(a.context, **{"aws:securetransport": ["true"]})
    allowed, reasons = False, []
    for s in statements:
        if not s.concerns(a.action, a.resource):
            continue
        try:
            holds = s.holds(context)
        except Unsupported as e:
            report_once(f"{binary} {s.sid}: {e}: fails closed")
            reasons.append(f"{s.sid}: {e}")
            holds = s.effect == "Deny"
        if holds and s.effect == "Deny":
            return Denial(binary, a.action, a.resource, True, "; ".join(reasons))
        allowed = allowed or holds
    return None if allowed else Denial(binary, a.action, a.resource, False, "; ".join(reasons))


def missing_object_denial(policies, request):
    """S3 answers a read of a missing object 403, not 404, to a caller that may not list
    the bucket: that ListBucket Denial, or None (the 404 stands)."""
    if request.service() != "s3" or s3_operation(request.environ()) not in S3_READS:
        return None
    bucket = request.path.lstrip("/").split("/", 1)[0]
    return policies.evaluate(request.credential()[0], [Authorisation("s3:ListBucket", f"arn:aws:s3:::{bucket}")])


# what a request asks for --------------------------------------------------------------------
def authorisations(request, policies):
    """The (action, resource, condition keys) AWS authorises for `request`."""
    region = request.credential()[1] or policies.region
    service = request.service()
    if service == "dynamodb":
        return dynamodb_authorisations(request, policies, region)
    if service == "s3":
        return s3_authorisations(request)
    if service == "sqs":
        return sqs_authorisations(request, policies, region)
    if service == "kms":
        return kms_authorisations(request, policies, region)
    op = request.target()[1] or request.parameters().get("Action", "*")
    return [Authorisation(f"{service or '*'}:{op}", "*")]


def dynamodb_authorisations(request, policies, region):
    op = request.target()[1]
    body = request.json()
    if body is None:
        return [Authorisation(f"dynamodb:{op}", "*")]

    def arn(table, index=None):
        return f"arn:aws:dynamodb:{region}:{policies.account}:table/{table}" + (f"/index/{index}" if index else "")

    def leading(table, items, index=None):
        attribute = policies.hash_keys.get((table, index))
        values = [key_text(item[attribute]) for item in items if attribute and attribute in item]
        return {"dynamodb:leadingkeys": values} if values else {}

    def one(action, table, items, index=None):
        return Authorisation(f"dynamodb:{action}", arn(table, index), leading(table, items, index))

    if op in ("GetItem", "PutItem", "UpdateItem", "DeleteItem"):
        return [one(op, body.get("TableName", ""), [body.get("Item" if op == "PutItem" else "Key", {})])]
    if op == "BatchGetItem":
        return [one(op, t, spec.get("Keys", [])) for t, spec in body.get("RequestItems", {}).items()]
    if op == "BatchWriteItem":
        return [one(op, t, [w.get("PutRequest", {}).get("Item") or w.get("DeleteRequest", {}).get("Key", {})
                            for w in writes])
                for t, writes in body.get("RequestItems", {}).items()]
    if op in ("TransactWriteItems", "TransactGetItems"):
        actions = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                   "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
        return [one(actions.get(kind, kind), action.get("TableName", ""),
                    [action.get("Item" if kind == "Put" else "Key", {})])
                for entry in body.get("TransactItems", []) for kind, action in entry.items()]
    if op in ("Query", "Scan"):
        table, index = body.get("TableName", ""), body.get("IndexName")
        value = query_partition_value(body, policies.hash_keys.get((table, index))) if op == "Query" else None
        return [Authorisation(f"dynamodb:{op}", arn(table, index),
                              {"dynamodb:leadingkeys": [key_text(value)]} if value else {})]
    if "TableName" in body:
        return [Authorisation(f"dynamodb:{op}", arn(body["TableName"]))]
    return [Authorisation(f"dynamodb:{op}", body.get("ResourceArn", "*"))]


def key_text(value):
    """A key attribute value as IAM compares it: the string, the number's digits, the base64."""
    (kind, x), = value.items()
    return x if kind in ("S", "N", "B") else json.dumps(x)


def query_partition_value(body, attribute):
    """The value a Query binds its partition key `attribute` to, or None."""
    if attribute is None:
        return None
    if "KeyConditions" in body:
        cond = body["KeyConditions"].get(attribute, {})
        values = cond.get("AttributeValueList", [])
        return values[0] if cond.get("ComparisonOperator") == "EQ" and values else None
    names = body.get("ExpressionAttributeNames", {})
    values = body.get("ExpressionAttributeValues", {})
    expression = body.get("KeyConditionExpression", "")
    pairs = re.findall(r"([#\w.]+)\s*=\s*(:\w+)", expression)
    pairs += [(n, v) for v, n in re.findall(r"(:\w+)\s*=\s*([#\w.]+)", expression)]
    for name, placeholder in pairs:
        if names.get(name, name) == attribute and placeholder in values:
            return values[placeholder]
    return None


def s3_authorisations(request):
    bucket, _, key = request.path.lstrip("/").partition("/")
    params = {k: v for k, v in request.parameters().items() if not k.lower().startswith(("x-amz-", "response-"))}
    method = request.method
    if not bucket:
        return [Authorisation("s3:ListAllMyBuckets", "*")]
    bucket_arn = f"arn:aws:s3:::{bucket}"
    op = s3_operation(request.environ())
    if not key:
        special = [p for p in params if p not in S3_PLAIN_PARAMETERS]
        if special:
            action = S3_BUCKET_SUBRESOURCES.get(special[0], {}).get(method) if len(special) == 1 else None
            if action is None:
                return [unsupported(request, bucket_arn)]
            if special[0] == "delete":
                return [Authorisation("s3:DeleteObject", f"{bucket_arn}/{k}") for k in deleted_keys(request.body)]
            if special[0] == "versions":
                return [Authorisation("s3:ListBucketVersions", bucket_arn, {"s3:prefix": [params.get("prefix", "")]})]
            return [Authorisation(f"s3:{action}", bucket_arn)]
        if method == "GET":
            return [Authorisation("s3:ListBucket", bucket_arn, {"s3:prefix": [params.get("prefix", "")]})]
        actions = {"CreateBucket": "s3:CreateBucket", "DeleteBucket": "s3:DeleteBucket", "HeadBucket": "s3:ListBucket"}
        return [Authorisation(actions[op], bucket_arn)] if op in actions else [unsupported(request, bucket_arn)]
    object_arn = f"{bucket_arn}/{key}"
    special = [p for p in params if p not in S3_PLAIN_PARAMETERS and (p, op) != ("uploadId", "CopyObject")]
    if special:
        action = S3_OBJECT_SUBRESOURCES.get(special[0], {}).get(method) if len(special) == 1 else None
        return [Authorisation(f"s3:{action}", object_arn) if action else unsupported(request, object_arn)]
    versioned = "versionId" in params
    if op in ("GetObject", "HeadObject"):
        return [Authorisation("s3:GetObjectVersion" if versioned else "s3:GetObject", object_arn)]
    if op == "DeleteObject":
        return [Authorisation("s3:DeleteObjectVersion" if versioned else "s3:DeleteObject", object_arn)]
    if op == "CopyObject":
        source, _, query = request.headers["x-amz-copy-source"].partition("?")  # an encoded `?` is the key's
        read = "s3:GetObjectVersion" if "versionId=" in query else "s3:GetObject"
        return [Authorisation("s3:PutObject", object_arn),
                Authorisation(read, f"arn:aws:s3:::{unquote(source).lstrip('/')}")]
    if op in ("PutObject", "UploadPart", "CreateMultipartUpload", "CompleteMultipartUpload"):
        return [Authorisation("s3:PutObject", object_arn)]
    return [unsupported(request, object_arn)]


def unsupported(request, resource):
    report_once(f"S3 {request.method} {request.path}?{request.query} is not understood: refused to functions")
    return Authorisation("s3:Unsupported", resource)


def deleted_keys(body):
    """The keys a DeleteObjects request names (its XML body)."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return ["*"]  # matches no narrower statement
    return [e.text or "" for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "Key"] or ["*"]


def sqs_authorisations(request, policies, region):
    service, op = request.target()
    if service == "sqs":
        params = request.json() or {}
    else:  # the query protocol: a form, in the body or the query string
        params = request.parameters()
        if "x-www-form-urlencoded" in request.headers.get("content-type", ""):
            params.update(parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True))
        op = params.get("Action", "")
    action = "sqs:" + SQS_ACTIONS.get(op, op)
    url = params.get("QueueUrl") or (request.path if request.path.strip("/") else "")
    segments = [s for s in urlsplit(url).path.split("/") if s] if url else []
    name = segments[-1] if segments else params.get("QueueName")
    if not name:
        return [Authorisation(action, "*")]
    account = segments[-2] if len(segments) >= 2 and segments[-2].isdigit() else policies.account
    return [Authorisation(action, f"arn:aws:sqs:{region}:{account}:{name}")]


def kms_authorisations(request, policies, region):
    op = request.target()[1]
    body = request.json() or {}
    key = body.get("KeyId") or body.get("TargetKeyId") or body.get("DestinationKeyId")
    if key is None and op == "Decrypt":
        key = moto_ciphertext_key(body.get("CiphertextBlob", ""))
    context = {}
    encryption_context = body.get("EncryptionContext") or {}
    if encryption_context:
        context["kms:encryptioncontextkeys"] = list(encryption_context)
        for k, v in encryption_context.items():
            context[f"kms:encryptioncontext:{k.lower()}"] = [v]
    return [Authorisation(f"kms:{op}", policies.key_arn(key, region) if key else "*", context)]


def moto_ciphertext_key(blob):
    """The key id a ciphertext of moto's names (its first 36 bytes); AWS reads it from its
    own ciphertext's metadata the same way."""
    try:
        key = base64.b64decode(blob)[:36].decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return None
    return key if re.fullmatch(r"[0-9a-f-]{36}", key) else None


def alias_name(name):
    return "alias/" + name.split(":alias/", 1)[1] if ":alias/" in name else name


# refusals on the wire -------------------------------------------------------------------------
def refusal(request, denial):
    """(status, headers, body) of AWS's refusal of `request` for `denial`, in the shape
    the service's SDKs parse (botocore's parsers; tests/devstack/test_iam.py). DynamoDB: 400,
    JSON 1.0 `__type` ...#AccessDeniedException. KMS: 400, JSON 1.1 AccessDeniedException.
    S3: 403 XML AccessDenied, no body for HEAD, with the message S3 has given same-account
    callers since 2024 (the quoted resource) rather than the older bare "Access Denied". SQS:
    as SQS does, 403; JSON (query-compatible) with `x-amzn-query-error: AccessDenied;Sender`,
    from which the SDKs take the code, or the query protocol's XML ErrorResponse."""
    request_id = str(uuid.uuid4())
    service = request.service()
    if service == "s3":
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                f'<Message>{xml_text(denial.message(quote_resource=True))}</Message>'
                f'<RequestId>{request_id}</RequestId></Error>').encode()
        body = b"" if request.method == "HEAD" else body
        return 403, [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)], body
    if service == "sqs" and request.target()[0] != "sqs":  # the query protocol
        body = (f'<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error>'
                f'<Type>Sender</Type><Code>AccessDenied</Code><Message>{xml_text(denial.message())}</Message>'
                f'<Detail/></Error><RequestId>{request_id}</RequestId></ErrorResponse>').encode()
        return 403, [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)], body
    headers = [("x-amzn-RequestId", request_id)]
    if service == "dynamodb":
        status, content_type = 400, "application/x-amz-json-1.0"
        answer = {"__type": "com.amazonaws.dynamodb.v20120810#" + "AccessDeniedException", "Message": denial.message()}
    elif service == "sqs":  # JSON, query-compatible: the SDKs take the code from the header
        status, content_type = 403, "application/x-amz-json-1.0"
        answer = {"__type": "com.amazon.coral.service#AccessDeniedException", "message": denial.message()}
        headers.append(("x-amzn-query-error", "AccessDenied;Sender"))
    else:  # KMS and the rest
        status, content_type = 400, "application/x-amz-json-1.1"
        answer = {"__type": "AccessDeniedException", "message": denial.message()}
    return status, [("Content-Type", content_type)] + headers, json.dumps(answer).encode()


def xml_text(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


# the local stack ---------------------------------------------------------------------------------
def local_resources(environ, template, list_aliases=None):
    """(resources, aliases) of the local stack the environment describes, for `Policies`:
    the tables and bucket the functions' environment names (`CALLS_TABLE: Ref CallsTable`),
    the queues as devstack.queues names them, and each KMS key through the alias the
    functions are given (HOOK_KEY_ID, else their default), looked up with `list_aliases()`
    (alias name -> key id; default: the local KMS, with the environment's credentials)."""
    from devstack.queues import Queues

    resources, aliases = {}, {}
    variables = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    for var, value in variables.items():
        if isinstance(value, dict) and value.get("Ref") in template["Resources"] and environ.get(var):
            resources[value["Ref"]] = environ[var]
    queues = Queues(template)
    if environ.get("FRAMES_BUCKET"):
        for logical in queues.logical_queues():
            resources[logical] = queues.name(logical, environ["FRAMES_BUCKET"])
    known = None
    for r in template["Resources"].values():
        if r.get("Type") != "AWS::KMS::Alias":
            continue
        key_logical = r["Properties"]["TargetKeyId"].get("Ref")
        var = next((v for v, value in variables.items() if value == r["Properties"]["AliasName"]), None)
        local = environ.get(var) or DEFAULT_KEYS.get(var) if var else None
        if not local or not key_logical:
            continue
        if not local.startswith("alias/") and ":alias/" not in local:
            resources[key_logical] = local
            continue
        if known is None:
            try:
                known = (list_aliases or (lambda: kms_aliases(environ)))()
            except Exception as e:  # the key stays unresolved: Decrypt is refused, and reported
                report_once(f"cannot list the local KMS aliases ({type(e).__name__}: {e})")
                known = {}
        target = known.get(alias_name(local))
        if target:
            resources[key_logical] = target
            aliases[alias_name(local)] = target
    return resources, aliases


def kms_aliases(environ):
    """Alias name -> key id of the local KMS."""
    import boto3
    from botocore.config import Config

    kms = boto3.client("kms", endpoint_url=environ.get("AWS_ENDPOINT_URL_KMS") or environ.get("AWS_ENDPOINT_URL_DYNAMODB"),
                       region_name=environ.get("AWS_REGION", "us-east-1"),
                       aws_access_key_id=environ.get("AWS_ACCESS_KEY_ID", "local"),
                       aws_secret_access_key=environ.get("AWS_SECRET_ACCESS_KEY", "local"),
                       config=Config(connect_timeout=2, read_timeout=5, retries={"total_max_attempts": 2}))
    found = {}
    for page in kms.get_paginator("list_aliases").paginate():
        found.update({a["AliasName"]: a["TargetKeyId"] for a in page["Aliases"] if "TargetKeyId" in a})
    return found


def enforce(endpoint, environ, template_path=TEMPLATE, timeout=10):
    """Turns IAM on in the local stack at `endpoint` (devstack.faults) for the resources
    `environ` names; answers the layer's description (functions, problems)."""
    import urllib.request

    import yaml

    with open(template_path) as f:
        template = yaml.safe_load(f)
    resources, aliases = local_resources(environ, template)
    spec = {"resources": resources, "aliases": aliases, "template": os.path.abspath(template_path),
            "region": environ.get("AWS_REGION", "us-east-1"), "enabled": True}
    r = urllib.request.Request(endpoint.rstrip("/") + "/_faults/iam", method="POST", data=json.dumps(spec).encode(),
                               headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=timeout) as answer:
        return json.loads(answer.read())
