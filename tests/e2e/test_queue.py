"""Accepted calls are committed through the queue, as in AWS: S3 announces each pending
object on an SQS queue, and commit-pending, fed by the event source mapping
(devstack.queues), commits it within seconds. Here the sweep never runs (its schedule is an
hour), so only the queue can commit; a commit that fails comes back within seconds (the
function sets its visibility: here 1 s, then doubling), not at the queue's visibility
timeout (60 s here); a commit that keeps failing ends in the dead-letter queue, and its
call is not lost: the object stays in S3, and a redrive commits it."""
import json
import os
import time

import boto3
import pytest

from devstack.stack import Stack, wait_for


@pytest.fixture(scope="module")
def queued():
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "call-ingest-e2e-queue.log"), "w")
    env = {"LOCAL_SCHEDULE_SECONDS": "3600", "PENDING_RETRY_SECONDS": "1"}
    with Stack(instances=1, log=log, env=env) as s:
        yield s


def client(stack, service):
    return boto3.client(service, endpoint_url=stack.dynamodb, region_name="us-east-1",
                        aws_access_key_id="local", aws_secret_access_key="local")


def queue_url(stack, name):
    return client(stack, "sqs").get_queue_url(QueueName=f"{stack.env['FRAMES_BUCKET']}-{name}")["QueueUrl"]


def body(stack, call_id):
    generated = json.loads(stack.callgen("--minutes", 0.2, "--seed", 5))
    generated["call_id"] = call_id
    return json.dumps(generated).encode()


def accepted_during_an_outage(stack, call_id, lasting=0):
    """Posts `call_id` while the Calls table fails; the outage lasts `lasting` seconds more."""
    stack.faults.add({"op": "*", "fault": "internal", "times": 100000, "table": stack.calls_table})
    a = stack.post_create_call(body(stack, call_id))
    time.sleep(lasting)
    stack.faults.clear(table=stack.calls_table)
    assert a.status == 202, a
    return a


def pending(stack):
    out = client(stack, "s3").list_objects_v2(Bucket=stack.env["FRAMES_BUCKET"], Prefix="pending/")
    return [o["Key"] for o in out.get("Contents", [])]




def test_an_accepted_call_is_committed_through_the_queue_within_seconds(queued):
    accepted_during_an_outage(queued, "via-queue")
    started = time.time()
    stored = wait_for(lambda: queued.get_call("via-queue"), 15)
    assert stored is not None, "not committed within 15 s, and no sweep runs"
    print(f"committed {time.time() - started:.1f} s after DynamoDB returned")
    assert pending(queued) == []
    again = queued.post_create_call(body(queued, "via-queue"))
    assert (again.status, again.body["is_new"], again.body["id"]) == (200, False, stored["id"])


def test_a_commit_that_failed_is_tried_again_within_seconds_not_at_the_visibility_timeout(queued):
    # The outage outlasts the queue's first delivery: that commit fails, and without the
    # function's own visibility change the message would come back only after 60 s.
    accepted_during_an_outage(queued, "tried-again", lasting=4)
    started = time.time()
    stored = wait_for(lambda: queued.get_call("tried-again"), 15)
    assert stored is not None, "not committed within 15 s of DynamoDB's return (the queue's visibility is 60 s)"
    print(f"committed {time.time() - started:.1f} s after DynamoDB returned")
    assert pending(queued) == []


def test_a_commit_that_keeps_failing_is_dead_lettered_and_its_call_kept_for_a_redrive(queued):
    # S3 refuses to read pending objects back: every commit fails, and the message returns.
    queued.faults.add({"service": "s3", "op": "GetObject", "fault": "internal", "times": 100000,
                       "contains": "/pending/"})
    accepted_during_an_outage(queued, "dead-lettered")
    sqs = client(queued, "sqs")
    dlq = queue_url(queued, "PendingDeadLetterQueue")

    def dead_lettered():
        attributes = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])
        return int(attributes["Attributes"]["ApproximateNumberOfMessages"])

    assert wait_for(dead_lettered, 60) == 1, "after 5 receipts the message is in the dead-letter queue"
    assert queued.get_call("dead-lettered") is None
    assert len(pending(queued)) == 1, "the call is still durable in S3"
    # S3 is back; an operator redrives the dead-letter queue (AWS: start-message-move-task).
    queued.faults.clear()
    for m in sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", []):
        sqs.send_message(QueueUrl=queue_url(queued, "PendingQueue"), MessageBody=m["Body"])
        sqs.delete_message(QueueUrl=dlq, ReceiptHandle=m["ReceiptHandle"])
    assert wait_for(lambda: queued.get_call("dead-lettered"), 15) is not None
    assert pending(queued) == []
