"""The fault layer refuses what DynamoDB refuses and moto lets through, and answers its
faults in DynamoDB's wire shapes (boto3 parses them as it parses DynamoDB's)."""
import json
import subprocess
import sys
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from local_tables import create_table


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
    return create_table(c)


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


@pytest.fixture(scope="module")
def s3(endpoint):
    c = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x",
                     aws_secret_access_key="x",
                     config=Config(s3={"addressing_style": "path"}, retries={"mode": "standard", "total_max_attempts": 1}))
    c.create_bucket(Bucket="bucket-b")
    return c


def test_s3_is_served_on_the_same_port_and_its_faults_touch_only_s3(endpoint, db, s3):
    control(endpoint, "POST", "/_faults/rules", {"service": "s3", "op": "PutObject", "fault": "slowdown",
                                                  "table": "bucket-b"})
    db.put_item(TableName="t", Item=key("untouched"))  # an S3 rule never fires on DynamoDB
    assert refused(lambda: s3.put_object(Bucket="bucket-b", Key="k", Body=b"x"))[0] == "SlowDown"
    s3.put_object(Bucket="bucket-b", Key="k", Body=b"x")
    assert s3.get_object(Bucket="bucket-b", Key="k")["Body"].read() == b"x"
    control(endpoint, "POST", "/_faults/rules", {"service": "s3", "op": "GetObject", "fault": "internal",
                                                  "table": "bucket-b"})
    assert refused(lambda: s3.get_object(Bucket="bucket-b", Key="k"))[0] == "InternalError"
    # A DynamoDB rule on every operation never fires on S3.
    control(endpoint, "POST", "/_faults/rules", {"op": "*", "fault": "throttle", "table": "bucket-b", "times": 5})
    assert s3.get_object(Bucket="bucket-b", Key="k")["Body"].read() == b"x"
    control(endpoint, "DELETE", "/_faults/rules", {"table": "bucket-b"})


def test_an_s3_put_whose_reply_is_lost_is_applied(endpoint, s3):
    control(endpoint, "POST", "/_faults/rules", {"service": "s3", "op": "PutObject", "fault": "lost_reply",
                                                  "table": "bucket-b"})
    with pytest.raises(Exception):
        s3.put_object(Bucket="bucket-b", Key="lost", Body=b"y")
    assert s3.get_object(Bucket="bucket-b", Key="lost")["Body"].read() == b"y"


def test_s3_rules_name_s3_faults_only(endpoint):
    for spec in [{"service": "s3", "fault": "throttle"}, {"fault": "slowdown"}, {"service": "sqs", "fault": "delay"}]:
        r = urllib.request.Request(endpoint + "/_faults/rules", method="POST", data=json.dumps(spec).encode())
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(r)
        assert e.value.code == 400, spec


@pytest.mark.parametrize("method,path,query,headers,op", [
    ("PUT", "/b/k", "", {}, "PutObject"),
    ("PUT", "/b/k", "", {"HTTP_X_AMZ_COPY_SOURCE": "/b/j"}, "CopyObject"),
    ("PUT", "/b/k", "partNumber=1&uploadId=u", {}, "UploadPart"),
    ("PUT", "/b", "", {}, "CreateBucket"),
    ("GET", "/b/k", "", {}, "GetObject"),
    ("GET", "/b", "list-type=2&prefix=frames", {}, "ListObjectsV2"),
    ("HEAD", "/b/k", "", {}, "HeadObject"),
    ("DELETE", "/b/k", "", {}, "DeleteObject"),
    ("POST", "/b", "delete", {}, "DeleteObjects"),
])
def test_s3_operations_are_named_as_aws_names_them(method, path, query, headers, op):
    from devstack.faults import s3_operation
    assert s3_operation({"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, **headers}) == op


def test_transactions_over_100_items_or_4_mb_are_refused(db):
    many = [{"Put": {"TableName": "t", "Item": key("many", str(i))}} for i in range(101)]
    code, message = refused(lambda: db.transact_write_items(TransactItems=many))
    assert code == "ValidationException" and "100" in message
    big = [{"Put": {"TableName": "t", "Item": {**key(f"big{i}"), "b": {"B": b"x" * 390_000}}}} for i in range(11)]
    assert refused(lambda: db.transact_write_items(TransactItems=big)) == (
        "ValidationException", "Transaction request cannot be larger than 4 MB")
    db.transact_write_items(TransactItems=big[:10])  # 3.9 MB: taken


def held_throughput():
    from devstack.faults import Throughput
    return Throughput(lambda region, table: (["pk"], ["sk"]), clock=lambda: 1_900_000_000.5)


def put(pk, kb):
    return {"TableName": "t", "Item": {"pk": {"S": pk}, "sk": {"S": "x"}, "b": {"S": "x" * (kb * 1024 - 20)}}}


def test_one_partition_takes_about_1000_write_units_a_second_and_others_are_not_held_back():
    t = held_throughput()
    assert t.admit("PutItem", put("hot", 390), "us-east-1")
    assert t.admit("PutItem", put("hot", 390), "us-east-1")
    assert not t.admit("PutItem", put("hot", 390), "us-east-1"), "1,170 units in one second"
    assert t.admit("PutItem", put("cold", 390), "us-east-1"), "another partition has its own"
    assert t.admit("PutItem", put("hot", 200), "us-east-1"), "a refused write counted nothing"


def test_a_transaction_costs_two_units_a_kb_and_is_refused_whole():
    t = held_throughput()
    items = [{"Put": put("hot", 300)}, {"Put": put("other", 1)}]
    request = {"TransactItems": items}
    assert t.admit("TransactWriteItems", request, "us-east-1")  # 600 + 2 units
    assert not t.admit("TransactWriteItems", request, "us-east-1"), "1,200 units on hot"
    assert t.admit("PutItem", put("other", 990), "us-east-1"), "the refused transaction counted nothing on other"


def test_a_hot_partition_is_throttled_through_the_server(db):
    # Whole seconds: a burst that straddles two may pass; three bursts cannot all straddle.
    for _ in range(3):
        try:
            for _ in range(4):
                db.put_item(TableName="t", Item={**key("hot-server"), "b": {"B": b"x" * 390_000}})
        except ClientError as e:
            assert e.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
            return
    raise AssertionError("four 390 KB writes a second to one partition were all taken")


def test_one_rule_is_removed_by_its_id_and_the_others_stay(endpoint, s3):
    control(endpoint, "DELETE", "/_faults/rules", {})
    s3.put_object(Bucket="bucket-b", Key="one", Body=b"z")
    lasting = control(endpoint, "POST", "/_faults/rules", {"service": "s3", "op": "GetObject", "fault": "internal",
                                                            "table": "bucket-b", "rate": 1.0})["id"]
    other = control(endpoint, "POST", "/_faults/rules", {"service": "s3", "op": "PutObject", "fault": "slowdown",
                                                          "table": "bucket-b", "rate": 1.0})["id"]
    assert refused(lambda: s3.get_object(Bucket="bucket-b", Key="one"))[0] == "InternalError"
    control(endpoint, "DELETE", "/_faults/rules", {"id": lasting})
    assert s3.get_object(Bucket="bucket-b", Key="one")["Body"].read() == b"z"
    assert [r["id"] for r in control(endpoint, "GET", "/_faults/rules", {})["rules"]] == [other]
    control(endpoint, "DELETE", "/_faults/rules", {})


def test_sqs_refuses_messages_holding_characters_it_does_not_take(endpoint):
    """SQS takes #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD and above #xFFFF: U+FFFE,
    U+FFFF, other control characters and lone surrogates are refused (moto sends them); in
    a batch each such entry fails alone."""
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x",
                       aws_secret_access_key="x", config=Config(retries={"mode": "standard", "total_max_attempts": 1}))
    url = sqs.create_queue(QueueName="characters")["QueueUrl"]
    for bad in ["a\ufffeb", "\uffff", "bell\x07", "\ud800"]:
        code, message = refused(lambda: sqs.send_message(QueueUrl=url, MessageBody=bad))
        assert code == "InvalidMessageContents" and "#xE000 to #xFFFD" in message, (bad, code)
    sqs.send_message(QueueUrl=url, MessageBody="tab\t \ud7ff \ue000 \ufffd \U0010ffff \\ufffe")
    sent = sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "0", "MessageBody": "fine"}, {"Id": "1", "MessageBody": "x\uffff"}, {"Id": "2", "MessageBody": "ok"}])
    assert [e["Id"] for e in sent["Successful"]] == ["0", "2"]
    assert [(e["Id"], e["Code"], e["SenderFault"]) for e in sent["Failed"]] == [("1", "InvalidMessageContents", True)]
    bodies = []
    while got := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        bodies += [m["Body"] for m in got]
        sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                        for i, m in enumerate(got)])
    assert sorted(bodies) == sorted(["tab\t \ud7ff \ue000 \ufffd \U0010ffff \\ufffe", "fine", "ok"])
