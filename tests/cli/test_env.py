"""`hivedlab env` / labs/00_check_env.py against recorded nvidia-smi and docker outputs and a local Docker API."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from hivedlab import envcheck
from hivedlab.envcheck import checks as envcheck_checks
from hivedlab.envcheck import probes
from tests.support.local import DOCKER, GPU_MACHINE, json_reply, nvidia_smi_script, write_program
from tests.support.old_pythons import OLD_PYTHONS, OLD_VERSIONS, bare_env, old_python_or_skip
from tests.support.paths import ROOT

SCRIPT = ROOT / "labs" / "00_check_env.py"
SCHEMA = json.loads((ROOT / "configs" / "schemas" / "environment-record.schema.json").read_text(encoding="utf-8"))


TCP_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
SSHD_LISTENING = TCP_HEADER + "   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0  0 1 1\n"


@pytest.fixture(autouse=True)
def proc_net(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """/proc/net as on a machine whose sshd listens on port 22 (write `tcp` again for another machine)."""
    folder = tmp_path / "proc-net"
    folder.mkdir()
    (folder / "tcp").write_text(SSHD_LISTENING, encoding="utf-8")
    monkeypatch.setattr(probes, "PROC_NET", str(folder))
    return folder


def validate(record: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(record)


def checks_by_id(record: dict) -> dict:
    return {c["id"]: c for c in record["checks"]}


# ------------------------------------------------------------ Python 3.6 compatibility

# What the lab machines' system Python (Ubuntu 18.04: 3.6) runs before hivedlab is installed: the lab scripts (until
# find_venv re-runs them in .venv), the package's __init__, the machine check that labs/00_check_env.py imports, and
# the Python check `make venv` runs first.
LABS = ROOT / "labs"
ENVCHECK = ROOT / "src" / "hivedlab" / "envcheck"
PY36_FILES = [*sorted(LABS.glob("*.py")), ROOT / "src" / "hivedlab" / "__init__.py", *sorted(ENVCHECK.glob("*.py")),
              ROOT / "scripts" / "check_python.py"]
PY36_IDS = [path.relative_to(ROOT).as_posix() for path in PY36_FILES]

NEWER_MODULES = {"contextvars", "dataclasses", "graphlib", "importlib.metadata", "importlib.resources", "tomllib",
                 "zoneinfo"}
NEWER_ATTRIBUTES = {"fromisoformat", "fromisocalendar", "removeprefix", "removesuffix", "nullcontext", "time_ns",
                    "monotonic_ns", "isascii", "cached_property"}
NEWER_TYPING = {"Literal", "TypedDict", "Protocol", "Final", "final", "runtime_checkable", "Annotated", "ParamSpec",
                "Concatenate", "TypeAlias", "TypeGuard", "Self", "Never", "LiteralString", "Unpack", "Required",
                "NotRequired", "OrderedDict", "SupportsIndex", "get_origin", "get_args"}
# builtins that only 3.9 subscripts at run time (PEP 585); so are collections.abc's and collections' classes
PEP_585_BUILTINS = {"list", "dict", "set", "frozenset", "tuple", "type"}
COLLECTIONS_MODULES = ("abc", "collections", "collections.abc")


def test_the_python_3_6_files_are_all_there():
    names = set(PY36_IDS)
    assert {"labs/00_check_env.py", "labs/find_venv.py", "src/hivedlab/__init__.py",
            "src/hivedlab/envcheck/__init__.py", "src/hivedlab/envcheck/probes.py"} <= names
    assert len([n for n in names if n.startswith("labs/0")]) >= 8


@pytest.mark.parametrize("path", PY36_FILES, ids=PY36_IDS)
def test_parses_as_python_3_6(path):
    ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 6))


def _newer_apis(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            found.append("from __future__ import")
        if isinstance(node, ast.ImportFrom) and node.module in NEWER_MODULES:
            found.append(f"from {node.module} import")
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name in NEWER_MODULES]
        if isinstance(node, ast.ImportFrom) and node.module == "typing":
            found += [f"typing.{a.name}" for a in node.names if a.name in NEWER_TYPING]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "typing":
            found += [f"typing.{node.attr}"] if node.attr in NEWER_TYPING else []
        if isinstance(node, ast.Call):
            found += [f"{kw.arg}=" for kw in node.keywords if kw.arg in ("capture_output", "text")]
        if isinstance(node, ast.Attribute) and node.attr in NEWER_ATTRIBUTES:
            found.append(node.attr)
        if isinstance(node, ast.JoinedStr):
            found.append("f-string")  # legal in 3.6, but '=' specifiers are not: keep .format() throughout
    return found


@pytest.mark.parametrize("path", PY36_FILES, ids=PY36_IDS)
def test_avoids_apis_newer_than_python_3_6(path):
    assert _newer_apis(ast.parse(path.read_text(encoding="utf-8"))) == []


def _annotations(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for argument in [*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs,
                             arguments.kwarg]:
                if argument is not None and argument.annotation is not None:
                    found.append(argument.annotation)
            if node.returns is not None:
                found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return found


def _collections_names(tree: ast.AST) -> set[str]:
    """The names bound by `from collections.abc import ...` or `from collections import ...`."""
    return {alias.asname or alias.name for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module in COLLECTIONS_MODULES
            for alias in node.names}


def _newer_annotation_syntax(annotation: ast.expr, collections_names: set[str]) -> list[str]:
    """PEP 604 (`X | Y`) and PEP 585 (`list[str]`, `collections.abc.Callable[...]`) in an annotation, quoted ones
    too: Python 3.6 evaluates most annotations when it defines the function, and ast.parse(feature_version=(3, 6))
    lets both through."""
    found = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            found.append(f"{ast.unparse(node)} (PEP 604)")
        if isinstance(node, ast.Subscript):
            base = node.value
            in_collections = isinstance(base, ast.Attribute) and ast.unparse(base.value) in COLLECTIONS_MODULES
            generic = in_collections or (isinstance(base, ast.Name) and base.id in PEP_585_BUILTINS | collections_names)
            found += [f"{ast.unparse(node)} (PEP 585)"] if generic else []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += _newer_annotation_syntax(ast.parse(node.value, mode="eval").body, collections_names)
    return found


def _newer_annotations(tree: ast.AST) -> list[str]:
    names = _collections_names(tree)
    return [text for annotation in _annotations(tree) for text in _newer_annotation_syntax(annotation, names)]


def test_the_annotation_check_sees_pep_604_and_585():
    tree = ast.parse("import typing\nfrom collections.abc import Iterator\nfrom typing import Callable\n"
                     "def f(a: list[str] | None, *b: 'dict[str, int]', c: typing.List[int] = [],\n"
                     "      d: collections.abc.Callable[[], int] = None) -> typing.Optional[tuple[int]]:\n"
                     "    e: Iterator[int] = iter([])\n"
                     "def g(h: Callable[[], float], i: typing.Dict[str, 'typing.Optional[int]']) -> None: ...\n")
    assert _newer_annotations(tree) == [
        "list[str] | None (PEP 604)", "list[str] (PEP 585)", "dict[str, int] (PEP 585)",
        "collections.abc.Callable[[], int] (PEP 585)", "tuple[int] (PEP 585)", "Iterator[int] (PEP 585)"]


@pytest.mark.parametrize("path", PY36_FILES, ids=PY36_IDS)
def test_annotations_use_no_pep_604_or_585_syntax(path):
    assert _newer_annotations(ast.parse(path.read_text(encoding="utf-8"))) == []


def _nodes_in_try(tree: ast.AST) -> set[int]:
    return {id(inner) for node in ast.walk(tree) if isinstance(node, ast.Try)
            for statement in node.body for inner in ast.walk(statement)}


def _nodes_after_the_venv_step(tree: ast.Module) -> set[int]:
    """What a numbered script runs after `use_repository_venv()` in its `if __name__ == "__main__":` block, i.e. in
    .venv's Python."""
    after: set[int] = set()
    for block in (node for node in tree.body if isinstance(node, ast.If)):
        started = False
        for statement in block.body:
            if started:
                after |= {id(inner) for inner in ast.walk(statement)}
            call = statement.value if isinstance(statement, ast.Expr) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "use_repository_venv":
                started = True
    return after


def _import_allowed(path: Path, name: str, in_try: bool, after_venv_step: bool) -> bool:
    """The standard library everywhere; besides it, what each kind of 3.6 file may import."""
    if name.split(".")[0] in sys.stdlib_module_names:
        return True
    in_envcheck = name == "hivedlab.envcheck" or name.startswith("hivedlab.envcheck.")
    if path.parent == ENVCHECK:  # its own modules (`from . import`, `from .probes import`), docker only if installed
        sibling = name.startswith(".") and not name.startswith("..")
        return sibling or in_envcheck or (name == "docker" and in_try)
    if path == SCRIPT:
        return in_envcheck
    if path == LABS / "find_venv.py":  # the probe whether hivedlab is installed
        return name == "hivedlab" and in_try
    if path.parent == LABS:  # hivedlab once find_venv has re-run the script with .venv's Python
        return name == "find_venv" or (name.split(".")[0] == "hivedlab" and after_venv_step)
    return False


def _foreign_imports(path: Path, source: str) -> list[str]:
    tree = ast.parse(source)
    in_try, after_venv_step = _nodes_in_try(tree), _nodes_after_the_venv_step(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")]
        else:
            continue
        found += [f"line {node.lineno}: {name}" for name in names
                  if not _import_allowed(path, name, id(node) in in_try, id(node) in after_venv_step)]
    return found


def test_the_import_check_sees_what_a_3_6_file_may_not_import():
    source = ("import json\nimport yaml\nfrom . import probes\nfrom .. import basics\nfrom hivedlab.basics import x\n"
              "import docker\ntry:\n    import docker\nexcept ImportError:\n    pass\n")
    assert _foreign_imports(ENVCHECK / "new.py", source) == [
        "line 2: yaml", "line 4: ..", "line 5: hivedlab.basics", "line 6: docker"]
    assert _foreign_imports(LABS / "09_new.py", "from find_venv import use_repository_venv\nimport hivedlab\n"
                            "if __name__ == '__main__':\n    from hivedlab import a\n    use_repository_venv()\n"
                            "    from hivedlab import b\n") == ["line 2: hivedlab", "line 4: hivedlab"]
    assert _foreign_imports(SCRIPT, "from hivedlab.envcheck import main\nimport hivedlab.cli\n") == [
        "line 2: hivedlab.cli"]


@pytest.mark.parametrize("path", PY36_FILES, ids=PY36_IDS)
def test_imports_only_the_standard_library(path):
    assert _foreign_imports(path, path.read_text(encoding="utf-8")) == []


PYTHON36, NO_PYTHON36 = OLD_PYTHONS["3.6"]
needs_python36 = pytest.mark.skipif(PYTHON36 is None, reason=NO_PYTHON36)
NUMBERED = sorted(path.name for path in LABS.glob("0[1-9]_*.py"))


@needs_python36
def test_script_runs_under_python_3_6(fake_bin, tmp_path):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-nvidia-default.json"}"\n')
    records = []
    for python in (PYTHON36, sys.executable):
        out = tmp_path / f"rec-{len(records)}.json"
        done = subprocess.run([python, "-S", str(SCRIPT), "--member", "Carol", "--no-sdk", "--linux-user", "",
                               "--proc-net", str(tmp_path / "proc-net"), "--out", str(out), "--lang", "en"],
                              capture_output=True, text=True, env=bare_env(), timeout=60, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        record = json.loads(out.read_text(encoding="utf-8"))
        validate(record)
        records.append({k: v for k, v in record.items() if k != "recorded_at"})
    assert records[0] == records[1]  # Python 3.6 writes the record this Python writes


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_the_machine_check_starts_under_each_old_python(version):
    done = subprocess.run([old_python_or_skip(version), "-S", "-s", str(SCRIPT), "--help"], capture_output=True,
                          text=True, env=bare_env(), timeout=60, cwd="/")
    assert done.returncode == 0 and "--gpu-container" in done.stdout, done.stderr


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_a_numbered_script_re_runs_itself_in_the_venv_under_each_old_python(version):
    """find_venv imports on the old Python, then re-runs the script with the checkout's .venv, or says to run
    `make venv`."""
    done = subprocess.run([old_python_or_skip(version), "-S", "-s", str(LABS / "03_vc_safety.py"), "--help"],
                          capture_output=True, text=True, env=bare_env(), timeout=120, cwd="/")
    if (ROOT / ".venv" / "bin" / "python").exists():
        assert done.returncode == 0, done.stderr
        assert "VC safety" in done.stdout and "usage:" in done.stdout
    else:
        assert done.returncode == 2 and "make venv" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_every_numbered_script_without_a_venv_says_what_to_run_under_each_old_python(tmp_path, version):
    python = old_python_or_skip(version)
    labs = tmp_path / "labs"
    labs.mkdir()
    for name in ("find_venv.py", *NUMBERED):
        (labs / name).write_text((LABS / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert len(NUMBERED) == 7
    for name in NUMBERED:
        done = subprocess.run([python, "-S", "-s", str(labs / name)], capture_output=True, text=True,
                              env=bare_env(), timeout=60, cwd="/")
        assert done.returncode == 2 and done.stdout == "", (name, done.stderr)
        assert done.stderr.count("\n") == 1 and "make venv" in done.stderr and "Traceback" not in done.stderr, name


# ------------------------------------------------------------ parsing


def test_query_gpu_csv_with_units_in_the_header():
    rows = envcheck.parse_query_gpu_csv((GPU_MACHINE / "query-gpu.csv").read_text(encoding="utf-8"))
    assert rows == [{"index": "0", "name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-000000000000",
                     "driver_version": "580.159.04", "memory.total": "143771 MiB", "pci.bus_id": "00000000:00:06.0",
                     "compute_cap": "9.0"}]
    assert envcheck.parse_mib(rows[0]["memory.total"]) == 143771
    assert envcheck.parse_mib("[N/A]") is None


def test_query_gpu_csv_without_header_uses_the_query_fields():
    rows = envcheck.parse_query_gpu_csv("0, Tesla K80, GPU-1, 418.67, 11441 MiB, 00000000:00:04.0\n"
                                        "1, Tesla K80, GPU-2, 418.67, 11441 MiB, 00000000:00:05.0\n")
    assert [r["name"] for r in rows] == ["Tesla K80", "Tesla K80"]


def test_nvidia_smi_xml_gives_driver_cuda_and_gpus():
    parsed = envcheck.parse_nvidia_smi_xml((GPU_MACHINE / "nvidia-smi-q.xml").read_text(encoding="utf-8"))
    assert parsed == {"driver_version": "580.159.04", "cuda_version": "13.0",
                      "gpus": [{"name": "NVIDIA H200", "memory_mib": 143771, "bus_id": "00000000:00:06.0"}]}


def test_bad_xml_is_a_value_error():
    with pytest.raises(ValueError, match="valid XML"):
        envcheck.parse_nvidia_smi_xml("<nvidia_smi_log>")


def test_nvcc_version():
    text = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
            "Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n")
    assert envcheck.parse_nvcc_version(text) == "13.0.88"
    assert envcheck.parse_nvcc_version("Cuda compilation tools, release 10.0\n") == "10.0"
    assert envcheck.parse_nvcc_version("") is None


def test_os_release_and_meminfo():
    fields = envcheck.parse_os_release(
        'NAME="Ubuntu"\nVERSION_ID="18.04"\nID=ubuntu\nPRETTY_NAME="Ubuntu 18.04.5 LTS"\n')
    assert fields["PRETTY_NAME"] == "Ubuntu 18.04.5 LTS" and fields["ID"] == "ubuntu"
    assert envcheck.parse_meminfo_available_mb("MemTotal: 32000000 kB\nMemAvailable:   20000000 kB\n") == 20480


# ------------------------------------------------------------ whole runs with fake programs


@pytest.fixture
def ubuntu(tmp_path):
    path = tmp_path / "os-release"
    path.write_text('ID=ubuntu\nVERSION_ID="18.04"\nPRETTY_NAME="Ubuntu 18.04.5 LTS"\n', encoding="utf-8")
    return path


def _run_cli(cli, tmp_path, *extra):
    out = tmp_path / "env" / "Carol.json"
    result = cli("env", "--member", "Carol", "--linux-user", "", "--out", str(out), "--lang", "en", *extra)
    record = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return result, record


def test_ready_worker_via_docker_cli(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-nvidia-default.json"}"\n')
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--os-release", str(ubuntu), "--ip", "10.0.1.3")
    assert result.code == 0, result.out
    validate(record)
    assert record["gpus"] == {"model": "NVIDIA H200", "count": 1, "memory_mib": 143771}
    assert (record["driver_version"], record["cuda_version"]) == ("580.159.04", "13.0")
    assert (record["docker_version"], record["docker_default_runtime"]) == ("19.03.15", "nvidia")
    assert record["ip"] == "10.0.1.3" and record["os"] == "Ubuntu 18.04.5 LTS"
    checks = checks_by_id(record)
    assert all(checks[i]["ok"] for i in ("docker", "nvidia-runtime", "default-runtime", "nvidia-smi", "gpu", "os"))
    assert checks["gpu-container"]["ok"] is None
    assert "[OK  ] default-runtime" in result.out


def test_runc_default_fails_with_the_daemon_json_fix(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-runc-default.json"}"\n')
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--os-release", str(ubuntu))
    assert result.code == 1
    check = checks_by_id(record)["default-runtime"]
    assert check["ok"] is False and "runc" in check["message"]["en"]
    assert "sudo systemctl restart docker" in check["fix"]["en"] and '"default-runtime": "nvidia"' in check["fix"]["zh"]


def test_missing_nvidia_runtime(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-no-nvidia-runtime.json"}"\n')
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--os-release", str(ubuntu))
    assert result.code == 1
    assert "nvidia-container-runtime" in checks_by_id(record)["nvidia-runtime"]["fix"]["en"]


def test_no_docker_no_gpu_like_the_recorded_machine_without_docker(cli, fake_bin, tmp_path):
    result, record = _run_cli(cli, tmp_path, "--no-sdk")
    assert result.code == 1
    validate(record)
    checks = checks_by_id(record)
    assert checks["docker"]["ok"] is False and "command not found" in checks["docker"]["message"]["en"]
    assert "docs.docker.com" in checks["docker"]["fix"]["en"]
    assert checks["nvidia-smi"]["ok"] is False and "ubuntu-drivers" in checks["nvidia-smi"]["fix"]["en"]
    assert record["gpus"]["count"] == 0 and record["docker_version"] is None
    assert "Traceback" not in result.out + result.err


def test_recorded_gpu_machine_without_docker(cli, fake_bin, tmp_path):
    """The H200 machine of tests/fixtures/gpu-machine: GPUs fine, docker: command not found."""
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    result, record = _run_cli(cli, tmp_path, "--no-sdk")
    checks = checks_by_id(record)
    assert checks["nvidia-smi"]["ok"] and checks["gpu"]["ok"] and checks["docker"]["ok"] is False
    assert result.code == 1


@pytest.mark.parametrize("sdk", [(), ("--no-sdk",)], ids=["docker-sdk", "docker-cli"])
def test_gpu_container_without_docker_says_docker_is_missing_in_plain_words(cli, fake_bin, tmp_path, monkeypatch,
                                                                            sdk):
    """Seen on a real GPU machine: the SDK's raw "Error while fetching server API version: ('Connection aborted.',
    FileNotFoundError(2, ...))" and advice to fix the default runtime, although Docker was not installed at all."""
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    result, record = _run_cli(cli, tmp_path, *sdk, "--gpu-container")
    checks = checks_by_id(record)
    assert checks["docker"]["ok"] is False
    container = checks["gpu-container"]
    assert container["ok"] is False
    assert container["message"]["en"] == (
        "GPU in a container not checked: Docker Engine is not reachable (see the docker check)")
    assert container["message"]["zh"] == "无法在容器内检查 GPU：Docker Engine 不可用（见 docker 检查）"
    assert container["fix"] == checks["docker"]["fix"] and "default runtime" not in container["fix"]["en"]
    assert "Connection aborted" not in json.dumps(record) and result.code == 1


def test_daemon_down_reported_from_cli_server_errors(cli, fake_bin, tmp_path):
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-daemon-down.json"}"\n')
    _, record = _run_cli(cli, tmp_path, "--no-sdk")
    assert checks_by_id(record)["docker"]["message"]["en"] == (
        "Docker Engine not reachable: the Docker daemon is not running (no /var/run/docker.sock)")


def test_gpu_container_check_via_cli(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", (
        f'if [ "$1" = info ]; then cat "{DOCKER / "docker-info-nvidia-default.json"}"; exit 0; fi\n'
        'echo "$@" >> "$(dirname "$0")/run-args"\n'
        'echo "GPU 0: NVIDIA H200 (UUID: GPU-0)"\n'))
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--gpu-container",
                              "--cuda-image", "nvidia/cuda:12.0.0-base-ubuntu22.04", "--os-release", str(ubuntu))
    assert result.code == 0
    assert checks_by_id(record)["gpu-container"]["ok"] is True
    assert (fake_bin / "run-args").read_text().splitlines() == [
        "run --rm nvidia/cuda:12.0.0-base-ubuntu22.04 nvidia-smi -L",
        "run --rm -e NVIDIA_VISIBLE_DEVICES=0 nvidia/cuda:12.0.0-base-ubuntu22.04 nvidia-smi -L"]
    assert checks_by_id(record)["gpu-isolation"]["ok"] is True


def test_gpu_container_failure_names_the_image(cli, fake_bin, tmp_path):
    write_program(fake_bin, "docker", (
        f'if [ "$1" = info ]; then cat "{DOCKER / "docker-info-runc-default.json"}"; exit 0; fi\n'
        'echo "docker: Error response from daemon: OCI runtime create failed" >&2; exit 125\n'))
    _, record = _run_cli(cli, tmp_path, "--no-sdk", "--gpu-container")
    check = checks_by_id(record)["gpu-container"]
    assert check["ok"] is False and "OCI runtime" in check["message"]["en"]
    assert "nvidia/cuda:10.0-base" in check["fix"]["en"]


def test_role_master_memory_and_gpu_warning(cli, fake_bin, tmp_path, monkeypatch):
    monkeypatch.setattr(probes, "parse_meminfo_available_mb", lambda text: 30000)
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--role", "master")
    checks = checks_by_id(record)
    assert checks["memory"]["ok"] is False and "40000" in checks["memory"]["message"]["en"]
    assert checks["gpu"]["ok"] is None and checks["nvidia-smi"]["ok"] is None


def test_json_format_prints_the_record(cli, fake_bin, tmp_path):
    result = cli("env", "--member", "Dan", "--no-sdk", "--linux-user", "", "--format", "json", "--out", "-")
    record = json.loads(result.out)
    validate(record)
    assert record["member"] == "Dan"


def test_unwritable_out_is_one_line(cli, fake_bin, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = cli("env", "--no-sdk", "--linux-user", "", "--out", str(blocker / "sub" / "x.json"))
    assert result.code == 2 and result.err.startswith("hivedlab env: error: cannot write")
    assert len(result.err.strip().splitlines()) == 1


def test_help_has_examples(cli):
    result = cli("env", "--help")
    assert result.code == 0 and "examples:" in result.out and "--gpu-container" in result.out


def test_bad_option_is_a_usage_error(cli):
    assert cli("env", "--role", "boss").code == 2


# ------------------------------------------------------------ the docker SDK against a local Docker API


def _docker_api(info: dict):
    def handle(_h, method, path, _body):
        if path.endswith("/_ping"):
            return 200, {"Content-Type": "text/plain", "Api-Version": "1.40"}, b"OK"
        if path.endswith("/version"):
            return json_reply(200, {"Version": "19.03.15", "ApiVersion": "1.40", "MinAPIVersion": "1.12",
                                    "Os": "linux", "Arch": "amd64"})
        if path.endswith("/info"):
            return json_reply(200, info)
        return json_reply(404, {"message": f"page not found: {method} {path}"})

    return handle


def test_docker_sdk_over_tcp(cli, fake_bin, tmp_path, monkeypatch, serve, ubuntu):
    pytest.importorskip("docker")
    info = json.loads((DOCKER / "docker-info-nvidia-default.json").read_text(encoding="utf-8"))
    server = serve(_docker_api(info))
    monkeypatch.setenv("DOCKER_HOST", server.url.replace("http://", "tcp://"))
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    result, record = _run_cli(cli, tmp_path, "--os-release", str(ubuntu))
    assert result.code == 0, result.out
    assert record["docker_version"] == "19.03.15" and record["docker_default_runtime"] == "nvidia"
    assert any(r["path"].endswith("/info") for r in server.requests)


def test_docker_sdk_unreachable_daemon(cli, fake_bin, tmp_path, monkeypatch, serve):
    pytest.importorskip("docker")
    server = serve(lambda *_: None)  # accepts, then drops every connection
    monkeypatch.setenv("DOCKER_HOST", server.url.replace("http://", "tcp://"))
    _, record = _run_cli(cli, tmp_path)
    check = checks_by_id(record)["docker"]
    assert check["ok"] is False and check["fix"] is not None


def test_record_written_on_a_real_h100_is_valid():
    """Recorded by scripts/device_check_env.sh on a real GPU machine (tests/fixtures/gpu-machine/README.md)."""
    record = json.loads((GPU_MACHINE / "env-record-h100.json").read_text(encoding="utf-8"))
    validate(record)
    assert record["gpus"] == {"model": "NVIDIA H100 80GB HBM3", "count": 1, "memory_mib": 81559}
    assert checks_by_id(record)["docker"]["ok"] is False
    assert record["clock"] == {"ntp_synchronized": None, "offset_ms": None, "source": None}  # no timedatectl there


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="needs nvidia-smi")
def test_real_gpu_machine(tmp_path):
    out = tmp_path / "rec.json"
    assert envcheck.main(["--out", str(out), "--linux-user", "", "--no-sdk"]) in (0, 1)
    record = json.loads(out.read_text(encoding="utf-8"))
    validate(record)
    assert record["gpus"]["count"] >= 1 and record["driver_version"]


def _docker_api_with_containers(info: dict, start_status: int = 204, isolates: bool = True):
    base = _docker_api(info)
    inspect = {"Id": "c0ffee", "Name": "/lab", "Config": {"Tty": False}, "State": {"Running": False},
               "HostConfig": {"AutoRemove": False, "LogConfig": {"Type": "json-file", "Config": {}}}}

    given_one = {"now": False}

    def frame(text: bytes) -> bytes:
        return bytes([1, 0, 0, 0]) + len(text).to_bytes(4, "big") + text

    def handle(handler, method, path, body):
        route = path.split("?")[0]
        if route.endswith("/containers/create") and method == "POST":
            spec = json.loads(body)
            assert spec["Cmd"] == ["nvidia-smi", "-L"] and spec["Image"] == "nvidia/cuda:10.0-base"
            given_one["now"] = "NVIDIA_VISIBLE_DEVICES=0" in (spec.get("Env") or []) and isolates
            return json_reply(201, {"Id": "c0ffee", "Warnings": []})
        if route.endswith("/containers/c0ffee/json"):
            return json_reply(200, inspect)
        if route.endswith("/containers/c0ffee/start"):
            if start_status != 204:
                return json_reply(start_status, {"message": "OCI runtime create failed: nvidia-container-cli: "
                                                            "initialization error: driver not loaded"})
            return 204, {}, b""
        if route.endswith("/containers/c0ffee/wait"):
            return json_reply(200, {"StatusCode": 0})
        if route.endswith("/containers/c0ffee/logs"):
            listed = b"GPU 0: NVIDIA H200 (UUID: GPU-0)\n" + (
                b"" if given_one["now"] else b"GPU 1: NVIDIA H200 (UUID: GPU-1)\n")
            return 200, {"Content-Type": "application/vnd.docker.raw-stream"}, frame(listed)
        if route.endswith("/containers/c0ffee") and method == "DELETE":
            return 204, {}, b""
        return base(handler, method, path, body)

    return handle


@pytest.mark.parametrize("start_status", [204, 500], ids=["gpu-visible", "oci-runtime-error"])
def test_gpu_container_via_docker_sdk(cli, fake_bin, tmp_path, monkeypatch, serve, start_status):
    pytest.importorskip("docker")
    info = json.loads((DOCKER / "docker-info-nvidia-default.json").read_text(encoding="utf-8"))
    server = serve(_docker_api_with_containers(info, start_status))
    monkeypatch.setenv("DOCKER_HOST", server.url.replace("http://", "tcp://"))
    _, record = _run_cli(cli, tmp_path, "--gpu-container")
    check = checks_by_id(record)["gpu-container"]
    if start_status == 204:
        assert check["ok"] is True and "2 GPU(s) visible in a container" in check["message"]["en"], check
        assert checks_by_id(record)["gpu-isolation"]["ok"] is True
        assert any(r["method"] == "DELETE" for r in server.requests)  # --rm
    else:
        assert check["ok"] is False and "nvidia-container-cli" in check["message"]["en"]


def test_gpu_container_that_sees_every_gpu_fails_isolation(cli, fake_bin, tmp_path, monkeypatch, serve):
    pytest.importorskip("docker")
    info = json.loads((DOCKER / "docker-info-nvidia-default.json").read_text(encoding="utf-8"))
    server = serve(_docker_api_with_containers(info, isolates=False))
    monkeypatch.setenv("DOCKER_HOST", server.url.replace("http://", "tcp://"))
    result, record = _run_cli(cli, tmp_path, "--gpu-container")
    check = checks_by_id(record)["gpu-isolation"]
    assert check["ok"] is False and "2 GPU(s) (must be 1)" in check["message"]["en"]
    assert "NVIDIA_VISIBLE_DEVICES" in check["fix"]["en"] and result.code == 1


# ------------------------------------------------------------ machine check by role, sshd, clock, pulls


def test_gpu_less_dev_box_passes(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-runc-default.json"}"\n')
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--role", "dev-box", "--os-release", str(ubuntu))
    assert result.code == 0, result.out
    validate(record)
    checks = checks_by_id(record)
    assert "nvidia-runtime" not in checks and "default-runtime" not in checks
    assert checks["gpu"]["ok"] is None and "a dev-box needs no GPU" in checks["gpu"]["message"]["en"]
    assert "[FAIL]" not in result.out


def test_gpu_less_master_passes_and_gpu_container_is_not_run(cli, fake_bin, tmp_path, ubuntu, monkeypatch):
    monkeypatch.setattr(probes, "parse_meminfo_available_mb", lambda text: 64000)
    write_program(fake_bin, "docker", (
        f'if [ "$1" = info ]; then cat "{DOCKER / "docker-info-runc-default.json"}"; exit 0; fi\n'
        'echo ran > "$(dirname "$0")/ran"; exit 125\n'))
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--role", "master", "--gpu-container",
                              "--os-release", str(ubuntu))
    assert result.code == 0, result.out
    assert not (fake_bin / "ran").exists() and checks_by_id(record)["memory"]["ok"] is True


def test_worker_without_a_gpu_still_fails(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-nvidia-default.json"}"\n')
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--role", "worker", "--os-release", str(ubuntu))
    assert result.code == 1 and checks_by_id(record)["nvidia-smi"]["ok"] is False


@pytest.mark.parametrize(("role", "severity", "code"), [("worker", "error", 1), ("dev-box", "warning", 0)])
def test_sshd_not_listening(cli, fake_bin, tmp_path, ubuntu, proc_net, role, severity, code):
    (proc_net / "tcp").write_text(TCP_HEADER + "   0: 00000000:07E8 00000000:0000 0A 0 0 0 0 0 1 1\n"
                                  "   1: 0100007F:0016 0200007F:B000 01 0 0 0 0 0 1 1\n", encoding="utf-8")
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-nvidia-default.json"}"\n')
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--role", role, "--os-release", str(ubuntu))
    check = checks_by_id(record)["sshd"]
    assert check["ok"] is False and check["severity"] == severity and "openssh-server" in check["fix"]["en"]
    assert result.code == code


def test_sshd_on_ipv6_only(proc_net):
    (proc_net / "tcp").write_text(TCP_HEADER, encoding="utf-8")
    (proc_net / "tcp6").write_text(TCP_HEADER + "   0: 00000000000000000000000000000000:0016 "
                                   "00000000000000000000000000000000:0000 0A 0 0 0 0 0 1 1\n", encoding="utf-8")
    assert envcheck.probe_sshd() is True


TIMEDATECTL_1804 = """                      Local time: Thu 2026-11-26 10:00:00 UTC
                  Universal time: Thu 2026-11-26 10:00:00 UTC
                        RTC time: Thu 2026-11-26 10:00:00
                       Time zone: Etc/UTC (UTC, +0000)
       System clock synchronized: {sync}
systemd-timesyncd.service active: yes
                 RTC in local TZ: no
"""
CHRONYC = """Reference ID    : A9FEA97B (169.254.169.123)
Stratum         : 4
System time     : 0.000734211 seconds slow of NTP time
Last offset     : -0.000011380 seconds
"""


@pytest.mark.parametrize("sync", ["yes", "no"])
def test_clock_state_and_offset_recorded(cli, fake_bin, tmp_path, ubuntu, sync):
    write_program(fake_bin, "timedatectl",
                  f'[ "$1" = status ] || exit 1\ncat <<"EOF"\n{TIMEDATECTL_1804.format(sync=sync)}EOF\n')
    write_program(fake_bin, "chronyc", f'cat <<"EOF"\n{CHRONYC}EOF\n')
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-runc-default.json"}"\n')
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--role", "dev-box", "--os-release", str(ubuntu))
    validate(record)
    assert record["clock"] == {"ntp_synchronized": sync == "yes", "offset_ms": -0.734, "source": "chronyc"}
    check = checks_by_id(record)["ntp"]
    assert check["ok"] is (sync == "yes") and check["severity"] == "warning"
    assert "offset -0.734 ms" in check["message"]["en"]
    assert result.code == 0  # a warning only


def test_clock_parsers():
    assert envcheck.parse_timedatectl("NTP synchronized: no\n") is False  # Ubuntu 16.04's wording
    assert envcheck.parse_timedatectl("") is None
    assert envcheck.parse_clock_offset_ms("       Offset: +1.262ms\n") == 1.262
    assert envcheck.parse_clock_offset_ms("       Offset: -250us\n") == -0.25
    assert envcheck.parse_clock_offset_ms("System time : 1.5 seconds fast of NTP time") == 1500.0
    assert envcheck.parse_clock_offset_ms("nothing") is None


def test_docker_sdk_raw_socket_error_becomes_plain_words(cli, fake_bin, tmp_path, monkeypatch):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such-docker.sock")
    result, record = _run_cli(cli, tmp_path)
    check = checks_by_id(record)["docker"]
    assert check["message"]["en"] == (
        "Docker Engine not reachable: the Docker daemon is not running (no /var/run/docker.sock)")
    assert "sudo systemctl start docker" in check["fix"]["en"]
    assert "Error while fetching" not in result.out and "FileNotFoundError" not in json.dumps(record)


def test_docker_sdk_raw_errors_in_plain_words():
    raw = ("Error while fetching server API version: ('Connection aborted.', FileNotFoundError(2, 'No such file or "
           "directory'))")
    assert envcheck.explain_docker_error(raw)[1] == "the Docker daemon is not running (no /var/run/docker.sock)"
    zh, en = envcheck.explain_docker_error(
        "Error while fetching server API version: ('Connection aborted.', PermissionError(13, 'Permission denied'))")
    assert en == "this user may not use /var/run/docker.sock" and "docker.sock" in zh
    assert envcheck.explain_docker_error("something else") is None


PULL_TIMEOUT = ("docker: Error response from daemon: Get https://registry-1.docker.io/v2/: net/http: request canceled "
                "while waiting for connection (Client.Timeout exceeded while awaiting headers).")


def test_failed_pull_gives_the_registry_mirror_hint(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", (
        f'if [ "$1" = info ]; then cat "{DOCKER / "docker-info-nvidia-default.json"}"; exit 0; fi\n'
        f'echo "{PULL_TIMEOUT}" >&2; exit 125\n'))
    result, record = _run_cli(cli, tmp_path, "--no-sdk", "--gpu-container", "--os-release", str(ubuntu))
    hint = checks_by_id(record)["registry-mirror"]
    assert hint["ok"] is False and hint["severity"] == "warning"
    assert "registry mirrors configured: none" in hint["message"]["en"]
    assert '"registry-mirrors"' in hint["fix"]["en"] and "docker pull nvidia/cuda:10.0-base" in hint["fix"]["en"]
    assert "gpu-isolation" not in checks_by_id(record) and result.code == 1


def test_slow_pull_gives_the_hint_and_the_isolation_probe_runs(fake_bin, tmp_path):
    write_program(fake_bin, "docker", 'case "$*" in *NVIDIA_VISIBLE_DEVICES=0*) echo "GPU 0: A";; '
                                      '*) printf "GPU 0: A\\nGPU 1: B\\n";; esac\n')
    ticks = iter([0.0, 300.0])
    container = envcheck.probe_gpu_container("img", use_sdk=False, clock=lambda: next(ticks))
    assert container["ok"] and container["gpus"] == 2 and container["elapsed_s"] == 300.0
    assert container["isolated"] == {"ok": True, "gpus": 1, "error": None}
    checks = {c["id"]: c for c in envcheck_checks._container_checks(container, "img", {"registry_mirrors": ["https://m"]})}
    assert checks["gpu-isolation"]["ok"] is True
    assert "the first run took 300.0 s; registry mirrors configured: https://m" in (
        checks["registry-mirror"]["message"]["en"])
