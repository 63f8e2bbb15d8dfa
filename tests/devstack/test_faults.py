"""The fault layer refuses what DynamoDB refuses and moto lets through, and answers its
faults in DynamoDB's wire shapes (boto3 parses them as it parses DynamoDB's)."""
import json
import subprocess
import sys
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError


@pytest.fixture(scope="module")
def endpoint():
    p = subprocess.Popen([sys.executable, "-m", "devstack.dynamodb", "--port", "0", "--watch-stdin"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = p.stdout.readline().split()[1]
    yield f"http://127.0.0.1:{port}"
    p.stdin.close()
    p.wait(10)


@pytest.fixture(scope="module")
def db(endpoint):
    c = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x",
                     aws_secret_access_key="x", config=Config(retries={"mode": "standard", "total_max_attempts": 1}, read_timeout=5))
    c.create_table(
        TableName="t", BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"}])
    return c


def control(endpoint, method, path, spec):
    r = urllib.request.Request(endpoint + path, method=method, data=json.dumps(spec).encode())
    return json.loads(urllib.request.urlopen(r).read())


def refused(call):
    with pytest.raises(ClientError) as e:
        call()
    return e.value.response["Error"]["Code"], e.value.response["Error"]["Message"]


def key(pk="a", sk="x"):
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def test_keys_over_the_limits_are_refused_on_reads_too(db):
    code, message = refused(lambda: db.get_item(TableName="t", Key=key("a" * 2049)))
    assert code == "ValidationException" and "2048" in message
    code, message = refused(lambda: db.batch_get_item(RequestItems={"t": {"Keys": [key("a" * 2049)]}}))
    assert code == "ValidationException"
    code, message = refused(lambda: db.put_item(TableName="t", Item=key("a", "s" * 1025)))
    assert code == "ValidationException" and "1024" in message
    db.put_item(TableName="t", Item=key("a" * 2048, "s" * 1024))


@pytest.mark.parametrize("number", ["1e200", "-1e126", "1e-131", "1.2345678901234567890123456789012345678901"])
def test_numbers_outside_dynamodbs_range_are_refused(db, number):
    item = {**key(), "n": {"N": number}}
    assert refused(lambda: db.put_item(TableName="t", Item=item))[0] == "ValidationException"
    update = lambda: db.update_item(TableName="t", Key=key(), UpdateExpression="SET n = :n",  # noqa: E731
                                    ExpressionAttributeValues={":n": {"N": number}})
    assert refused(update)[0] == "ValidationException"


def test_numbers_inside_the_range_are_accepted(db):
    db.put_item(TableName="t", Item={**key(), "n": {"N": "9.9999999999999999999999999999999999999E+125"},
                                     "m": {"N": "1e-130"}, "z": {"N": "0"}})


def test_items_over_400_kb_are_refused_in_transactions(db):
    big = {**key("big"), "data": {"B": b"x" * (400 * 1024)}}
    code, message = refused(lambda: db.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": big}}]))
    assert code == "ValidationException" and "Item size" in message


def test_a_cancelled_transaction_carries_a_reason_per_item(endpoint, db):
    control(endpoint, "POST", "/_faults/rules", {"op": "TransactWriteItems", "fault": "cancel_throttle",
                                                   "item": 1, "table": "t"})
    items = [{"Put": {"TableName": "t", "Item": key(str(i))}} for i in range(3)]
    with pytest.raises(ClientError) as e:
        db.transact_write_items(TransactItems=items)
    assert e.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in e.value.response["CancellationReasons"]] == ["None", "ThrottlingError", "None"]


def test_a_fault_fires_as_often_as_asked_then_stops(endpoint, db):
    rid = control(endpoint, "POST", "/_faults/rules", {"op": "PutItem", "fault": "throttle", "times": 1,
                                                         "skip": 1, "table": "t"})["id"]
    db.put_item(TableName="t", Item=key("skipped"))
    assert refused(lambda: db.put_item(TableName="t", Item=key("throttled")))[0] == "ThrottlingException"
    db.put_item(TableName="t", Item=key("after"))
    rules = control(endpoint, "GET", "/_faults/rules", {})["rules"]
    assert [r["fired"] for r in rules if r["id"] == rid] == [1]


def test_a_lost_reply_is_applied_but_never_answered(endpoint, db):
    control(endpoint, "POST", "/_faults/rules", {"op": "PutItem", "fault": "lost_reply", "table": "t"})
    with pytest.raises(Exception):
        db.put_item(TableName="t", Item=key("lost"))
    assert db.get_item(TableName="t", Key=key("lost"))["Item"] == key("lost")
