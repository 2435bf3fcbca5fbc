"""The machine check of the manual's step 1: check this machine for the lab and write its environment record.

`hivedlab env` runs it, and so does `labs/00_check_env.py` alone on a member's machine with the distribution's Python
(Ubuntu 18.04: Python 3.6) and the standard library only. Keep every module of this package Python 3.6 code: no
dataclasses, no `from __future__ import annotations`, no walrus, no f-strings (`.format()`), no
`subprocess.run(capture_output=..., text=...)`, and in annotations `typing.Optional`/`List`/`Dict`, never `X | None`
or `list[str]` (3.6 evaluates them at import). tests/cli/test_env_python36.py checks all of that.

Usage: python3 labs/00_check_env.py [--member NAME] [--role worker|master|dev-box] [--gpu-container]
                                    [--format text|json] [--out PATH] [--lang zh|en]

Workers need a GPU, the nvidia runtime as Docker's default, and (with --gpu-container) a container that sees exactly
the GPU it was given; the master and the dev-box need none of that. Every machine of the cluster needs sshd listening
(quick-start logs in over SSH) and a synchronized clock (docs/deployment.md).

The modules, each importing only the standard library and the ones before it:
  common   the settings more than one module reads, and EnvCheckError
  parsing  the tool outputs and files parsed (pure)
  probes   the commands run and the files read: the facts
  checks   the facts judged, each failed check with the manual's fix (pure)
  record   the environment record built, printed and written
  command  the command line (`labs/00_check_env.py`, `hivedlab env`)

The names below are re-exported for callers. A test that replaces a setting or a function patches the module that
reads it (e.g. `probes.PROC_NET`, `probes.parse_meminfo_available_mb`), not this package.
"""

from .checks import FIXES, build_checks
from .command import add_arguments, execute, main, options_from_args
from .parsing import (
    explain_docker_error,
    parse_clock_offset_ms,
    parse_listening_ports,
    parse_meminfo_available_mb,
    parse_mib,
    parse_nvcc_version,
    parse_nvidia_smi_xml,
    parse_os_release,
    parse_query_gpu_csv,
    parse_timedatectl,
    summarize_docker_info,
)
from .probes import (
    collect_facts,
    probe_clock,
    probe_docker,
    probe_gpu_container,
    probe_gpus,
    probe_linux_user,
    probe_nvcc,
    probe_sshd,
    run_command,
)
from .record import RECORD_VERSION, TOOL_NAME, TOOL_VERSION, build_record, failed_checks, render_text, write_record
from .shapes import DEFAULT_CUDA_IMAGE, EnvCheckError

__all__ = [
    "DEFAULT_CUDA_IMAGE",
    "FIXES",
    "RECORD_VERSION",
    "TOOL_NAME",
    "TOOL_VERSION",
    "EnvCheckError",
    "add_arguments",
    "build_checks",
    "build_record",
    "collect_facts",
    "execute",
    "explain_docker_error",
    "failed_checks",
    "main",
    "options_from_args",
    "parse_clock_offset_ms",
    "parse_listening_ports",
    "parse_meminfo_available_mb",
    "parse_mib",
    "parse_nvcc_version",
    "parse_nvidia_smi_xml",
    "parse_os_release",
    "parse_query_gpu_csv",
    "parse_timedatectl",
    "probe_clock",
    "probe_docker",
    "probe_gpu_container",
    "probe_gpus",
    "probe_linux_user",
    "probe_nvcc",
    "probe_sshd",
    "render_text",
    "run_command",
    "summarize_docker_info",
    "write_record",
]
