"""The same plan's streams side by side (docs/simulator-vs-rehearsal.md): `extract` normalizes an evidence log into a
`Stream` (per job, task and attempt: placements, pod phases, Framework and REST states, events, FailedScheduling
counts, preemptions, exit codes; names normalized, timing kept as order), `diff` lists each difference in one line,
`known` reads the documented differences, `compare` runs it over two run directories or logs."""

from hivedlab.checker.streams.compare import ExperimentComparison, compare_runs, read_stream, render_json, render_text
from hivedlab.checker.streams.diff import Difference, diff_streams
from hivedlab.checker.streams.extract import extract
from hivedlab.checker.streams.known import KNOWN_FILE, KnownDifference, load_known
from hivedlab.checker.streams.stream_types import AttemptStream, JobStream, Stream

__all__ = [
    "KNOWN_FILE", "AttemptStream", "Difference", "ExperimentComparison", "JobStream", "KnownDifference", "Stream",
    "compare_runs", "diff_streams", "extract", "load_known", "read_stream", "render_json", "render_text",
]
