"""The local stack's IAM (devstack.iam): template.yaml's own statements, evaluated as AWS
evaluates them, on requests boto3 really signs (captured before they are sent: no server,
no network), and refused in shapes the SDK parses as AWS's."""
import base64
import copy
import io
import json
import os

import boto3
import pytest
import yaml
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError
from werkzeug.test import Client

from devstack import iam
from devstack.faults import FaultLayer

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
KEY = "1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER_KEY = "99999999-12ab-34cd-56ef-1234567890ab"
ALIAS = "alias/call-ingest-webhooks"
RESOURCES = {
    "CallsTable": "calls-x", "DirectoryTable": "directory-x", "FramesBucket": "frames-x",
    "PendingQueue": "frames-x-PendingQueue", "PendingDeadLetterQueue": "frames-x-PendingDeadLetterQueue",
    "HookKey": KEY,
}
CALLS = "arn:aws:dynamodb:us-east-1:123456789012:table/calls-x"
DIRECTORY = "arn:aws:dynamodb:us-east-1:123456789012:table/directory-x"
KEY_ARN = f"arn:aws:kms:us-east-1:123456789012:key/{KEY}"


@pytest.fixture(scope="module")
def template():
    with open(os.path.join(ROOT, "template.yaml")) as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def policies(template):
    return iam.Policies(template, RESOURCES, aliases={ALIAS: KEY})


class Captured(Exception):
    pass


def client(service, key):
    """A boto3 client signing as `key` whose requests are captured, never sent."""
    c = boto3.client(service, region_name="us-east-1", endpoint_url="http://127.0.0.1:9", aws_access_key_id=key,
                     aws_secret_access_key="local",
                     config=Config(retries={"total_max_attempts": 1}, s3={"addressing_style": "path"}))

    def capture(request, **_):
        raise Captured(request)

    c.meta.events.register("before-send", capture)
    return c


def request_of(call):
    """The request a boto3 call sends, as devstack.iam reads it."""
    with pytest.raises(Captured) as e:
        call()
    r = e.value.args[0]
    body = r.body.read() if hasattr(r.body, "read") else r.body
    return iam.Request.from_url(r.method, r.url, dict(r.headers), body)


def verdict(policies, call):
    return policies.check(request_of(call))


def item(pk, sk="HEAD"):
    return {"pk": {"S": pk}, "sk": {"S": sk}}


# DynamoDB ----------------------------------------------------------------------------------
def test_commit_pending_writes_call_items_and_takes_ids_only(policies):
    db = client("dynamodb", "fn.commit-pending.0")
    assert verdict(policies, lambda: db.put_item(TableName="calls-x", Item=item("CALL#123"))) is None
    assert verdict(policies, lambda: db.update_item(
        TableName="calls-x", Key=item("COUNTER", "COUNTER"), UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}})) is None
    denial = verdict(policies, lambda: db.put_item(TableName="calls-x", Item=item("WS#1")))
    assert (denial.binary, denial.action, denial.resource) == ("commit-pending", "dynamodb:PutItem", CALLS)
    # TakeIds is an UpdateItem: the counter cannot be overwritten whole, nor deleted.
    assert verdict(policies, lambda: db.put_item(TableName="calls-x", Item=item("COUNTER", "COUNTER")))
    assert verdict(policies, lambda: db.delete_item(TableName="calls-x", Key=item("CALL#1")))
    assert verdict(policies, lambda: db.put_item(TableName="directory-x", Item=item("CALL#1"))).resource == DIRECTORY


def test_commit_pending_reads_a_held_reports_hook_and_agent_and_no_credential(policies):
    db = client("dynamodb", "fn.commit-pending.0")
    for pk, sk in [("HOOK#hk_1", "HOOK"), ("AGENT#a1", "AGENT"), ("WS#1#REMOTE#desk", "AGENT"), ("WS#1", "WS")]:
        assert verdict(policies, lambda: db.get_item(TableName="directory-x", Key=item(pk, sk))) is None, pk
    denial = verdict(policies, lambda: db.get_item(TableName="directory-x", Key=item("CRED#x", "CRED")))
    assert (denial.action, denial.resource) == ("dynamodb:GetItem", DIRECTORY)


def test_leading_keys_hold_a_function_to_its_items(policies):
    db = client("dynamodb", "fn.create-call.3")
    rate = {"UpdateExpression": "ADD n :one", "ExpressionAttributeValues": {":one": {"N": "1"}}}
    assert verdict(policies, lambda: db.update_item(TableName="directory-x", Key=item("RATE#1#2", "S"), **rate)) is None
    denial = verdict(policies, lambda: db.update_item(TableName="directory-x", Key=item("CRED#x", "CRED"), **rate))
    assert (denial.action, denial.resource) == ("dynamodb:UpdateItem", DIRECTORY)
    # Reading the directory is unconditional for it; writing it whole is not granted.
    assert verdict(policies, lambda: db.get_item(TableName="directory-x", Key=item("CRED#x", "CRED"))) is None
    assert verdict(policies, lambda: db.put_item(TableName="directory-x", Item=item("RATE#1#2", "S")))


def test_a_transaction_with_one_item_outside_the_allowed_keys_is_denied_whole(policies):
    db = client("dynamodb", "fn.send-call-data.0")
    allowed = [
        {"Put": {"TableName": "calls-x", "Item": item("CALL#1")}},
        {"ConditionCheck": {"TableName": "calls-x", "Key": item("CALL#2"), "ConditionExpression": "attribute_exists(pk)"}},
        {"Update": {"TableName": "calls-x", "Key": item("COUNTER", "COUNTER"), "UpdateExpression": "ADD n :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}}}},
    ]
    assert verdict(policies, lambda: db.transact_write_items(TransactItems=allowed)) is None
    outside = {"Put": {"TableName": "calls-x", "Item": item("WS#9")}}
    denial = verdict(policies, lambda: db.transact_write_items(TransactItems=allowed + [outside]))
    assert (denial.action, denial.resource) == ("dynamodb:PutItem", CALLS)
    delete = {"Delete": {"TableName": "calls-x", "Key": item("CALL#1")}}
    assert verdict(policies, lambda: db.transact_write_items(TransactItems=allowed + [delete])).action == "dynamodb:DeleteItem"


def test_query_is_authorised_on_the_index_with_its_partition_key(policies):
    db = client("dynamodb", "fn.get-call.0")
    by_id = request_of(lambda: db.query(TableName="calls-x", IndexName="by-id", KeyConditionExpression="id = :id",
                                        ExpressionAttributeValues={":id": {"N": "42"}}))
    assert iam.authorisations(by_id, policies) == [
        iam.Authorisation("dynamodb:Query", CALLS + "/index/by-id", {"dynamodb:leadingkeys": ["42"]})]
    assert policies.check(by_id) is None
    # list-calls may query its index only, not the table nor the other index.
    lister = client("dynamodb", "fn.list-calls.0")
    assert verdict(policies, lambda: lister.query(
        TableName="calls-x", IndexName="by-workspace-listed", KeyConditionExpression="listed_ws = :w AND listed_ms > :t",
        ExpressionAttributeValues={":w": {"N": "7"}, ":t": {"N": "0"}})) is None
    assert verdict(policies, lambda: lister.query(
        TableName="calls-x", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "CALL#1"}}))
    named = request_of(lambda: db.query(
        TableName="calls-x", KeyConditionExpression="#p = :p AND begins_with(sk, :s)",
        ExpressionAttributeNames={"#p": "pk"}, ExpressionAttributeValues={":p": {"S": "CALL#9"}, ":s": {"S": "R"}}))
    assert iam.authorisations(named, policies)[0].context == {"dynamodb:leadingkeys": ["CALL#9"]}


def test_batches_are_authorised_per_table_with_every_key(policies):
    db = client("dynamodb", "fn.get-me.0")
    r = request_of(lambda: db.batch_get_item(RequestItems={"directory-x": {"Keys": [item("CRED#a"), item("WS#1")]}}))
    assert iam.authorisations(r, policies) == [
        iam.Authorisation("dynamodb:BatchGetItem", DIRECTORY, {"dynamodb:leadingkeys": ["CRED#a", "WS#1"]})]
    assert policies.check(r) is None
    w = request_of(lambda: db.batch_write_item(RequestItems={"calls-x": [
        {"PutRequest": {"Item": item("CALL#1")}}, {"DeleteRequest": {"Key": item("CALL#2")}}]}))
    assert iam.authorisations(w, policies) == [
        iam.Authorisation("dynamodb:BatchWriteItem", CALLS, {"dynamodb:leadingkeys": ["CALL#1", "CALL#2"]})]
    assert policies.check(w).action == "dynamodb:BatchWriteItem"


# S3 -----------------------------------------------------------------------------------------
def test_s3_key_prefixes(policies):
    s3 = client("s3", "fn.send-call-data.1")
    assert verdict(policies, lambda: s3.put_object(Bucket="frames-x", Key="pending/x", Body=b"{}")) is None
    assert verdict(policies, lambda: s3.put_object(Bucket="frames-x", Key="frames/x", Body=b"{}")) is None
    denial = verdict(policies, lambda: s3.put_object(Bucket="frames-x", Key="failed/x", Body=b"{}"))
    assert (denial.action, denial.resource) == ("s3:PutObject", "arn:aws:s3:::frames-x/failed/x")
    for key in ("pending/x", "failed/x", "x"):
        assert verdict(policies, lambda: s3.delete_object(Bucket="frames-x", Key=key)).action == "s3:DeleteObject"
    # Its own frame, when the call turned out to be being erased (RemoveWaitingFrames).
    assert verdict(policies, lambda: s3.delete_object(Bucket="frames-x", Key="frames/x")) is None
    assert verdict(policies, lambda: s3.get_object(Bucket="frames-x", Key="frames/x")).action == "s3:GetObject"
    assert verdict(policies, lambda: s3.list_objects_v2(Bucket="frames-x", Prefix="pending/")).action == "s3:ListBucket"


def test_copy_object_needs_both_rights(policies):
    s3 = client("s3", "fn.commit-pending.0")

    def copy(source, target):
        return verdict(policies, lambda: s3.copy_object(Bucket="frames-x", Key=target,
                                                        CopySource={"Bucket": "frames-x", "Key": source}))

    assert copy("pending/a", "failed/a") is None
    assert copy("held/a", "pending/a") is None, "a held report released"
    denial = copy("frames/a", "failed/a")  # may write failed/, may not read frames/
    assert (denial.action, denial.resource) == ("s3:GetObject", "arn:aws:s3:::frames-x/frames/a")
    denial = copy("pending/a", "held/b")  # may read pending/, may not write held/
    assert (denial.action, denial.resource) == ("s3:PutObject", "arn:aws:s3:::frames-x/held/b")


def test_listing_with_a_prefix_condition(policies):
    s3 = client("s3", "fn.erase-call.0")
    assert verdict(policies, lambda: s3.list_objects_v2(Bucket="frames-x", Prefix="pending/abc")) is None
    assert verdict(policies, lambda: s3.list_objects_v2(Bucket="frames-x", Prefix="frames/1/abc/")) is None
    assert verdict(policies, lambda: s3.list_objects_v2(Bucket="frames-x", Prefix="other/"))
    assert verdict(policies, lambda: s3.list_objects_v2(Bucket="frames-x"))  # no prefix: ""
    assert verdict(policies, lambda: s3.delete_objects(Bucket="frames-x", Delete={"Objects": [
        {"Key": "pending/a"}, {"Key": "failed/b"}]})) is None
    # Frames are overwritten by an empty marker (EraseFrames), never deleted by the eraser.
    denial = verdict(policies, lambda: s3.delete_objects(Bucket="frames-x", Delete={"Objects": [
        {"Key": "pending/a"}, {"Key": "frames/b"}]}))
    assert (denial.action, denial.resource) == ("s3:DeleteObject", "arn:aws:s3:::frames-x/frames/b")
    assert verdict(policies, lambda: s3.put_object(Bucket="frames-x", Key="frames/b", Body=b"")) is None


def test_s3_requests_become_what_aws_authorises():
    s3 = client("s3", "fn.x.0")

    def asked(call):
        return [(a.action, a.resource, a.context) for a in iam.s3_authorisations(request_of(call))]

    key = "pending/a b/é+x?&.json"
    assert asked(lambda: s3.put_object(Bucket="b", Key=key, Body=b"1")) == [
        ("s3:PutObject", f"arn:aws:s3:::b/{key}", {})]
    assert asked(lambda: s3.head_object(Bucket="b", Key=key)) == [("s3:GetObject", f"arn:aws:s3:::b/{key}", {})]
    assert asked(lambda: s3.copy_object(Bucket="b", Key="t", CopySource={"Bucket": "s", "Key": key})) == [
        ("s3:PutObject", "arn:aws:s3:::b/t", {}), ("s3:GetObject", f"arn:aws:s3:::s/{key}", {})]
    assert asked(lambda: s3.list_objects_v2(Bucket="b", Prefix="p/")) == [
        ("s3:ListBucket", "arn:aws:s3:::b", {"s3:prefix": ["p/"]})]
    assert asked(lambda: s3.head_bucket(Bucket="b")) == [("s3:ListBucket", "arn:aws:s3:::b", {})]
    assert asked(lambda: s3.create_bucket(Bucket="b")) == [("s3:CreateBucket", "arn:aws:s3:::b", {})]
    assert asked(lambda: s3.put_bucket_notification_configuration(
        Bucket="b", NotificationConfiguration={})) == [("s3:PutBucketNotification", "arn:aws:s3:::b", {})]
    assert asked(lambda: s3.create_multipart_upload(Bucket="b", Key="k")) == [("s3:PutObject", "arn:aws:s3:::b/k", {})]
    assert asked(lambda: s3.upload_part(Bucket="b", Key="k", UploadId="u", PartNumber=1, Body=b"x")) == [
        ("s3:PutObject", "arn:aws:s3:::b/k", {})]
    assert asked(lambda: s3.delete_objects(Bucket="b", Delete={"Objects": [{"Key": "a&b"}, {"Key": "c"}]})) == [
        ("s3:DeleteObject", "arn:aws:s3:::b/a&b", {}), ("s3:DeleteObject", "arn:aws:s3:::b/c", {})]
    assert asked(lambda: s3.get_object_retention(Bucket="b", Key="k"))[0][0] == "s3:Unsupported"


def test_a_presigned_url_names_its_signer(policies):
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                      aws_access_key_id="fn.commit-pending.2", aws_secret_access_key="local",
                      config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "frames-x", "Key": "frames/x"})
    r = iam.Request.from_url("GET", url, {})
    assert r.credential() == ("fn.commit-pending.2", "us-east-1", "s3")
    assert policies.check(r).resource == "arn:aws:s3:::frames-x/frames/x"


def test_a_missing_object_is_403_without_list_bucket(policies):
    head = lambda key: request_of(lambda: client("s3", key).head_object(Bucket="frames-x", Key="frames/x"))
    assert iam.missing_object_denial(policies, head("fn.get-call.0")) is None
    assert iam.missing_object_denial(policies, head("fn.send-call-data.0")).action == "s3:ListBucket"
    assert iam.missing_object_denial(policies, head("local")) is None


# SQS and KMS ------------------------------------------------------------------------------------
def test_sqs_requests_name_their_queue(policies):
    sqs = client("sqs", "fn.commit-pending.0")
    url = "http://127.0.0.1:9/123456789012/frames-x-PendingQueue"
    r = request_of(lambda: sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "m"}]))
    assert iam.authorisations(r, policies) == [
        iam.Authorisation("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:frames-x-PendingQueue")]
    assert policies.check(r).action == "sqs:SendMessage"  # the poller is Lambda's (admin), not the function
    form = iam.Request.from_url("POST", "http://127.0.0.1:9/", {
        "Authorization": "AWS4-HMAC-SHA256 Credential=fn.commit-pending.0/20260101/us-east-1/sqs/aws4_request, "
                         "SignedHeaders=host, Signature=0",
        "Content-Type": "application/x-www-form-urlencoded"},
        f"Action=ReceiveMessage&QueueUrl={url}&Version=2012-11-05")
    assert iam.authorisations(form, policies) == [
        iam.Authorisation("sqs:ReceiveMessage", "arn:aws:sqs:us-east-1:123456789012:frames-x-PendingQueue")]


def test_provider_webhook_decrypts_with_its_encryption_context(policies):
    kms = client("kms", "fn.provider-webhook.0")

    def decrypt(context=None, key=ALIAS):
        extra = {"EncryptionContext": context} if context is not None else {}
        return verdict(policies, lambda: kms.decrypt(KeyId=key, CiphertextBlob=b"sealed", **extra))

    assert decrypt({"hook": "h1", "workspace": "7"}) is None
    # Both keys of the hook's context, and no other: ForAllValues alone would be true for a
    # Decrypt with no context at all (or a part of it); the template's StringLike closes it.
    assert decrypt({"hook": "h1"}) is not None
    denial = decrypt({"hook": "h1", "workspace": "7", "other": "x"})
    assert (denial.action, denial.resource) == ("kms:Decrypt", KEY_ARN)
    assert decrypt({"hook": "h1", "workspace": "7"}, key=OTHER_KEY).resource.endswith(OTHER_KEY)
    assert decrypt({"hook": "h1", "workspace": "7"}, key=KEY_ARN) is None
    assert decrypt() is not None
    assert decrypt({}) is not None
    assert verdict(policies, lambda: kms.generate_data_key(KeyId=ALIAS, KeySpec="AES_256")).action == "kms:GenerateDataKey"
    # Another function may not open secrets at all.
    other = client("kms", "fn.send-call-data.0")
    assert verdict(policies, lambda: other.decrypt(KeyId=ALIAS, CiphertextBlob=b"s",
                                                   EncryptionContext={"hook": "h", "workspace": "1"}))


def test_kms_requests_carry_their_key_and_context(policies):
    kms = client("kms", "fn.provider-webhook.0")
    moto_ciphertext = KEY.encode() + b"\0" * 40
    r = request_of(lambda: kms.decrypt(CiphertextBlob=moto_ciphertext, EncryptionContext={"Hook": "h", "workspace": "1"}))
    assert iam.authorisations(r, policies) == [iam.Authorisation("kms:Decrypt", KEY_ARN, {
        "kms:encryptioncontextkeys": ["Hook", "workspace"], "kms:encryptioncontext:hook": ["h"],
        "kms:encryptioncontext:workspace": ["1"]})]
    unknown = request_of(lambda: kms.decrypt(KeyId="alias/nobody", CiphertextBlob=b"x"))
    assert iam.authorisations(unknown, policies)[0].resource == "arn:aws:kms:us-east-1:123456789012:alias/nobody"


# identities and evaluation -------------------------------------------------------------------------
def test_identities(policies):
    assert iam.function_of("fn.commit-pending.0") == "commit-pending"
    assert iam.function_of("fn.get-call-raw.12") == "get-call-raw"
    assert iam.function_of("local") is None and iam.function_of(None) is None
    db = client("dynamodb", "local")
    assert verdict(policies, lambda: db.delete_table(TableName="calls-x")) is None
    denial = verdict(policies, lambda: client("dynamodb", "fn.nobody.0").get_item(TableName="calls-x", Key=item("CALL#1")))
    assert denial.binary == "nobody" and "not a function of the template" in denial.reason
    # call-viewer has no statement at all.
    assert verdict(policies, lambda: client("dynamodb", "fn.call-viewer.0").get_item(
        TableName="calls-x", Key=item("CALL#1")))


def with_statement(template, binary, statement, replace_sid=None):
    """A copy of `template` where `binary`'s statement `replace_sid` is `statement` (or
    `statement` is added)."""
    t = copy.deepcopy(template)
    function = next(r for r in t["Resources"].values() if r.get("Metadata", {}).get("BuildProperties", {}).get("Binary") == binary)
    statements = function["Properties"]["Policies"][0]["Statement"]
    statements[:] = [s for s in statements if s.get("Sid") != replace_sid] + [statement]
    return iam.Policies(t, RESOURCES, aliases={ALIAS: KEY})


def test_an_unknown_condition_fails_closed(template):
    write = iam.Authorisation("dynamodb:PutItem", CALLS, {"dynamodb:leadingkeys": ["CALL#1"]})
    for condition in ({"ForAllValues:NumericLessThan": {"dynamodb:LeadingKeys": ["1"]}},
                      {"StringEquals": {"dynamodb:Attributes": ["pk"]}},
                      {"StringLike": {"dynamodb:LeadingKeys": ["CALL#*"]}},  # single-valued operator, multivalued key
                      {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["${aws:userid}"]}}):
        p = with_statement(template, "commit-pending", {
            "Sid": "WriteCalls", "Effect": "Allow", "Action": ["dynamodb:PutItem"],
            "Resource": {"Fn::GetAtt": ["CallsTable", "Arn"]}, "Condition": condition}, replace_sid="WriteCalls")
        denial = p.evaluate("fn.commit-pending.0", [write])
        assert denial is not None and "WriteCalls" in denial.reason, condition
        assert [x for x in p.problems if "WriteCalls" in x and "fails closed" in x], condition
    # A Deny it cannot decide denies.
    p = with_statement(template, "commit-pending", {
        "Sid": "Odd", "Effect": "Deny", "Action": "dynamodb:*", "Resource": "*",
        "Condition": {"NumericGreaterThan": {"aws:EpochTime": "1"}}})
    assert p.evaluate("fn.commit-pending.0", [write]).explicit


def test_an_explicit_deny_overrides_an_allow(template):
    p = with_statement(template, "commit-pending", {
        "Sid": "NoTombstones", "Effect": "Deny", "Action": "dynamodb:Put*",
        "Resource": {"Fn::Sub": "${CallsTable.Arn}"},
        "Condition": {"ForAnyValue:StringLike": {"dynamodb:LeadingKeys": ["CALL#9*"]}}})
    put = lambda pk: iam.Authorisation("dynamodb:PutItem", CALLS, {"dynamodb:leadingkeys": [pk]})
    assert p.evaluate("fn.commit-pending.0", [put("CALL#1")]) is None
    denial = p.evaluate("fn.commit-pending.0", [put("CALL#1"), put("CALL#99")])
    assert denial.explicit and "explicit deny" in denial.message()


def test_conditions():
    holds = iam.condition_holds
    assert holds("ForAllValues:StringLike", "dynamodb:leadingkeys", ["CALL#*"], {})  # absent: true, as AWS
    assert not holds("ForAnyValue:StringLike", "dynamodb:leadingkeys", ["CALL#*"], {})
    assert not holds("StringLike", "s3:prefix", ["pending/*"], {})
    assert holds("StringNotLike", "s3:prefix", ["pending/*"], {})
    assert holds("StringLikeIfExists", "s3:prefix", ["pending/*"], {})
    assert holds("StringEqualsIgnoreCase", "s3:prefix", ["A/"], {"s3:prefix": ["a/"]})
    assert holds("Null", "kms:encryptioncontextkeys", ["true"], {})
    assert not holds("Null", "kms:encryptioncontextkeys", ["false"], {})
    assert holds("StringEquals", "kms:encryptioncontext:hook", ["h"], {"kms:encryptioncontext:hook": ["h"]})
    assert holds("Bool", "aws:securetransport", ["true"], {"aws:securetransport": ["true"]})
    assert not holds("ForAllValues:StringEquals", "kms:encryptioncontextkeys", ["hook"],
                     {"kms:encryptioncontextkeys": ["hook", "x"]})
    with pytest.raises(iam.Unsupported):
        holds("DateLessThan", "s3:prefix", ["x"], {})


def test_template_references_resolve_or_match_nothing():
    template = {"Resources": {
        "T": {"Type": "AWS::DynamoDB::Table", "Properties": {"KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}},
        "F": {"Type": "AWS::Serverless::Function", "Metadata": {"BuildProperties": {"Binary": "f"}}, "Properties": {
            "Policies": [{"Statement": [
                {"Effect": "Allow", "Action": "dynamodb:GetItem",
                 "Resource": [{"Fn::Sub": "arn:aws:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${T}"},
                              {"Fn::GetAtt": ["Missing", "Arn"]}]},
                {"Effect": "Allow", "Action": "logs:*", "Resource": {"Fn::Sub": "arn:aws:logs:*:*:${AWS::StackName}-*"}},
            ]}, "AWSLambdaBasicExecutionRole", {"DynamoDBReadPolicy": {"TableName": {"Ref": "T"}}}]}},
    }}
    p = iam.Policies(template, {"T": "t-local"}, region="eu-west-1", stack_name="s")
    assert p.statements["f"][0].resources == ["arn:aws:dynamodb:eu-west-1:123456789012:table/t-local"]
    assert p.statements["f"][1].resources == ["arn:aws:logs:*:*:s-*"]
    assert ["Missing" in p.problems[0], "AWSLambdaBasicExecutionRole" in p.problems[1],
            "DynamoDBReadPolicy" in p.problems[2]] == [True, True, True]
    get = iam.Authorisation("dynamodb:GetItem", "arn:aws:dynamodb:eu-west-1:123456789012:table/t-local")
    assert p.evaluate("fn.f.0", [get]) is None
    assert p.evaluate("fn.f.0", [get._replace(action="dynamodb:Query")])
    assert p.hash_keys == {("t-local", None): "pk"}


def test_local_resources(template):
    environ = {"CALLS_TABLE": "calls-1", "DIRECTORY_TABLE": "directory-1", "FRAMES_BUCKET": "frames-1"}
    resources, aliases = iam.local_resources(environ, template, list_aliases=lambda: {ALIAS: KEY, "alias/x": "k"})
    assert resources == {"CallsTable": "calls-1", "DirectoryTable": "directory-1", "FramesBucket": "frames-1",
                         "PendingQueue": "frames-1-PendingQueue", "PendingDeadLetterQueue": "frames-1-PendingDeadLetterQueue",
                         "EventDeliveriesQueue": "frames-1-EventDeliveriesQueue",
                         "EventDeliveriesDeadLetterQueue": "frames-1-EventDeliveriesDeadLetterQueue",
                         "HookKey": KEY}
    assert aliases == {ALIAS: KEY}
    resources, _ = iam.local_resources(dict(environ, HOOK_KEY_ID=OTHER_KEY), template, list_aliases=lambda: {})
    assert resources["HookKey"] == OTHER_KEY


# on the wire ------------------------------------------------------------------------------------------
class Raw:
    def __init__(self, data):
        self.data = data

    def stream(self, **_):
        yield self.data


def answered(policies, service, key, call_name, **params):
    """The error boto3 raises when the refusal devstack.iam answers reaches it."""
    c = boto3.client(service, region_name="us-east-1", endpoint_url="http://127.0.0.1:9", aws_access_key_id=key,
                     aws_secret_access_key="local",
                     config=Config(retries={"total_max_attempts": 1}, s3={"addressing_style": "path"}))

    def refuse(request, **_):
        body = request.body.read() if hasattr(request.body, "read") else request.body
        r = iam.Request.from_url(request.method, request.url, dict(request.headers), body)
        status, headers, data = iam.refusal(r, policies.check(r))
        return AWSResponse(request.url, status, dict(headers), Raw(data))

    c.meta.events.register("before-send", refuse)
    with pytest.raises(ClientError) as e:
        getattr(c, call_name)(**params)
    return e.value.response


def test_refusals_parse_as_awss(policies):
    a = answered(policies, "dynamodb", "fn.get-me.0", "put_item", TableName="calls-x", Item=item("CALL#1"))
    assert a["Error"]["Code"] == "AccessDeniedException"
    assert a["Error"]["Message"] == (
        "User: arn:aws:sts::123456789012:assumed-role/get-me-role/get-me is not authorized to perform: "
        f"dynamodb:PutItem on resource: {CALLS} because no identity-based policy allows the dynamodb:PutItem action")
    a = answered(policies, "s3", "fn.get-me.0", "get_object", Bucket="frames-x", Key="frames/x")
    assert (a["Error"]["Code"], a["ResponseMetadata"]["HTTPStatusCode"]) == ("AccessDenied", 403)
    assert 'on resource: "arn:aws:s3:::frames-x/frames/x"' in a["Error"]["Message"]
    a = answered(policies, "s3", "fn.get-me.0", "head_object", Bucket="frames-x", Key="frames/x")
    assert (a["Error"]["Code"], a["ResponseMetadata"]["HTTPStatusCode"]) == ("403", 403)  # as S3: no body
    a = answered(policies, "sqs", "fn.get-me.0", "receive_message", QueueUrl="http://h/123456789012/frames-x-PendingQueue")
    assert a["Error"]["Code"] == "AccessDenied" and "sqs:ReceiveMessage" in a["Error"]["Message"]
    a = answered(policies, "kms", "fn.get-me.0", "decrypt", KeyId=ALIAS, CiphertextBlob=b"x")
    assert a["Error"]["Code"] == "AccessDeniedException" and KEY_ARN in a["Error"]["Message"]


def test_the_dynamodb_refusal_body():
    r = iam.Request.from_url("POST", "http://h/", {"X-Amz-Target": "DynamoDB_20120810.GetItem"}, b"{}")
    status, headers, data = iam.refusal(r, iam.Denial("f", "dynamodb:GetItem", CALLS))
    body = json.loads(data)
    assert status == 400 and body["__type"].endswith("#AccessDeniedException") and body["Message"].startswith("User: ")
    assert ("Content-Type", "application/x-amz-json-1.0") in headers


# in the fault layer -------------------------------------------------------------------------------------
def test_the_fault_layer_checks_iam_first_and_counts_denials(policies, template):
    seen = []

    def moto(environ, start_response):
        seen.append(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.0")])
        return [b"{}"]

    app = Client(FaultLayer(moto, lambda region, table: (["pk"], ["sk"])))

    def send(call):
        r = request_of(call)
        headers = {k: v for k, v in r.headers.items() if k not in ("content-length", "host")}
        return app.open(r.path, method=r.method, query_string=r.query, headers=headers, data=r.body)

    db = lambda key: client("dynamodb", key)
    write = lambda key: (lambda: db(key).put_item(TableName="calls-x", Item=item("WS#1")))
    assert send(write("fn.get-me.0")).status_code == 200  # not configured: all passes
    spec = {"resources": RESOURCES, "aliases": {ALIAS: KEY}, "region": "us-east-1"}
    assert app.post("/_faults/iam", json=spec).json["functions"] == sorted(iam.Policies(template, RESOURCES).functions())
    assert app.get("/_faults/iam").json["enabled"] is True
    answer = send(write("fn.get-me.0"))
    assert answer.status_code == 400 and json.loads(answer.data)["__type"].endswith("AccessDeniedException")
    assert send(write("local")).status_code == 200
    assert seen[-1] == request_of(write("local")).body  # the body reaches moto intact
    ok = lambda: client("s3", "fn.send-call-data.0").put_object(Bucket="frames-x", Key="pending/é x", Body=b"abc")
    assert send(ok).status_code == 200 and seen[-1] == b"abc"
    stats = app.get("/_faults/stats").json
    assert stats["denied"] == {f"get-me dynamodb:PutItem {CALLS}": 1}
    app.delete("/_faults/iam")
    assert send(write("fn.get-me.0")).status_code == 200
    assert app.post("/_faults/iam", json=dict(spec, template="/nonexistent.yaml")).status_code == 400
