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

    def timestamp(self, created: float) -> str:
        # Every review logs a line: format the date once a second, not once a line.
        second = int(created)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        return self._stamp + _MILLIS[min(int((created - second) * 1000), 999)]

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self.timestamp(record.created),
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

    def format_fields(self, created: float, level: int, logger: str, msg: str, fields: Mapping[str, Any]) -> str:
        """What format() gives for the record ``logger.log(level, msg, extra=fields)`` would make."""
        level_name = _LEVEL_NAMES.get(level) or logging.getLevelName(level).lower()
        return _dumps({"ts": self.timestamp(created), "level": level_name, "logger": logger, "msg": msg, **fields})


class JsonHandler(logging.StreamHandler):
    """The handler configure() installs: JSON lines on a stream."""

    def __init__(self, stream=None) -> None:
        super().__init__(stream)
        self.json_formatter = JsonFormatter()
        self.setFormatter(self.json_formatter)


_MILLIS = tuple(f".{n:03d}Z" for n in range(1000))
_LEVEL_NAMES = {level: logging.getLevelName(level).lower() for level in (10, 20, 30, 40, 50)}


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
    """``logger.log(level, msg, extra=fields)``, the same line, at a fraction of the cost (this
    runs once per review): when the line can only end up in configure()'s JSON handler, it is
    formatted from ``fields`` directly, without a LogRecord, the caller's file and line, or a
    walk over the record's attributes.  Anything else (other handlers, filters, clashing keys)
    goes through logging as usual."""
    if not logger.isEnabledFor(level):
        return
    handler = _sole_json_handler(logger, level)
    if handler is None or not _STANDARD.isdisjoint(fields):
        logger.handle(logger.makeRecord(logger.name, level, "(unknown file)", 0, msg, (), None, None, fields))
        return
    try:
        line = handler.json_formatter.format_fields(time.time(), level, logger.name, msg, fields)
    except Exception:  # noqa: BLE001 - let logging report it, as for any record
        handler.handleError(logger.makeRecord(logger.name, level, "(unknown file)", 0, msg, (), None, None, fields))
        return
    handler.acquire()
    try:
        stream = handler.stream
        stream.write(line + handler.terminator)
        # What handler.flush() does, without taking the lock it already holds a second time.
        flush = getattr(stream, "flush", None)
        if flush is not None:
            flush()
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001 - as StreamHandler.emit: report, never raise
        handler.handleError(logger.makeRecord(logger.name, level, "(unknown file)", 0, msg, (), None, None, fields))
    finally:
        handler.release()


def _sole_json_handler(logger: logging.Logger, level: int) -> JsonHandler | None:
    """The JsonHandler that alone would handle a record of ``logger`` at ``level`` with no
    filter on the way, if there is one."""
    found: JsonHandler | None = None
    node: logging.Logger | None = logger
    while node is not None:
        if node.filters or node.disabled:
            return None
        for handler in node.handlers:
            if level < handler.level:
                continue
            if found is not None or type(handler) is not JsonHandler or handler.filters:
                return None
            if handler.formatter is not handler.json_formatter:
                return None
            found = handler
        if not node.propagate:
            break
        node = node.parent  # type: ignore[assignment]
    return found


def configure(level: str, stream=None) -> None:
    handler = JsonHandler(stream or sys.stderr)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiohttp's access log would print a line per review; the review log says more.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
