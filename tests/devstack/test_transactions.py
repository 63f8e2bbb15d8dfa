"""devstack.transactions: a transaction backs up the items it names, not whole tables, and a
cancelled one still changes none of its items."""
import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models.table import Table

from devstack import transactions
from local_tables import create_table


@pytest.fixture
def db(monkeypatch):
    transactions.install()
    with mock_aws():
        c = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
        yield create_table(c)


def key(pk, sk="x"):
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def items(db):
    return sorted((i["pk"]["S"], i.get("n", {}).get("N")) for i in db.scan(TableName="t")["Items"])


def test_a_cancelled_transaction_changes_none_of_its_items(db):
    db.put_item(TableName="t", Item={**key("old"), "n": {"N": "1"}})
    db.put_item(TableName="t", Item={**key("gone"), "n": {"N": "7"}})
    with pytest.raises(ClientError) as e:
        db.transact_write_items(TransactItems=[
            {"Put": {"TableName": "t", "Item": {**key("new"), "n": {"N": "2"}}}},
            {"Update": {"TableName": "t", "Key": key("old"), "UpdateExpression": "SET n = :n",
                        "ExpressionAttributeValues": {":n": {"N": "3"}}}},
            {"Delete": {"TableName": "t", "Key": key("gone")}},
            {"ConditionCheck": {"TableName": "t", "Key": key("missing"), "ConditionExpression": "attribute_exists(pk)"}},
        ])
    assert e.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert items(db) == [("gone", "7"), ("old", "1")]
    db.transact_write_items(TransactItems=[
        {"Put": {"TableName": "t", "Item": {**key("new"), "n": {"N": "2"}}}},
        {"Update": {"TableName": "t", "Key": key("old"), "UpdateExpression": "SET n = :n",
                    "ExpressionAttributeValues": {":n": {"N": "3"}}}},
        {"Delete": {"TableName": "t", "Key": key("gone")}},
    ])
    assert items(db) == [("new", "2"), ("old", "3")]


def test_a_transaction_refused_whole_writes_nothing(db):
    with pytest.raises(ClientError) as e:
        db.transact_write_items(TransactItems=[
            {"Put": {"TableName": "t", "Item": {**key("a"), "n": {"N": "1"}}}},
            {"Put": {"TableName": "t", "Item": {**key("a"), "n": {"N": "2"}}}},
        ])
    assert e.value.response["Error"]["Code"] == "ValidationException"
    assert items(db) == []


def test_a_transaction_copies_no_table(db, monkeypatch):
    """moto's own backup deep-copies every table a transaction names: its cost grew with
    everything stored, and `make chaos` slowed down and ran the local DynamoDB out of memory."""
    for i in range(50):
        db.put_item(TableName="t", Item=key(f"k{i}"))

    def refuse(self, memo):
        raise AssertionError("a whole table was copied")

    monkeypatch.setattr(Table, "__deepcopy__", refuse, raising=False)
    db.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": {**key("k1"), "n": {"N": "5"}}}}])
    with pytest.raises(ClientError):
        db.transact_write_items(TransactItems=[
            {"Put": {"TableName": "t", "Item": {**key("k2"), "n": {"N": "5"}}}},
            {"ConditionCheck": {"TableName": "t", "Key": key("nope"), "ConditionExpression": "attribute_exists(pk)"}},
        ])
    assert ("k1", "5") in items(db) and ("k2", None) in items(db)
