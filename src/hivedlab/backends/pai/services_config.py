"""Put a HiveD config into OpenPAI's `services-configuration.yaml` under `hivedscheduler.config`
(docs/openpai-model.md#services-configuration).

A text-level splice: only the `config` value changes (written as a literal block `|`), every other byte of the file
stays as it was - comments, key order, quoting, blank lines. The result is parsed back to prove it.
"""

from __future__ import annotations

import re
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import parse_yaml

FILE_NAMES = ("services-configuration.yaml", "service-configuration.yaml")  # the manual writes the second
_TOP_KEY = re.compile(r"^hivedscheduler\s*:\s*(#.*)?$")
_KEY = re.compile(r"^(?P<indent> *)config\s*:(?P<rest>.*)$")


def find_services_file(path: Path) -> Path:
    """The file itself, or the services configuration inside a config folder (either spelling)."""
    if path.is_dir():
        for name in FILE_NAMES:
            if (path / name).is_file():
                return path / name
        raise HivedlabError(f"no {' or '.join(FILE_NAMES)} in {path} (get it with `paictl.py config pull -o DIR`)")
    if not path.exists():
        raise HivedlabError(
            f"no {path}: OpenPAI's quick-start (manual step 2) writes the cluster's configuration to "
            "~/pai-deploy/cluster-cfg on the dev-box; elsewhere pull it with `paictl.py config pull -o DIR` / "
            f"找不到 {path}：OpenPAI 的 quick-start（手册第 2 步）会把集群配置写到 dev-box 的 "
            "~/pai-deploy/cluster-cfg；在其他机器上可用 `paictl.py config pull -o DIR` 取得")
    if not path.is_file():
        raise HivedlabError(f"cannot read {path}: not a file")
    return path


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    return not line.strip()


def _block(config_text: str, indent: int, newline: str) -> list[str]:
    body = config_text.rstrip("\n").split("\n")
    pad = " " * indent
    return [(pad + line if line.strip() else "") + newline for line in body]


def splice_hived_config(original: str, config_text: str) -> str:
    """`original` with `hivedscheduler.config` replaced by `config_text` as a literal block; the rest unchanged."""
    if "\t" in config_text:
        raise HivedlabError("the HiveD config contains a tab; YAML block scalars need spaces")
    lines = original.splitlines(keepends=True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    top = next((i for i, line in enumerate(lines) if _TOP_KEY.match(line.rstrip("\r\n"))), None)
    if top is None and any(line.startswith("hivedscheduler") for line in lines):
        raise HivedlabError("hivedscheduler is not written as a block mapping (`hivedscheduler:` on its own line); "
                            "edit that file by hand")
    if top is None:
        tail = "" if not original or original.endswith("\n") else newline
        block = ["hivedscheduler:" + newline, "  config: |" + newline, *_block(config_text, 4, newline)]
        return original + tail + "".join(block)
    end = top + 1  # the section: lines indented deeper than column 0, blank lines or comments
    while end < len(lines) and (_blank(lines[end]) or _indent(lines[end]) > 0 or lines[end].startswith("#")):
        end += 1
    while end > top + 1 and (_blank(lines[end - 1]) or lines[end - 1].startswith("#")):
        end -= 1
    children = [i for i in range(top + 1, end) if not _blank(lines[i]) and not lines[i].lstrip().startswith("#")]
    child_indent = min((_indent(lines[i]) for i in children), default=2)
    key = next((i for i in children if _indent(lines[i]) == child_indent and _KEY.match(lines[i].rstrip("\r\n"))),
               None)
    if key is None:
        insert = ["{}config: |{}".format(" " * child_indent, newline),
                  *_block(config_text, child_indent + 2, newline)]
        return "".join(lines[: top + 1] + insert + lines[top + 1:])
    stop = key + 1  # the old value: deeper-indented or blank lines after the key
    while stop < end and (_blank(lines[stop]) or _indent(lines[stop]) > child_indent):
        stop += 1
    while stop > key + 1 and _blank(lines[stop - 1]):
        stop -= 1
    replacement = ["{}config: |{}".format(" " * child_indent, newline),
                   *_block(config_text, child_indent + 2, newline)]
    return "".join(lines[:key] + replacement + lines[stop:])


def verify_splice(original: str, spliced: str, config_text: str, where: str) -> None:
    """Parse both files: the new `hivedscheduler.config` is exactly `config_text`, nothing else changed."""
    before, after = parse_yaml(original, where) or {}, parse_yaml(spliced, where + " (after the change)")
    if not isinstance(after, dict) or not isinstance(after.get("hivedscheduler"), dict):
        raise HivedlabError(f"{where}: the change did not produce a hivedscheduler section (please report this)")
    if after["hivedscheduler"].get("config") != config_text.rstrip("\n") + "\n":
        raise HivedlabError(f"{where}: hivedscheduler.config does not read back as written (please report this)")
    if isinstance(before, dict):
        rest_before = {k: v for k, v in before.items() if k != "hivedscheduler"}
        rest_after = {k: v for k, v in after.items() if k != "hivedscheduler"}
        old_hived = dict(before.get("hivedscheduler") or {})
        new_hived = dict(after["hivedscheduler"])
        old_hived.pop("config", None)
        new_hived.pop("config", None)
        if rest_before != rest_after or old_hived != new_hived:
            raise HivedlabError(f"{where}: the change touched more than hivedscheduler.config (please report this)")


def current_hived_config(text: str, where: str) -> str | None:
    data = parse_yaml(text, where)
    section = data.get("hivedscheduler") if isinstance(data, dict) else None
    value = section.get("config") if isinstance(section, dict) else None
    return value if isinstance(value, str) else None
