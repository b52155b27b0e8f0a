"""Errors raised by the validator.

ValidateError
 ├── UsageError            bad command-line input: a malformed profile, length or option
 ├── ModelDirError         a model id or config.json that cannot be turned into a servable model dir
 ├── EngineConfigError     engine options that the chosen engine cannot express
 ├── EngineStartError      the engine exited, or was not ready in time, before serving a request
 ├── ServerLostError       the server stopped answering in the middle of a run (points so far are kept)
 ├── ResultsError          an --out folder whose stored points or metadata do not match this run
 └── ImportFormatError     a file given to `validate import` that is not a known report format

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
