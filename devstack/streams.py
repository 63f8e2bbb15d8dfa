"""The DynamoDB stream event sources of template.yaml, locally: what Lambda's event source
mapping does with a table's stream, against the local DynamoDB's streams (moto's
`dynamodbstreams`, behind devstack.dynamodb).

    streams = Streams(template)
    streams.poll(function, environ)   # one poller per DynamoDB event of a function

  * A function's `DynamoDB` event names `Fn::GetAtt: [<table>, StreamArn]`; the local table
    is the one the functions' environment names (the Globals variable whose value is
    `Ref: <table>`, such as CALLS_TABLE).
  * From `StartingPosition` (TRIM_HORIZON: the oldest record), up to `BatchSize` records
    that pass the event's `FilterCriteria` are handed to the function in the event Lambda
    builds (`Records[]`, `eventSource: aws:dynamodb`, `eventSourceARN`, `dynamodb` with the
    images, `ApproximateCreationDateTime` in epoch seconds). Records no filter passes are
    skipped, as Lambda skips them.
  * With `ReportBatchItemFailures`, the answer's `batchItemFailures` names a record's
    `SequenceNumber`: polling goes on from that record (it and those after it come back). A
    failed invocation (an error, a timeout, a killed instance) hands back the whole batch.
    Records are retried until they succeed (`MaximumRetryAttempts` -1, AWS's default for
    streams); in AWS the stream keeps them 24 hours.
  * One shard, in order: moto's stream has one.
"""
import base64
import json
import os
import sys
import threading
import time

ACCOUNT = "123456789012"


def matches(pattern, value):
    """Whether `value` (a record) passes an event filter `pattern` (EventBridge's pattern
    syntax, as Lambda's FilterCriteria use it): each key of the pattern present, a list
    naming the values allowed, an object matched within."""
    if isinstance(pattern, list):
        return value in pattern
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and matches(p, value[k]) for k, p in pattern.items())
    return pattern == value


class Streams:
    def __init__(self, template):
        self.template = template
        self.region = os.environ.get("AWS_REGION", "us-east-1")

    def sources(self):
        """(function binary, table logical id, batch size, filter patterns, partial
        failures) of each DynamoDB event."""
        found = []
        for resource in self.template["Resources"].values():
            if resource.get("Type") != "AWS::Serverless::Function":
                continue
            binary = resource["Metadata"]["BuildProperties"]["Binary"]
            for event in resource["Properties"].get("Events", {}).values():
                if event.get("Type") != "DynamoDB":
                    continue
                p = event["Properties"]
                table = p["Stream"]["Fn::GetAtt"][0]
                patterns = [json.loads(f["Pattern"]) for f in p.get("FilterCriteria", {}).get("Filters", [])]
                partial = "ReportBatchItemFailures" in p.get("FunctionResponseTypes", [])
                found.append((binary, table, p.get("BatchSize", 100), patterns, partial))
        return found

    def table_name(self, logical, environ):
        """The local name of table `logical`: the functions' variable that names it."""
        variables = self.template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
        for name, value in variables.items():
            if value == {"Ref": logical}:
                return environ[name]
        raise KeyError(f"no environment variable names table {logical}")

    def poll(self, function, environ, table_logical, batch_size, patterns, partial):
        threading.Thread(target=self._poll, args=(function, self.table_name(table_logical, environ), batch_size,
                                                   patterns, partial), daemon=True).start()

    def _client(self, service):
        import boto3

        # The local DynamoDB serves its streams too: named here, as boto3 would otherwise
        # look for dynamodbstreams at AWS.
        return boto3.client(service, region_name=self.region, endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"])

    def _poll(self, function, table, batch_size, patterns, partial):
        ddb, streams = self._client("dynamodb"), self._client("dynamodbstreams")
        arn, shard, iterator = None, None, None
        said = set()
        while True:
            try:
                if iterator is None:
                    arn = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
                    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
                    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard,
                                                          ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
                got = streams.get_records(ShardIterator=iterator, Limit=1000)
            except Exception as e:  # the local DynamoDB under a fault: as the mapping, try again
                if type(e).__name__ not in said:
                    said.add(type(e).__name__)
                    sys.stderr.write(f"streams: {table}: {type(e).__name__}: {e} (trying again)\n")
                time.sleep(0.5)
                continue
            records = [lambda_record(r, arn) for r in got.get("Records", [])]
            passed = [r for r in records if not patterns or any(matches(p, r) for p in patterns)]
            start = 0
            while start < len(passed):
                batch = passed[start:start + batch_size]
                retry_from = self._invoke(function, batch, partial)
                if retry_from is None:
                    start += len(batch)
                    continue
                start += retry_from
                time.sleep(0.5)
            iterator = got.get("NextShardIterator") or iterator
            if not got.get("Records"):
                time.sleep(0.2)

    def _invoke(self, function, batch, partial):
        """Hands `batch` to `function`: None when it is done with, else the index of the
        record to go on from."""
        answer = function.invoke(json.dumps({"Records": batch}).encode())
        if answer is None or not answer[0]:
            return 0
        if not partial:
            return None
        try:
            failures = json.loads(answer[1]).get("batchItemFailures") or []
        except (ValueError, AttributeError):
            return 0
        sequences = [r["dynamodb"]["SequenceNumber"] for r in batch]
        named = [f.get("itemIdentifier") for f in failures if isinstance(f, dict)]
        found = [sequences.index(s) for s in named if s in sequences]
        if named and not found:
            return 0  # a failure naming no record of the batch: Lambda retries the batch
        return min(found) if found else None


def lambda_record(record, arn):
    """A stream record as Lambda's event has it: the stream's ARN added, and the creation
    time in epoch seconds (boto3 reads it as a datetime)."""
    out = dict(record)
    dynamodb = dict(out.get("dynamodb", {}))
    created = dynamodb.get("ApproximateCreationDateTime")
    if hasattr(created, "timestamp"):
        dynamodb["ApproximateCreationDateTime"] = round(created.timestamp())
    out["dynamodb"] = dynamodb
    out["eventSourceARN"] = arn
    return json.loads(json.dumps(out, default=_json))


def _json(value):
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()  # a binary attribute, as Lambda's JSON has it
    return str(value)
