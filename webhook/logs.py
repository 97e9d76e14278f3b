"""Structured JSON logs: one object per line, with whatever ``extra`` fields the caller gave
(the review ``uid`` above all, so a denial can be traced from the API server's audit log)."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Mapping

import orjson

# Attributes every LogRecord has; anything else came in through ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._stamp = ""

    def _timestamp(self, created: float) -> str:
        # Every review logs a line: format the date once a second, not once a line.
        second = int(created)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        return self._stamp

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": f"{self._timestamp(record.created)}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return _dumps(entry)


def _dumps(entry: dict[str, Any]) -> str:
    # orjson is several times faster; the standard library still writes what orjson cannot
    # (non-string keys, integers beyond 64 bits) and anything not ASCII, so lines stay ASCII
    # (escaped) whatever the stream's encoding.
    try:
        line = orjson.dumps(entry, default=str)
    except TypeError:
        line = b"\x80"
    if line.isascii():
        return line.decode("ascii")
    return json.dumps(entry, default=str, separators=(",", ":"))


def emit(logger: logging.Logger, level: int, msg: str, fields: Mapping[str, Any]) -> None:
    """``logger.log(level, msg, extra=fields)`` without looking up the caller's file and line,
    which the JSON lines do not show (this runs once per review)."""
    if logger.isEnabledFor(level):
        logger.handle(logger.makeRecord(logger.name, level, "(unknown file)", 0, msg, (), None, None, fields))


def configure(level: str, stream=None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiohttp's access log would print a line per review; the review log says more.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
