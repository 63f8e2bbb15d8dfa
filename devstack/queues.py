"""The queues of template.yaml, locally: what CloudFormation creates and what Lambda's event
source mapping does, against the local SQS and S3 (moto, behind devstack.dynamodb).

    queues = Queues(template)        # template.yaml, parsed
    queues.create(bucket)            # the queues, their redrive, the bucket's notification
    queues.variables()               # {EVENTS_QUEUE_URL: …}: the functions' variables naming one
    queues.poll(binary, function)    # as the event source mapping: batches, partial failures

  * Each `AWS::SQS::Queue` becomes a queue named `<bucket>-<logical id>`, with its
    `RedrivePolicy` (dead-letter queue, maxReceiveCount) as the template sets it.
  * The frames bucket's `NotificationConfiguration.QueueConfigurations` are set on the local
    bucket, so moto's S3 sends the queue S3's own event notification for each object.
  * For a function's `SQS` event, `ScalingConfig.MaximumConcurrency` pollers receive up to
    `BatchSize` messages, invoke the function with the event Lambda builds (`Records`,
    `eventSource: aws:sqs`), then delete every message but those the answer names in
    `batchItemFailures` (all of them when the invocation fails). A message left comes back
    after the visibility timeout, and after maxReceiveCount receipts moto moves it to the
    dead-letter queue, as SQS does.

The visibility timeout is `LOCAL_QUEUE_VISIBILITY_SECONDS` (default 60, the function's
timeout: AWS refuses an event source whose queue's is shorter) instead of the template's
360, so a test need not wait six minutes.
"""
import json
import os
import threading
import time

ACCOUNT = "123456789012"  # moto's account for any access key


def _arn_of(value):
    """The logical id a `Fn::GetAtt: [X, Arn]` names."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return value["Fn::GetAtt"][0]
    raise ValueError(f"expected Fn::GetAtt [<queue>, Arn], found {value!r}")


class Queues:
    def __init__(self, template):
        self.resources = template["Resources"]
        self.region = os.environ.get("AWS_REGION", "us-east-1")
        self.urls = {}
        self.visibility = int(os.environ.get("LOCAL_QUEUE_VISIBILITY_SECONDS", "60"))

    def _client(self, service):
        import boto3

        return boto3.client(service, region_name=self.region)

    def logical_queues(self):
        return [name for name, r in self.resources.items() if r.get("Type") == "AWS::SQS::Queue"]

    def consumers(self):
        """(function binary, queue logical id, batch size, pollers) of each SQS event."""
        found = []
        for resource in self.resources.values():
            if resource.get("Type") != "AWS::Serverless::Function":
                continue
            binary = resource["Metadata"]["BuildProperties"]["Binary"]
            for event in resource["Properties"].get("Events", {}).values():
                if event.get("Type") == "SQS":
                    p = event["Properties"]
                    pollers = p.get("ScalingConfig", {}).get("MaximumConcurrency", 2)
                    found.append((binary, _arn_of(p["Queue"]), p.get("BatchSize", 10), pollers))
        return found

    def name(self, logical, bucket):
        return f"{bucket}-{logical}"[:80]

    def arn(self, logical, bucket):
        return f"arn:aws:sqs:{self.region}:{ACCOUNT}:{self.name(logical, bucket)}"

    def create(self, bucket):
        """Creates the template's queues (dead-letter queues first) and the bucket's
        notifications to them."""
        sqs = self._client("sqs")
        queues = self.logical_queues()
        # A queue whose redrive names another after that one.
        ordered = sorted(queues, key=lambda q: "RedrivePolicy" in self.resources[q].get("Properties", {}))
        for logical in ordered:
            props = self.resources[logical].get("Properties", {})
            attributes = {"VisibilityTimeout": str(self.visibility)}
            redrive = props.get("RedrivePolicy")
            if redrive:
                attributes["RedrivePolicy"] = json.dumps({
                    "deadLetterTargetArn": self.arn(_arn_of(redrive["deadLetterTargetArn"]), bucket),
                    "maxReceiveCount": int(redrive["maxReceiveCount"]),
                })
            self.urls[logical] = sqs.create_queue(QueueName=self.name(logical, bucket), Attributes=attributes)["QueueUrl"]
        frames = next(r for r in self.resources.values()
                      if r.get("Type") == "AWS::S3::Bucket" and "NotificationConfiguration" in r.get("Properties", {}))
        configs = []
        for c in frames["Properties"]["NotificationConfiguration"].get("QueueConfigurations", []):
            rules = c.get("Filter", {}).get("S3Key", {}).get("Rules", [])
            configs.append({
                "QueueArn": self.arn(_arn_of(c["Queue"]), bucket), "Events": [c["Event"]],
                "Filter": {"Key": {"FilterRules": [{"Name": r["Name"], "Value": r["Value"]} for r in rules]}},
            })
        self._client("s3").put_bucket_notification_configuration(
            Bucket=bucket, NotificationConfiguration={"QueueConfigurations": configs})

    def variables(self):
        """The functions' variables that name a queue (`Ref: <queue>` in the template: its
        URL), as created: {name: url}."""
        found = {}
        for resource in self.resources.values():
            if resource.get("Type") != "AWS::Serverless::Function":
                continue
            variables = resource["Properties"].get("Environment", {}).get("Variables", {})
            for name, value in variables.items():
                if isinstance(value, dict) and value.get("Ref") in self.urls:
                    found[name] = self.urls[value["Ref"]]
        return found

    def poll(self, logical, bucket, function, batch_size, pollers):
        """Starts `pollers` threads feeding `function` the queue's messages."""
        url, arn = self.urls[logical], self.arn(logical, bucket)
        for _ in range(pollers):
            threading.Thread(target=self._poll, args=(url, arn, function, batch_size), daemon=True).start()

    def _poll(self, url, arn, function, batch_size):
        sqs = self._client("sqs")
        while True:
            try:
                got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=min(batch_size, 10),
                                          AttributeNames=["All"], MessageAttributeNames=["All"])
            except Exception:  # the local SQS under a fault: as the event source mapping, try again
                time.sleep(1)
                continue
            messages = got.get("Messages", [])
            if not messages:
                time.sleep(0.2)
                continue
            answer = function.invoke(json.dumps(sqs_event(messages, arn, self.region)).encode())
            failed = {m["MessageId"] for m in messages}
            if answer is not None and answer[0]:
                try:
                    failed = {f["itemIdentifier"] for f in json.loads(answer[1]).get("batchItemFailures", [])}
                except (ValueError, AttributeError, KeyError, TypeError):
                    pass
            done = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(messages) if m["MessageId"] not in failed]
            if done:
                try:
                    sqs.delete_message_batch(QueueUrl=url, Entries=done)
                except Exception:
                    pass  # they come back after the visibility timeout, as in AWS


def sqs_event(messages, arn, region):
    """The event Lambda's SQS event source mapping builds from received messages."""
    return {"Records": [{
        "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
        "attributes": m.get("Attributes", {}), "messageAttributes": m.get("MessageAttributes", {}),
        "md5OfBody": m.get("MD5OfBody", ""), "eventSource": "aws:sqs", "eventSourceARN": arn, "awsRegion": region,
    } for m in messages]}
