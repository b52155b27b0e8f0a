"""Progress on stderr with rich: a bar per load point and one summary line per finished point."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from validate.results import PointResult, RequestRecord


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.1f}"


def point_line(point: PointResult) -> str:
    return (f"{point.load:>18}  {point.completed:>5} ok {point.failed:>4} failed  "
            f"{point.requests_per_s:8.2f} req/s  {point.output_tokens_per_s:9.1f} out tok/s  "
            f"TTFT {_ms(point.mean_ttft_s)} ms  ITL {_ms(point.mean_itl_s)} ms")


class Reporter:
    """Silent reporter (tests, library use); RichReporter draws."""

    def point_started(self, label: str, total: int | None) -> None: ...
    def request_done(self, record: RequestRecord) -> None: ...
    def point_done(self, point: PointResult) -> None: ...
    def point_skipped(self, point: PointResult) -> None: ...
    def message(self, text: str) -> None: ...
    def close(self) -> None: ...


class RichReporter(Reporter):
    def __init__(self) -> None:
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.progress = Progress(TextColumn("{task.description:>18}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                                 console=self.console, transient=True)
        self.task: TaskID | None = None
        self.failed = 0
        self.progress.start()

    def point_started(self, label: str, total: int | None) -> None:
        self.failed = 0
        self.task = self.progress.add_task(label, total=total, failed=0)

    def request_done(self, record: RequestRecord) -> None:
        if self.task is not None:
            self.failed += 0 if record.ok else 1
            self.progress.update(self.task, advance=1, failed=self.failed)

    def _finish_task(self) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
            self.task = None

    def point_done(self, point: PointResult) -> None:
        self._finish_task()
        self.console.print(point_line(point))

    def point_skipped(self, point: PointResult) -> None:
        self.console.print(f"[dim]{point_line(point)}  (kept from an earlier run)[/dim]")

    def message(self, text: str) -> None:
        self.console.print(text)

    def close(self) -> None:
        self._finish_task()
        self.progress.stop()


def summary_table(points: list[PointResult]) -> Table:
    table = Table(title="load points")
    for name in ("load", "ok", "failed", "req/s", "out tok/s", "TTFT mean ms", "TTFT p99 ms", "ITL mean ms",
                 "ITL p99 ms", "e2e mean s"):
        table.add_column(name, justify="right")
    for p in points:
        e2e = "-" if p.mean_e2e_latency_s is None else f"{p.mean_e2e_latency_s:.2f}"
        table.add_row(p.load, str(p.completed), str(p.failed), f"{p.requests_per_s:.2f}",
                      f"{p.output_tokens_per_s:.1f}", _ms(p.mean_ttft_s), _ms(p.p99_ttft_s), _ms(p.mean_itl_s),
                      _ms(p.p99_itl_s), e2e)
    return table
