#!/usr/bin/env bash
# Grade a whole class: unpack the LMS export (one archive or folder per group), grade every group from its
# evidence, and say where the grades are and which folders need a look.
# 批量评分：解压每组的提交（压缩包或目录），根据证据评分，并列出需要人工查看的目录。
#
#   scripts/grade_all.sh EXPORT_DIR [OUT_DIR] [-- extra options for `hivedlab grade`, e.g. --rubric r.yaml]
#
# Each export entry is said to be a zip, a tar, a folder or "not an archive: <why>", with the files found in it; a
# file named like an archive that is not one (a broken zip) is listed under "Needs a look" in grades.md.
# Nothing from a submission is executed; archives are unpacked without their symlinks, absolute or `..` paths.
#
# Exit status: 0 every group graded, none needs a look; 1 graded, but some group needs a look (grades.md says
# which and why); 2 could not grade (bad arguments, no Python, OUT_DIR/submissions already there).
# 退出码：0 全部评分且无需人工查看；1 已评分，但有小组需要人工查看；2 无法评分。
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then usage; [[ $# -ge 1 ]] && exit 0 || exit 2; fi

here="$(cd "$(dirname "$0")/.." && pwd)"
python="${HIVEDLAB_PYTHON:-$here/.venv/bin/python}"
[[ -x "$python" ]] || { echo "grade_all: error: $python not found; run 'make venv' first" >&2; exit 2; }

export_dir="$1"; shift
out_dir="grades"
if [[ $# -gt 0 && "$1" != "--" ]]; then out_dir="$1"; shift; fi
[[ $# -gt 0 && "$1" == "--" ]] && shift
[[ -d "$export_dir" ]] || { echo "grade_all: error: $export_dir is not a folder" >&2; exit 2; }

mkdir -p "$out_dir"
submissions="$out_dir/submissions"
if [[ -e "$submissions" ]]; then
  echo "grade_all: error: $submissions already exists; remove it or choose another OUT_DIR" >&2
  exit 2
fi
echo "== unpacking $export_dir -> $submissions"
# imported, not run with -m: the grading package imports this module first, and runpy would warn about it
unpack='import sys; from hivedlab.checker.grading.unpack import main; sys.exit(main(sys.argv[1:]))'
"$python" -c "$unpack" "$export_dir" "$submissions" \
  || echo "(some entries could not be unpacked: grades.md lists them under \"Needs a look\")"

echo "== grading"
status=0
"$python" -m hivedlab grade "$submissions" --out "$out_dir" "$@" || status=$?
if [[ $status -ge 2 ]]; then exit "$status"; fi
echo "== done: $out_dir/grades.csv, $out_dir/grades.md, $out_dir/groups/<group>/{feedback.md,results.json}"
exit "$status"
