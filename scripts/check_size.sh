#!/usr/bin/env bash
# check_size.sh — the project's size limits (STYLE.md, the preamble's hard rules):
#   * no function of the library (common/ graph/ pack/ planner/ pool/ executor/ zoo/) over
#     100 lines, counted from its opening brace to its closing brace, both included;
#   * no .c/.h file over 800 lines outside tests/.
# Functions are found in the repository's clang-format style (Linux braces): a definition's
# opening brace stands alone in column 0 and its closing brace too; the function's name is taken
# from the signature above the brace. Each offender is printed as FILE:LINE with its name and
# length, so the message names what to split. Exit 1 when anything is over, 0 otherwise.
#   scripts/check_size.sh [--root DIR] [--max-function N] [--max-file N]   (defaults: the
#   repository, 100, 800)
set -euo pipefail
cd "$(dirname "$0")/.."
max_fn=100 max_file=800
while [ $# -gt 0 ]; do
    case $1 in
    --root) cd "$2"; shift ;;
    --max-function) max_fn=$2; shift ;;
    --max-file) max_file=$2; shift ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_size.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ -d .git ] || [ -f .git ]; then
    mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h')
else
    mapfile -t files < <(find . -name '*.[ch]' -not -path './build*' | sed 's|^\./||')
fi
fail=0
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    case $f in tests/*) continue ;; esac
    n=$(wc -l <"$f")
    if [ "$n" -gt "$max_file" ]; then
        echo "$f: $n lines, over the $max_file-line limit for a file: split it"
        fail=1
    fi
    case $f in common/* | graph/* | pack/* | planner/* | pool/* | executor/* | zoo/*) ;; *) continue ;; esac
    out=$(awk -v max="$max_fn" -v file="$f" '
        /^[A-Za-z_].*\(/ { sig = $0; sigline = NR }
        /^\{/ { start = NR; name = sig; sub(/\(.*/, "", name); n = split(name, w, /[ *]+/); name = w[n] }
        /^\}/ && start { len = NR - start + 1
            if (len > max) printf "%s:%d: function %s() is %d lines, over the %d-line limit: split it\n", file, sigline, name, len, max
            start = 0 }' "$f")
    if [ -n "$out" ]; then
        echo "$out"
        fail=1
    fi
done
if [ $fail -eq 0 ]; then
    echo "check_size: ok (library functions <= $max_fn lines, files outside tests/ <= $max_file lines)"
fi
exit $fail
