"""Errors raised by the validator.

ValidateError
 ├── UsageError            bad command-line input: a malformed profile, length or option
 ├── ModelDirError         a model id or config.json that cannot be turned into a servable model dir
 ├── EngineConfigError     engine options that the chosen engine cannot express
 ├── EngineStartError      the engine exited, or was not ready in time, before serving a request
 ├── ServerLostError       the server stopped answering in the middle of a run (points so far are kept)
 ├── ResultsError          an --out folder whose stored points or metadata do not match this run, or are unreadable
 ├── PointFailedError      load points that completed none of their requests (a rerun measures them again)
 └── ImportFormatError     a file given to `validate import` that is not a known report format, or has a bad field

The CLI prints ``Type: message`` on one line and exits with code 2; nothing shows a traceback.
"""

from __future__ import annotations


class ValidateError(Exception):
    """Base class of every error the validator raises on bad input or a failing engine."""


class UsageError(ValidateError):
    pass


class ModelDirError(ValidateError):
    pass


class EngineConfigError(ValidateError):
    pass


class EngineStartError(ValidateError):
    pass


class ServerLostError(ValidateError):
    pass


class ResultsError(ValidateError):
    pass


class ImportFormatError(ValidateError):
    pass


class PointFailedError(ValidateError):
    """Load points completed none of their requests while the server answered (a rerun measures them again)."""


def one_line(err: Exception, with_input: bool = True) -> str:
    """A pydantic ValidationError (or any error) as one line: ``field.path: what was expected (got X)``."""
    errors = getattr(err, "errors", None)
    if not callable(errors):
        return " ".join(str(err).split())
    found = errors(include_url=False)
    if not found:
        return " ".join(str(err).split())
    first = found[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    message = " ".join(str(first.get("msg", "invalid")).split())
    got = first.get("input")
    if with_input and first.get("type") not in ("missing", "json_invalid") and not isinstance(got, (dict, list)):
        message += f" (got {_short(got)})"
    if len(found) > 1:
        message += f"; and {len(found) - 1} more"
    return f"{where}: {message}" if where else message


def _short(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
