"""What the machine check's modules share: the shapes of the dicts they pass on, the settings more than one of them
reads, and its one error."""

from typing import Any, Dict

# The probes' results, the facts, the options, a check and the record are JSON-like dicts, built where their keys are
# written down (typing.TypedDict would need Python 3.8). The names say which is which.
Probe = Dict[str, Any]  # one probe's result: {"ok": ..., "error": ...} and what it found
Facts = Dict[str, Any]  # every probe's result, keyed by what was probed (probes.collect_facts)
Options = Dict[str, Any]  # the command line's options (command.options_from_args)
Check = Dict[str, Any]  # {"id", "ok", "severity", "message": {"zh", "en"}, "fix"} (checks._check)
Record = Dict[str, Any]  # the environment record (record.build_record)

# The manual's step 1.3 image; any CUDA base image works (override with --cuda-image).
DEFAULT_CUDA_IMAGE = "nvidia/cuda:10.0-base"
GPU_ROLES = (None, "worker")  # no --role: checked as a worker


class EnvCheckError(Exception):
    """A one-line user-facing failure (bad option, unwritable output)."""
