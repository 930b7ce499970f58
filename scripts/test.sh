#!/usr/bin/env bash
# Installs what is missing, builds and runs the whole test suite: the format check, the module
# dependency check (every #include against docs/design.md's module table) and the size limits,
# then the normal build (with jemalloc), an ASan+UBSan build (jemalloc off) and a TSan build,
# each running every ctest test. Exits non-zero on the first failure.
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --quick    format check + normal build only
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
start=$(date +%s)
scripts/deps.sh

echo "== format check (clang-format $(clang-format --version | grep -o '[0-9]*\.[0-9.]*' | head -1))"
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build*')
clang-format --dry-run --Werror "${files[@]}"

echo "== include check (scripts/check_deps.sh, module table in docs/design.md)"
scripts/check_deps.sh
echo "== size limits (scripts/check_size.sh)"
scripts/check_size.sh

jobs=$(nproc 2>/dev/null || echo 2)
run_build() {  # name, cmake args...
    local name=$1; shift
    local dir="build-ci-$name" t0=$(date +%s)
    echo "== build $name"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAF_WERROR=ON -DAF_BUILD_BENCH=ON "$@" >"$dir.log" 2>&1 \
        || { cat "$dir.log"; exit 1; }
    cmake --build "$dir" -j"$jobs" >>"$dir.log" 2>&1 || { grep -E 'error|warning' "$dir.log" | head -50; tail -20 "$dir.log"; exit 1; }
    echo "== test $name"
    (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 900)
    echo "== $name done in $(( $(date +%s) - t0 )) s"
}
run_build normal
if [ $quick -eq 0 ]; then
    # allocator_may_return_null: the library answers an impossible allocation with AF_ENOMEM
    # (tests/test_exhaust.c asks for 2^60 bytes); the sanitizers would abort instead.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1 \
        run_build asan -DAF_ASAN=ON -DAF_BUILD_BENCH=OFF
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 allocator_may_return_null=1" \
        run_build tsan -DAF_TSAN=ON -DAF_WITH_JEMALLOC=OFF -DAF_BUILD_BENCH=OFF
fi
echo "== all tests passed in $(( $(date +%s) - start )) s"
