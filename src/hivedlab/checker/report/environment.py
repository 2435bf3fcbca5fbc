"""The report's 实验环境 table (the manual's rows, one column per member, from the environment records and the
inventory) and its notes on the hardware the experiments ran on; escaped for Markdown like the rest of the context."""

from __future__ import annotations

from typing import Any

from hivedlab.checker.report.inputs import MemberInfo, PrintedEnv, RunInputs
from hivedlab.checker.report.wording import ENV_GROUP_EN, ENV_ROWS, cell, in_lang, md
from hivedlab.rundir import env_record_name

_SIM = {"zh": "模拟集群，无此记录", "en": "simulated cluster, not recorded"}
_NO_RECORD = {"zh": "缺少环境记录", "en": "no environment record"}
_MISSING = {"zh": "缺失", "en": "missing"}


def _columns(inputs: RunInputs) -> list[tuple[str, MemberInfo | None, PrintedEnv | None]]:
    """One column per member (inventory order), then environment records of machines the inventory lacks."""
    columns: list[tuple[str, MemberInfo | None, PrintedEnv | None]] = []
    used: set[str] = set()
    by_host = {r.hostname: r for r in inputs.env.values() if r.hostname}
    for member in inputs.members:
        record = inputs.env.get(member.name) or inputs.env.get(member.name.lower())
        if record is None and member.hostname:
            record = by_host.get(member.hostname)
        if record is not None:
            used.add(record.member)
        columns.append((member.name, member, record))
    columns += [(r.member, None, r) for key, r in sorted(inputs.env.items()) if r.member not in used]
    return columns


def _env_value(key: str, member: MemberInfo | None, record: PrintedEnv | None, inputs: RunInputs, lang: str) -> str:
    inventory_value = {"hostname": member.hostname if member else "", "ip": member.ip if member else ""}
    if key == "openpai":
        if inputs.openpai_version:
            return inputs.openpai_version
        if record and record.openpai_version:
            return record.openpai_version
        if inputs.cluster == "sim":
            return in_lang(lang, "模拟集群（OpenPAI v1.2.0 + HiveD v0.3.4 的模型）",
                      "simulated (a model of OpenPAI v1.2.0 + HiveD v0.3.4)")
        return _MISSING[lang]
    if record is None:
        if key in inventory_value and inventory_value[key]:
            return inventory_value[key] + in_lang(lang, "（组员清单）", " (group inventory)")
        return _SIM[lang] if inputs.cluster == "sim" else _NO_RECORD[lang]
    if key == "gpu":
        if record.gpu_count in ("0",):
            return in_lang(lang, "无 GPU", "no GPU")
        if not record.gpu_model and not record.gpu_count:
            return _MISSING[lang]
        return f"{record.gpu_model or _MISSING[lang]}, {record.gpu_count or '?'}"
    if key == "docker":
        value = record.docker_version
        if value and record.docker_default_runtime:
            value += f" (default runtime: {record.docker_default_runtime})"
        return value or _MISSING[lang]
    if key == "cuda":
        value = record.cuda_version
        if value and record.driver_version:
            value += f" (driver {record.driver_version})"
        return value or _MISSING[lang]
    value = {"vcpus": record.vcpus, "ip": record.ip, "hostname": record.hostname, "os": record.os}[key]
    return value or inventory_value.get(key) or _MISSING[lang]


def environment(inputs: RunInputs, lang: str) -> dict[str, Any]:
    """The manual's 实验环境 table: one column per member, its rows, and notes on what is missing."""
    columns = _columns(inputs)
    rows = []
    for key, group, label_zh, label_en in ENV_ROWS:
        rows.append({
            "group": in_lang(lang, group, ENV_GROUP_EN.get(group, "")),
            "label": in_lang(lang, label_zh, label_en),
            "cells": [cell(_env_value(key, member, record, inputs, lang)) for _, member, record in columns],
        })
    return {"members": [cell(name) for name, _, _ in columns], "rows": rows, "notes": _env_notes(columns, inputs, lang)}


def _env_notes(columns: list[tuple[str, MemberInfo | None, PrintedEnv | None]], inputs: RunInputs,
               lang: str) -> list[str]:
    notes = []
    if inputs.cluster == "sim" and not inputs.env:
        notes.append(in_lang(
            lang,
            "本次实验运行在 hivedlab 的模拟集群上，没有真实机器：表中不填写硬件和软件环境。"
            "在真实集群上做实验时，每位组员在自己的机器上运行 `python3 labs/00_check_env.py --member 姓名 --role …`，"
            f"再把记录复制到运行目录的 `{env_record_name('<姓名>')}`。",
            "The experiments ran on hivedlab's simulated cluster, so there are no real machines: the table leaves "
            "hardware and software empty. On a real cluster every member runs "
            "`python3 labs/00_check_env.py --member NAME --role …` on their own machine and copies the record into "
            f"the run directory as `{env_record_name('<name>')}`.",
        ))
    for name, member, record in columns:
        if record is None and inputs.cluster != "sim":
            notes.append(in_lang(lang, f"运行目录中缺少 {md(name)} 的环境记录（{md(env_record_name(name))}）："
                                  "请在其机器上运行 `python3 labs/00_check_env.py`，再把记录复制到这里。",
                            f"No environment record for {md(name)} in the run directory "
                            f"({md(env_record_name(name))}): run `python3 labs/00_check_env.py` on that machine and "
                            "copy the record here."))
        if member is not None and not member.hostname and not (record and record.hostname):
            notes.append(in_lang(lang, f"{md(name)} 没有主机名（组员清单和环境记录中都没有）。",
                            f"{md(name)} has no hostname (neither in the group inventory nor in an environment "
                            "record)."))
        if member is not None and record is not None and member.hostname and record.hostname \
                and member.hostname != record.hostname:
            notes.append(in_lang(lang, f"{md(name)} 的主机名在组员清单中是 {md(member.hostname)}，环境记录中是 "
                                  f"{md(record.hostname)}：HiveD 配置中的 cellAddress 必须是 `hostname` 的输出。",
                            f"{md(name)}'s hostname is {md(member.hostname)} in the group inventory but "
                            f"{md(record.hostname)} in the environment record: HiveD's cellAddress must be what "
                            "`hostname` prints."))
        if member is None:
            notes.append(in_lang(lang, f"环境记录 {md(record.source if record else name)} 的组员 {md(name)} "
                                  "不在组员清单中。",
                            f"The environment record {md(record.source if record else name)} names {md(name)}, who is "
                            "not in the group inventory."))
    if not columns:
        notes.append(in_lang(lang, "没有组员清单（inventory.yaml），也没有环境记录：无法填写本表。",
                        "Neither a group inventory (inventory.yaml) nor environment records: the table cannot be "
                        "filled."))
    return notes


def hardware(inputs: RunInputs, lang: str) -> list[str]:
    """Which experiments ran on the manual's simulated hardware rather than the group's own workers, and why; and
    which ran on the group's own hardware with a config that differs from the manual's, and how (run.json's
    `hardware`): one line per reason or note, the experiments it covers named."""
    entries = inputs.record.hardware if inputs.record else {}
    by_reason: dict[str, list[str]] = {}
    for run_id, entry in entries.items():
        why = entry.get("why") if isinstance(entry, dict) and entry.get("on") == "manual" else None
        if isinstance(why, dict):
            by_reason.setdefault(str(why.get(lang) or why.get("en") or ""), []).append(str(run_id))
    lines = [in_lang(lang, f"{md('、'.join(ids))} 在模拟集群上按实验手册的硬件（两台各有 1 块 GPU 的 worker）运行，"
                      f"组员仍是本组的：{md(why)}。",
                f"{md(', '.join(ids))} ran on the simulated cluster on the lab manual's hardware (two workers with one "
                f"GPU each), with the group's own members: {md(why)}.")
             for why, ids in by_reason.items()]
    by_note: dict[str, list[str]] = {}
    for run_id, entry in entries.items():
        notes = entry.get("notes") if isinstance(entry, dict) and entry.get("on") == "group" else None
        for note in notes if isinstance(notes, list) else []:
            if isinstance(note, dict):
                text = str(note.get(lang) or note.get("en") or "").rstrip("。.")
                by_note.setdefault(text, []).append(str(run_id))
    lines += [in_lang(lang, f"{md('、'.join(ids))} 在本组的硬件上运行，HiveD 配置与实验手册的不同：{md(note)}。",
                 f"{md(', '.join(ids))} ran on the group's own hardware with a HiveD config that differs from the "
                 f"manual's: {md(note)}.")
              for note, ids in by_note.items()]
    return lines
