"""What the SDK scripts share: the gateway's address and master key from the environment, a time
bound on the whole script, the requests the SDK put on the wire, and the JSON summary on stdout
that tests/sdk.rs asserts on."""

import json
import os
import signal
import sys

# A script that hangs is killed (SIGALRM's default action) rather than holding the test up.
signal.alarm(60)

GATEWAY = os.environ["SWITCHYARD_GATEWAY_URL"]
MASTER_KEY = os.environ["SWITCHYARD_MASTER_KEY"]
TIMEOUT = 20.0

# Each request the SDK sent, as it left the client: method, path, headers and the body's text.
sent = []


def record(request):
    request.read()
    sent.append(
        {
            "method": request.method,
            "path": request.url.path,
            "headers": {k.lower(): v for k, v in request.headers.items() if k.lower() != "content-length"},
            "body": request.content.decode("utf-8"),
        }
    )


def http_client(sdk):
    """The SDK's own default HTTP client with the recording hook; no proxy from the environment."""
    return sdk.DefaultHttpxClient(event_hooks={"request": [record]}, trust_env=False, timeout=TIMEOUT)


def report(**summary):
    summary["sent"] = sent
    json.dump(summary, sys.stdout)
    sys.stdout.write("\n")
