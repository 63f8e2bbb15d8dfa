"""API Gateway's route throttles, as template.yaml sets them on the HTTP API: a token bucket
per route key (`POST /v1/calls`), all clients together, with the burst and the rate of the
route's `RouteSettings`, else of `DefaultRouteSettings` (a `Ref` to a parameter takes its
default). A request over it gets API Gateway's own 429 `{"message":"Too Many Requests"}`
before any function runs."""
import threading
import time


def _value(setting, parameters):
    if isinstance(setting, dict) and "Ref" in setting:
        return float(parameters[setting["Ref"]]["Default"])
    return float(setting)


class Throttles:
    def __init__(self, template, clock=time.monotonic):
        parameters = template.get("Parameters", {})
        api = next(r["Properties"] for r in template["Resources"].values() if r.get("Type") == "AWS::Serverless::HttpApi")

        def limits(settings):
            return (_value(settings["ThrottlingBurstLimit"], parameters),
                    _value(settings["ThrottlingRateLimit"], parameters))

        self.default = limits(api["DefaultRouteSettings"])
        self.routes = {key: limits(s) for key, s in api.get("RouteSettings", {}).items()}
        self.clock = clock
        self.lock = threading.Lock()
        self.buckets = {}  # route key -> (tokens, when)

    def limits(self, route):
        """(burst, rate a second) of `route`."""
        return self.routes.get(route, self.default)

    def admit(self, route):
        """Whether a request on `route` passes now (then it takes a token)."""
        burst, rate = self.limits(route)
        now = self.clock()
        with self.lock:
            tokens, when = self.buckets.get(route, (burst, now))
            tokens = min(burst, tokens + (now - when) * rate)
            admitted = tokens >= 1
            self.buckets[route] = (tokens - 1 if admitted else tokens, now)
        return admitted
