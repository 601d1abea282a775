#!/usr/bin/env bash
# Lint: every tracked C++ file is clang-format-14 clean (.clang-format), and clang-tidy-14
# (.clang-tidy, every finding an error) passes on every translation unit of lib/, app/,
# python/ and tests/ (unit tests, the oracle driver, the fuzz targets and their replay
# runner; tests/.clang-tidy gives them a cheaper check set).
#   bash scripts/lint.sh            both
#   bash scripts/lint.sh format     only the format check (seconds)
#   bash scripts/lint.sh tidy       only clang-tidy
#   bash scripts/lint.sh tidy FILE...   clang-tidy on these translation units only
# clang-tidy reads a build's compile_commands.json: LINT_BUILD (CI: build/ci, the clang
# build it has just made), else the dev preset's (build/dev; configured here if it is
# missing), so it sees the flags the build uses and nothing is compiled for it. bench/ is
# not in those builds, so not analysed. In a unity build (the ci preset, ATTN_UNITY) the
# database holds the batches CMake generated, not the source files: each target's batches
# are analysed as one translation unit with the checks of the target's folder (.clang-tidy,
# app/.clang-tidy, tests/.clang-tidy), and the files' findings are reported as theirs (a
# file named on the command line runs its target's unit).
# Files run in parallel (GNU parallel, one job per core, each file's findings printed
# together); the exit status is non-zero when any file has a finding.
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
shift || true
case "$what" in
all | format | tidy) ;;
*)
    echo "usage: scripts/lint.sh [format|tidy]" >&2
    exit 2
    ;;
esac

if [[ "$what" != tidy ]]; then
    git ls-files -z '*.cpp' '*.hpp' '*.h' '*.cc' | xargs -0 clang-format-14 --dry-run --Werror
    echo "clang-format-14: clean"
fi
if [[ "$what" == format ]]; then
    exit 0
fi

build=${LINT_BUILD:-build/dev}
db=$build/compile_commands.json
if [[ ! -f "$db" && -z "${LINT_BUILD:-}" ]]; then
    cmake --preset dev >/dev/null
fi
if [[ ! -f "$db" ]]; then
    echo "lint: no $db (configure that build first)" >&2
    exit 2
fi
export build
# Our translation units in the database (the build's generated sources, the embedded font
# and HTML files, are bytes, not code). A unity build's batches (CMake's Unity/unity_N_cxx.cxx)
# are joined into one translation unit per target for clang-tidy, $build/lint/TARGET.cxx
# with its own compile database beside it: the cost of analysing a batch is mostly its
# headers (clang-tidy's matchers visit every declaration of the standard library,
# nlohmann/json and xtensor), so 60 unit tests in one unit took about 30 s of CPU where 8
# batches of them took about 160 s. Each is printed with the files it includes ("UNIT FILE...", to find the
# unit of a file named on the command line).
mapfile -t units < <(python3 - "$db" "$PWD" "$build" <<'EOF'
import json, os, re, sys
db, root, build = sys.argv[1], sys.argv[2] + "/", sys.argv[3]
entries = json.load(open(db))
batches = {}
for f, e in sorted({e["file"]: e for e in entries}.items()):
    rel = f[len(root):] if f.startswith(root) else ""
    if rel.split("/")[0] in ("lib", "app", "python", "tests"):
        print(rel)
    elif re.search(r"/Unity/unity_[0-9]+_cxx\.cxx$", rel):
        batches.setdefault(os.path.dirname(os.path.dirname(f)), []).append(e)
lint_db = []
for target_dir, group in sorted(batches.items()):
    group.sort(key=lambda e: int(re.search(r"unity_([0-9]+)_cxx", e["file"]).group(1)))
    parts = []
    for e in group:
        parts += re.findall(r'^#include "([^"]+)"', open(e["file"]).read(), re.M)
    parts = [p[len(root):] if p.startswith(root) else p for p in parts]
    tops = {p.split("/")[0] for p in parts}
    if len(tops) != 1 or not tops <= {"lib", "app", "python", "tests"}:
        sys.exit(f"lint: {target_dir}: a unity build of files of several folders ({parts})")
    name = os.path.basename(target_dir).removesuffix(".dir")
    unit = f"{build}/lint/{name}.cxx"
    os.makedirs(f"{build}/lint", exist_ok=True)
    text = "/* clang-tidy's unit for the unity build of " + name + " (scripts/lint.sh) */\n"
    # Including a .cpp is what a unity build does: not a finding here.
    text += "".join(f'#include "{root}{p}" // NOLINT(bugprone-suspicious-include)\n'
                    for p in parts)
    if not os.path.exists(unit) or open(unit).read() != text:
        open(unit, "w").write(text)
    first = group[0]
    entry = {"directory": first["directory"], "file": root + unit}
    if "command" in first:
        entry["command"] = first["command"].replace(first["file"], root + unit)
    else:
        entry["arguments"] = [root + unit if a == first["file"] else a for a in first["arguments"]]
    lint_db.append(entry)
    print(unit, *parts)
if lint_db:
    json.dump(lint_db, open(f"{build}/lint/compile_commands.json", "w"), indent=1)
EOF
)
files=()
for u in "${units[@]}"; do
    files+=("${u%% *}")
done
if [[ $# -gt 0 ]]; then
    named=()
    for f in "$@"; do
        unit=$(printf '%s\n' "${units[@]}" | grep -E "(^| )$f( |\$)" | head -n 1 || true)
        if [[ -z "$unit" ]]; then
            echo "lint: $f is not a translation unit of lib/, app/, python/ or tests/ in $db" >&2
            exit 2
        fi
        named+=("${unit%% *}")
    done
    mapfile -t files < <(printf '%s\n' "${named[@]}" | sort -u)
fi
if [[ ${#files[@]} -eq 0 ]]; then
    echo "lint: no translation units found in $db" >&2
    exit 1
fi

tidy_one() {
    local extra=()
    # The Highway source is compiled once per SIMD target: hwy/foreach_target.h re-includes
    # it for each (6 on x86), and clang-tidy would analyse the same text 6 times. It is
    # analysed for three, which between them take every per-target #if branch of its
    # -inl.h parts: AVX3 (also AVX3_DL's branch), AVX2 (also SSE4's and SSSE3's) and the
    # static fallback (EMU128 under clang). Highway's detect_targets.h subtracts
    # HWY_DISABLED_TARGETS from what it compiles.
    if [[ "$1" == lib/src/core/kernel_ops_hwy.cpp ]]; then
        extra+=("--extra-arg=-DHWY_DISABLED_TARGETS=(HWY_AVX3_DL|HWY_SSE4|HWY_SSSE3)")
    fi
    # A unity build's unit lies in the build folder, which has no .clang-tidy of its own:
    # the files it includes take their folder's checks, as they would one by one.
    local db_dir=$build
    if [[ "$1" == "$build"/lint/*.cxx ]]; then
        db_dir=$build/lint
        local first
        first=$(sed -n 's|^#include "'"$PWD"'/\([a-z]*\)/.*|\1|p' "$1" | head -n 1)
        if [[ -f "$first/.clang-tidy" ]]; then
            extra+=("--config-file=$first/.clang-tidy")
        else
            extra+=("--config-file=.clang-tidy")
        fi
    fi
    # The database holds g++'s flags: clang does not know some of its warning options.
    local out rc=0 TIMEFORMAT="%R %U %S $1"
    { time out=$(clang-tidy-14 -p "$db_dir" --quiet --warnings-as-errors='*' \
        --header-filter="^$PWD/(lib|app|python|tests)/" \
        --extra-arg=-Wno-unknown-warning-option "${extra[@]}" "$1" 2>&1) || rc=$?; } 2>>"$times"
    # Only the findings: not clang's count of the warnings it suppressed in other headers.
    grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' <<<"$out" || true
    return "$rc"
}
export -f tidy_one
# Each file's wall, user and system seconds, to see where the time goes.
times=$build/clang-tidy-times.txt
export times
: >"$times"

echo "clang-tidy-14: ${#files[@]} files, $(nproc) at a time"
status=0
printf '%s\n' "${files[@]}" | parallel --will-cite --halt never -j "$(nproc)" tidy_one || status=1
sort -k2,2 -g -r "$times" | awk -v f="$times" '{ cpu += $2 + $3 }
    NR <= 3 { slow = slow sprintf("%s %.0f s, ", $4, $2 + $3) }
    END { printf "clang-tidy-14: %.0f s of CPU; slowest: %s(every file in %s)\n", cpu, slow, f }'
if [[ $status -ne 0 ]]; then
    echo "clang-tidy-14: findings above (fix each, or disable its check in .clang-tidy with" \
        "the reason)" >&2
    exit 1
fi
echo "clang-tidy-14: clean"
