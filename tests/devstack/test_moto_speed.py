"""devstack.moto_speed: moto's queries and scans answer exactly as before, pages included,
on the table and on an index, forward and backward, while reading one partition."""
import random

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table
from moto.sqs.models import Queue

from devstack import moto_speed

# moto's own, as imported (each test puts them back, and install() patches over them).
ORIGINALS = {name: Table.__dict__[name] for name in ("all_items", "query", "sorted_items")}
VISIBLE = Queue.__dict__["messages"]


@pytest.fixture
def db(monkeypatch):
    for name, original in ORIGINALS.items():
        monkeypatch.setattr(Table, name, original)
    monkeypatch.setattr(Queue, "messages", VISIBLE)
    with mock_aws():
        c = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
        c.create_table(
            TableName="t", BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": t} for n, t in
                                  (("pk", "S"), ("sk", "S"), ("g", "S"), ("at", "N"))],
            GlobalSecondaryIndexes=[{"IndexName": "by_g", "Projection": {"ProjectionType": "ALL"},
                                     "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                                                   {"AttributeName": "at", "KeyType": "RANGE"}]}])
        rng = random.Random(7)
        for n in range(400):
            item = {"pk": {"S": f"p{rng.randrange(12)}"}, "sk": {"S": f"s{rng.randrange(1000):04}"},
                    "at": {"N": str(rng.choice([rng.randrange(-50, 50), rng.randrange(10**12)]))}, "n": {"N": str(n)}}
            if rng.random() < 0.8:
                item["g"] = {"S": f"g{rng.randrange(3)}"}
            c.put_item(TableName="t", Item=item)
        yield c


def pages(db, **query):
    """Every page's items and last key, following the pages."""
    out, start = [], None
    while True:
        page = db.query(TableName="t", Limit=7, **query, **({"ExclusiveStartKey": start} if start else {}))
        out.append((page["Items"], page.get("LastEvaluatedKey")))
        start = page.get("LastEvaluatedKey")
        if not start:
            return out


QUERIES = [
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "p3"}}},
    {"KeyConditionExpression": "pk = :p AND sk > :s", "ScanIndexForward": False,
     "ExpressionAttributeValues": {":p": {"S": "p5"}, ":s": {"S": "s0400"}}},
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "nothing"}}},
    {"IndexName": "by_g", "KeyConditionExpression": "g = :g", "ExpressionAttributeValues": {":g": {"S": "g1"}}},
    {"IndexName": "by_g", "KeyConditionExpression": "g = :g AND at BETWEEN :a AND :b", "ScanIndexForward": False,
     "ExpressionAttributeValues": {":g": {"S": "g2"}, ":a": {"N": "-20"}, ":b": {"N": "900000000000"}}},
]


def answers(db):
    scan = db.scan(TableName="t", Limit=50)
    return [pages(db, **q) for q in QUERIES] + [(scan["Items"], scan.get("LastEvaluatedKey"))]


def test_queries_and_scans_answer_as_moto_did(db):
    before = answers(db)
    moto_speed.install()
    assert [Table.all_items, Table.query, Table.sorted_items] == [moto_speed._all_items, moto_speed._query,
                                                                  moto_speed._sorted_items]
    after = answers(db)
    assert after == before
    assert sum(len(items) for items, _ in after[0]) > 10, "the partition's items, over several pages"


def test_a_table_query_reads_its_partition_only(db, monkeypatch):
    moto_speed.install()
    monkeypatch.setattr(Table, "all_items", lambda self: pytest.fail("the whole table was read"))
    assert pages(db, **QUERIES[0])[0][0]


def test_a_queue_shows_the_same_messages(db):
    sqs = boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    for n in range(6):
        sqs.send_message(QueueUrl=url, MessageBody=str(n), DelaySeconds=60 if n == 5 else 0)
    taken = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, VisibilityTimeout=60)["Messages"]
    assert len(taken) == 2
    from moto.sqs.models import sqs_backends

    queue = sqs_backends["123456789012"]["us-east-1"].queues["q"]
    before = [m.body for m in queue.messages]
    moto_speed.install()
    assert [m.body for m in queue.messages] == before == ["2", "3", "4"]
