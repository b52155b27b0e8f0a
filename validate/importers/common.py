"""What every importer shares: strict field types, reading JSON / JSON Lines / YAML with one-line errors,
building points and metadata, and the unit table.

Every fault is an ``ImportFormatError`` whose message is one line: ``FILE[:LINE]: field: what was expected``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from validate import __version__, environment
from validate.errors import ImportFormatError, one_line
from validate.results import PointResult, RequestRecord, RunMetadata

MS = 1e-3
STATS = ("mean", "median", "p90", "p99")
MAX_COUNT = 10**12  # requests or tokens: more than any benchmark file holds
MAX_FILE_BYTES = 2 * 2**30
MAX_NS = 2**63  # nanosecond timestamps (epoch ns fit in a signed 64-bit integer)

Finite = Annotated[float, Field(allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
PositiveCount = Annotated[int, Field(ge=1, le=MAX_COUNT)]
Nanoseconds = Annotated[int, Field(ge=0, le=MAX_NS)]
Rate = Annotated[float, Field(gt=0)]  # requests/s; vLLM writes inf (or "inf") for "all at once"

# seconds per unit, for the time units the tools write
SECONDS_PER = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


def stat_fields(prefix: str, values: tuple[float | None, ...] | None, scale: float = 1.0) -> dict[str, float | None]:
    """PointResult's mean/median/p90/p99 fields of one metric from (mean, p50, p90, p99) in a tool's unit."""
    values = values or (None,) * len(STATS)
    return {f"{k}_{prefix}": None if v is None else v * scale for k, v in zip(STATS, values)}


TimeUnit = Literal["ns", "us", "ms", "s", "sec"]


class Stat(Strict):
    """AIPerf's and genai-perf's statistic object: {avg, p50, p90, p99, ..., unit}."""

    avg: NonNegative | None = None
    p50: NonNegative | None = None
    p90: NonNegative | None = None
    p99: NonNegative | None = None

    def fields(self, prefix: str) -> dict[str, float | None]:
        scale = SECONDS_PER[self.unit] if isinstance(self, TimeStat) else 1.0
        return stat_fields(prefix, (self.avg, self.p50, self.p90, self.p99), scale)


class TimeStat(Stat):
    unit: TimeUnit


class TokenStat(Stat):
    unit: Literal["tokens"]


class RequestRateStat(Stat):
    unit: Literal["requests/sec"]


class TokenRateStat(Stat):
    unit: Literal["tokens/sec"]


def fields_of(stat: Stat | None, prefix: str) -> dict[str, float | None]:
    return stat.fields(prefix) if stat is not None else stat_fields(prefix, None)


@dataclass
class ImportedRun:
    """One results folder's worth: its points, requests and metadata, and (for a file that holds several
    configurations) the subfolder it goes to. ``scenario`` becomes scenario.json beside the points. ``read_beside``:
    the other files the import read (an AIPerf per-record file's summary, a genai-perf summary's request export)."""

    points: list[PointResult]
    requests: list[RequestRecord]
    metadata: RunMetadata
    folder: str | None = None
    scenario: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    read_beside: list[Path] = field(default_factory=list)


def read_bytes(path: Path) -> bytes:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ImportFormatError(f"{path}: larger than {MAX_FILE_BYTES // 2**30} GiB; not a benchmark report")
        return path.read_bytes()
    except OSError as err:
        raise ImportFormatError(f"{path}: cannot read it: {one_line(err)}") from None


def load_json(path: Path, data: bytes | None = None) -> Any:
    try:
        return json.loads((read_bytes(path) if data is None else data).decode("utf-8"))
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ImportFormatError(f"{path}: cannot read it as JSON: {one_line(err)}") from None
    except RecursionError:
        raise ImportFormatError(f"{path}: JSON nested too deeply; not a benchmark report") from None


def load_yaml(path: Path, data: bytes) -> Any:
    try:
        import yaml
    except ImportError:
        raise ImportFormatError(f"{path}: reading YAML needs PyYAML (pip install pyyaml), or give the JSON "
                                "form of the report") from None
    class Loader(yaml.SafeLoader):  # timestamps stay strings, as in the JSON form of the same report
        yaml_implicit_resolvers = {key: [r for r in resolvers if r[0] != "tag:yaml.org,2002:timestamp"]
                                   for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    try:
        return yaml.load(data.decode("utf-8"), Loader=Loader)  # noqa: S506 (a SafeLoader subclass)
    except (ValueError, yaml.YAMLError) as err:
        raise ImportFormatError(f"{path}: cannot read it as YAML: {one_line(err)}") from None
    except RecursionError:
        raise ImportFormatError(f"{path}: YAML nested too deeply; not a benchmark report") from None


def load_jsonl(path: Path, data: bytes) -> list[tuple[int, Any]]:
    """(line number, value) of every non-blank line that is not a ``#`` comment."""
    try:
        text = data.decode("utf-8")
    except ValueError as err:
        raise ImportFormatError(f"{path}: cannot read it as UTF-8 text: {one_line(err)}") from None
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            found.append((number, json.loads(line)))
        except ValueError as err:
            raise ImportFormatError(f"{path}:{number}: cannot read the line as JSON: {one_line(err)}") from None
        except RecursionError:
            raise ImportFormatError(f"{path}:{number}: JSON nested too deeply") from None
    return found


def validated(model: type[BaseModel], data: Any, where: str) -> Any:
    """``data`` through ``model``; ``where`` is ``FILE`` or ``FILE:LINE``."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ImportFormatError(f"{where}: {one_line(err)}") from None


def make_point(where: str, **fields: Any) -> PointResult:
    try:
        return PointResult(**fields)
    except ValidationError as err:
        raise ImportFormatError(f"{where}: {one_line(err)}") from None


def summarized(where: str, load: str, requests: list[RequestRecord], **options: Any) -> PointResult:
    """validate.metrics.summarize, its faults (a latency shorter than the TTFT) as ImportFormatError."""
    from validate.metrics import summarize

    try:
        return summarize(load, requests, **options)
    except ValidationError as err:
        raise ImportFormatError(f"{where}: the requests give {one_line(err)} (a request's latency shorter than "
                                "its time to first token?)") from None


def make_metadata(argv: list[str], source: str, **fields: Any) -> RunMetadata:
    return RunMetadata(validate_command=argv, started_at=fields.pop("started_at", None) or environment.now_iso(),
                       host="unknown (imported)", validate_version=__version__, source=source, **fields)


def whole(value: float | None, where: str) -> int | None:
    """A count a tool wrote as a float (89.0) as an int; 89.5 is an error."""
    if value is None:
        return None
    if not math.isfinite(value) or value != int(value) or not 0 <= value <= MAX_COUNT:
        raise ImportFormatError(f"{where}: expected a whole number of requests or tokens (got {value!r})")
    return int(value)


def rounded(value: float | None) -> int | None:
    return round(value) if value else None
