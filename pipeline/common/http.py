"""One HTTP request with retries, for the telemetry sources that speak HTTP (MLflow, Prometheus).

A connection error, a timeout, HTTP 429 and the 5xx answers a proxy or an overloaded server gives
are retried with exponential back-off; any other HTTP error is the caller's to explain.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

RETRIES = 3  # tries per request
RETRY_SECONDS = 0.5  # first back-off; doubled each try
TRANSIENT = frozenset({429, 500, 502, 503, 504})


class Unreachable(Exception):
    """No answer after every try: ``reason`` is the last connection error's."""

    def __init__(self, reason: object) -> None:
        super().__init__(str(reason))
        self.reason = reason


def read(request: urllib.request.Request, timeout: float) -> bytes:
    """The body of the answer to ``request``.

    Raises the answer's ``urllib.error.HTTPError`` when it is not transient or the last try
    failed with one, and ``Unreachable`` when the last try could not connect or timed out.
    """
    for attempt in range(RETRIES):
        last = attempt == RETRIES - 1
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            if error.code not in TRANSIENT or last:
                raise
        except (urllib.error.URLError, OSError) as error:
            if last:
                raise Unreachable(getattr(error, "reason", error)) from None
        time.sleep(RETRY_SECONDS * 2**attempt)
    raise AssertionError("unreachable")
