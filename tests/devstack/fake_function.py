"""A stand-in for a function's binary, for the local API Gateway's own tests: speaks the
Lambda Runtime API as the functions do (GET …/invocation/next, POST …/<id>/response) and
answers every event with 200 and JSON naming the function, the route key, the method and
the instance (its process id), so a test sees which function a request reached, through
which route and on which instance; a request whose query string says `hold` is held 0.5 s
first, so that requests overlap. A scheduled
event (EventBridge's) is appended to the file `FAKE_EVENTS_LOG` names."""
import json
import os
import time
import urllib.request

API = f"http://{os.environ['AWS_LAMBDA_RUNTIME_API']}/2018-06-01/runtime/invocation"
NAME = os.environ["AWS_LAMBDA_FUNCTION_NAME"]


def main():
    while True:
        with urllib.request.urlopen(f"{API}/next") as r:
            request_id = r.headers["Lambda-Runtime-Aws-Request-Id"]
            event = json.loads(r.read())
        if event.get("source") == "aws.events":
            with open(os.environ["FAKE_EVENTS_LOG"], "a") as log:
                log.write(json.dumps({"function": NAME, "detail-type": event["detail-type"]}) + "\n")
            answer = {}
        else:
            answer = http_answer(event)
        urllib.request.urlopen(urllib.request.Request(f"{API}/{request_id}/response", method="POST",
                                                      data=json.dumps(answer).encode())).read()


def http_answer(event):
    if "hold" in event.get("rawQueryString", ""):
        time.sleep(0.5)
    return {
        "statusCode": 200,
        "headers": {"content-type": "application/json"},
        "body": json.dumps({"function": NAME, "routeKey": event["routeKey"],
                            "method": event["requestContext"]["http"]["method"],
                            "instance": os.getpid()}),
    }


if __name__ == "__main__":
    main()
