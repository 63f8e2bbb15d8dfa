"""What the local stack holds, read as a tester reads it: clients of its DynamoDB and S3,
every item of a table, every object of the frames' bucket, each decompressed when it is
zstd (frames, pending copies, trace parts). For checks that nothing is stored that should
not be: the history checker's scan of what an erase left, the privacy tests' scan for
planted values."""
import io


def aws(stack, service):
    """A boto3 client of the local stack's `service` (dynamodb, s3)."""
    import boto3
    from botocore.config import Config

    return boto3.client(service, endpoint_url=stack.dynamodb, region_name="us-east-1", aws_access_key_id="local",
                        aws_secret_access_key="local",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                                      connect_timeout=5, read_timeout=30))


def unpacked(data):
    """An object's bytes, decompressed when they are zstd frames (one or several)."""
    import zstandard

    if data[:4] != b"\x28\xb5\x2f\xfd":
        return data
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as r:
            return r.read()
    except zstandard.ZstdError:
        return data


def every_item(stack, table):
    """Each item of `table`, as DynamoDB's JSON, binary attributes decompressed (bytes)."""
    ddb = aws(stack, "dynamodb")
    start = None
    while True:
        page = ddb.scan(TableName=table, **({"ExclusiveStartKey": start} if start else {}))
        for item in page.get("Items", []):
            yield {name: (unpacked(value["B"]) if "B" in value else value) for name, value in item.items()}
        start = page.get("LastEvaluatedKey")
        if not start:
            return


def every_object(stack):
    """(key, bytes decompressed) of each object of the frames' bucket."""
    s3 = aws(stack, "s3")
    bucket = stack.env["FRAMES_BUCKET"]
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            try:
                yield o["Key"], unpacked(s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())
            except s3.exceptions.NoSuchKey:
                continue  # deleted since it was listed


def found_stored(stack, needles):
    """(where, key, needle) of each of `needles` (strings) found in an item of the Calls or
    the Directory table or an object of the bucket, decompressed: what was stored that a
    policy should have kept out."""
    import json

    found = []
    for table in (stack.calls_table, stack.env["DIRECTORY_TABLE"]):
        for item in every_item(stack, table):
            text = b"".join(v if isinstance(v, bytes) else json.dumps(v).encode() for v in item.values())
            found += [(table, item["pk"]["S"], n) for n in needles if n.encode() in text]
    for key, data in every_object(stack):
        found += [("s3", key, n) for n in needles if n.encode() in data]
    return found
