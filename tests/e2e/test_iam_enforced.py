"""IAM in the local stack: each function instance signs as itself (`fn.<binary>.<n>`) and
the local AWS refuses what its statements in template.yaml do not allow, as AWS does
(devstack.iam). A statement removed from the template fails the path that needs it; a
request outside a statement's keys or prefix is AccessDenied."""
import hashlib
import json
import tempfile
import time

import boto3
import botocore.config
import botocore.exceptions
import pytest
import yaml

from devstack.stack import request

ROLE_PATH = "CommitPendingFunction"


def as_function(stack, service, binary):
    return boto3.client(service, endpoint_url=stack.dynamodb, region_name="us-east-1",
                        aws_access_key_id=f"fn.{binary}.0", aws_secret_access_key="local",
                        config=botocore.config.Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"}))


def iam_config(stack):
    a = request("GET", stack.dynamodb + "/_faults/iam")
    assert a.status == 200 and a.body["enabled"], a
    return a.body


def configure(stack, config):
    keep = ("resources", "aliases", "template", "stack_name", "region", "enabled")
    spec = {k: config[k] for k in keep if k in config}
    a = request("POST", stack.dynamodb + "/_faults/iam", json.dumps(spec).encode(), {"Content-Type": "application/json"})
    assert a.status == 200, a


def denied_code(call):
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        call()
    return refused.value.response["Error"]["Code"]


@pytest.mark.iam_denials
def test_a_leading_keys_violation_is_access_denied(stack):
    ddb = as_function(stack, "dynamodb", "create-call")
    directory = stack.env["DIRECTORY_TABLE"]
    # Its rate counters (RATE#…) are the only directory items it may write.
    ddb.update_item(TableName=directory, Key={"pk": {"S": "RATE#1#1"}, "sk": {"S": "RATE"}},
                    UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}})
    code = denied_code(lambda: ddb.update_item(
        TableName=directory, Key={"pk": {"S": "CRED#x"}, "sk": {"S": "CRED"}},
        UpdateExpression="SET revoked = :t", ExpressionAttributeValues={":t": {"BOOL": False}}))
    assert code == "AccessDeniedException"
    assert any("create-call dynamodb:UpdateItem" in k for k in stack.faults.stats()["denied"])


@pytest.mark.iam_denials
def test_an_s3_prefix_violation_is_access_denied(stack):
    s3 = as_function(stack, "s3", "send-call-data")
    bucket = stack.env["FRAMES_BUCKET"]
    s3.put_object(Bucket=bucket, Key="pending/iam-test/0000000000001-00", Body=b"{}")
    assert denied_code(lambda: s3.put_object(Bucket=bucket, Key="failed/iam-test/x", Body=b"{}")) == "AccessDenied"
    assert denied_code(lambda: s3.delete_object(Bucket=bucket, Key="pending/iam-test/0000000000001-00")) == "AccessDenied"
    boto3.client("s3", endpoint_url=stack.dynamodb, region_name="us-east-1", aws_access_key_id="local",
                 aws_secret_access_key="local").delete_object(Bucket=bucket, Key="pending/iam-test/0000000000001-00")


@pytest.mark.iam_denials
def test_commit_pending_without_its_budget_statement_commits_nothing_until_it_is_back(stack):
    original = iam_config(stack)
    with open(original["template"]) as f:
        template = yaml.safe_load(f)
    statements = template["Resources"][ROLE_PATH]["Properties"]["Policies"][0]["Statement"]
    template["Resources"][ROLE_PATH]["Properties"]["Policies"][0]["Statement"] = [
        s for s in statements if s.get("Sid") != "CountRequests"]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(template, f)
    body = json.loads(stack.callgen("--minutes", 0.2, "--seed", 77))
    body["call_id"] = "iam-no-budget"
    admin = boto3.client("s3", endpoint_url=stack.dynamodb, region_name="us-east-1", aws_access_key_id="local",
                         aws_secret_access_key="local", config=botocore.config.Config(s3={"addressing_style": "path"}))
    bucket = stack.env["FRAMES_BUCKET"]
    folder = hashlib.sha256(b"iam-no-budget").hexdigest()[:32]
    try:
        configure(stack, dict(original, template=f.name))
        stack.faults.add({"op": "*", "fault": "internal", "times": 100000, "table": stack.calls_table})
        # Nothing reads the copy until it is renamed: a commit that read it meanwhile would
        # store it once the table is back.
        stack.faults.add({"service": "s3", "op": "GetObject", "fault": "internal", "times": 100000,
                          "table": bucket, "contains": folder})
        a = stack.post_create_call(json.dumps(body).encode())
        assert a.status == 202, a
        # Only a paced copy takes a send of the budget (one left by an outage was counted
        # when it came): renamed as a send over its workspace's budget would have left it.
        listed = admin.list_objects_v2(Bucket=bucket, Prefix="pending/").get("Contents", [])
        kept = next(o["Key"] for o in listed if f"/{folder}/" in o["Key"])
        admin.copy_object(Bucket=bucket, Key=kept + "-paced", CopySource={"Bucket": bucket, "Key": kept})
        admin.delete_object(Bucket=bucket, Key=kept)
        stack.faults.clear(table=bucket)
        stack.faults.clear(table=stack.calls_table)
        time.sleep(12)  # the queue's commit and two sweeps (every 5 s locally)
        assert stack.get_call("iam-no-budget") is None, "committed without the right to take its budget"
        denied = stack.faults.stats()["denied"]
        assert any(k.startswith("commit-pending dynamodb:UpdateItem") for k in denied), denied
    finally:
        configure(stack, original)
    deadline = time.time() + 30
    while stack.get_call("iam-no-budget") is None and time.time() < deadline:
        time.sleep(0.5)
    assert stack.get_call("iam-no-budget") is not None, "committed once its statement is back"
