#!/usr/bin/env bash
# Run `hivedlab env --format json` on a real GPU machine and compare what it recorded with nvidia-smi's own answers.
# Usage (from the repository root): bash scripts/device_check_env.sh [OUT_DIR]
# Exit status: 0 when every compared field agrees, 1 when one differs, 2 when a tool is missing.
set -u
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:-/tmp}/device-check}"
mkdir -p "$OUT"

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "nvidia-smi not found: this check needs a GPU machine" >&2
  exit 2
fi

# The same check two ways: the CLI (any Python >= 3.10 with the package), and the stdlib-only script alone.
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
echo "== hivedlab env ($($PY --version 2>&1))"
$PY -m hivedlab env --member device --format json --out "$OUT/env-cli.json" --linux-user "" >"$OUT/env-cli.stdout" 2>"$OUT/env-cli.stderr"
echo "exit status: $? (1 = some check failed, e.g. no Docker on this machine)"
echo "== labs/00_check_env.py with the system python3 ($(python3 --version 2>&1))"
python3 -S labs/00_check_env.py --member device --no-sdk --format json --out "$OUT/env-script.json" --linux-user "" \
  --lang en >"$OUT/env-script.stdout" 2>"$OUT/env-script.stderr"
echo "exit status: $?"

# nvidia-smi's own answers, by other routes than the check uses (noheader/nounits CSV and the plain table header).
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader,nounits >"$OUT/smi-query.csv"
nvidia-smi >"$OUT/smi-table.txt"
nvidia-smi -q -x >"$OUT/smi-q.xml"
command -v nvcc >/dev/null 2>&1 && nvcc --version >"$OUT/nvcc.txt"
nproc >"$OUT/nproc.txt"
hostname >"$OUT/hostname.txt"

python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
rows = [[c.strip() for c in line.split(",")] for line in open(out + "/smi-query.csv") if line.strip()]
table = open(out + "/smi-table.txt").read()
cuda = re.search(r"CUDA Version:\s*([0-9.]+)", table)
expected = {
    "gpus.count": len(rows),
    "gpus.model": ", ".join(sorted({r[0] for r in rows})),
    "gpus.memory_mib": int(rows[0][2]) if rows else None,
    "driver_version": rows[0][1] if rows else None,
    "cuda_version": cuda.group(1) if cuda else None,
    "vcpus": int(open(out + "/nproc.txt").read().split()[0]),
    "hostname": open(out + "/hostname.txt").read().strip(),
}
try:
    m = re.search(r"V(\d+\.\d+\.\d+)", open(out + "/nvcc.txt").read())
    expected["nvcc_version"] = m.group(1) if m else None
except OSError:
    expected["nvcc_version"] = None
bad = 0
for label in ("env-cli", "env-script"):
    try:
        record = json.load(open("{}/{}.json".format(out, label)))
    except (OSError, ValueError) as exc:
        print("{}: no record ({})".format(label, exc)); bad += 1; continue
    print("\n== {} ==".format(label))
    for key, want in expected.items():
        got = record
        for part in key.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        ok = got == want
        bad += not ok
        print("  {:<5} {:<16} recorded={!r:<28} nvidia-smi/system={!r}".format("OK" if ok else "DIFF", key, got, want))
    for check in record.get("checks", []):
        print("  check {:<15} ok={!s:<5} {}".format(check["id"], check["ok"], check["message"]["en"]))
    try:
        import jsonschema
        schema = json.load(open("configs/schemas/environment-record.schema.json"))
        jsonschema.Draft202012Validator(schema).validate(record)
        print("  schema: valid")
    except ImportError:
        print("  schema: jsonschema not installed, not validated")
    except Exception as exc:  # report any validation problem in one line
        print("  schema: INVALID: {}".format(str(exc).splitlines()[0])); bad += 1
print("\nresult: {}".format("all fields agree" if not bad else "{} difference(s)".format(bad)))
sys.exit(1 if bad else 0)
PY
