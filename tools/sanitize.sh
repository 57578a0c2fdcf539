#!/bin/sh
# `make sanitize`: the whole test suite under AddressSanitizer (leaks included) and
# UndefinedBehaviorSanitizer, every `dkb` the tests start included. The tests name build/dkb,
# build/gen, ...: they run in a folder of links to this tree whose build/ is the sanitizer build
# (argument 1, default build-asan). A report of the test binary or of any dkb it ran lands in a
# log file of that folder, and fails the run (exit 1) even when the tests passed.
set -e
cd "$(dirname "$0")/.."
root=$(pwd)
build=${1:-build-asan}
[ -x "$root/$build/dkb_tests" ] || { echo "sanitize: no $build/dkb_tests (make sanitize builds it)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for e in "$root"/*; do [ "$(basename "$e")" = build ] || ln -s "$e" "$dir/"; done
ln -s "$root/$build" "$dir/build"
# git, asked about a file by a test or by dkb, answers for this tree, not for a tree of links
export GIT_DIR="$root/.git" GIT_WORK_TREE="$root"
# exitcode 99: a report never reads as one of dkb's own exit codes; protect_shadow_gap=0 lets the
# CUDA runtime map what it needs.
export ASAN_OPTIONS="protect_shadow_gap=0:detect_leaks=1:exitcode=99:log_path=$dir/sanitizer"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$dir/sanitizer"
rc=0
(cd "$dir" && ./build/dkb_tests) || rc=$?
if ls "$dir"/sanitizer.* >/dev/null 2>&1; then
  cat "$dir"/sanitizer.* >&2
  echo "sanitize: $(ls "$dir"/sanitizer.* | wc -l) sanitizer report(s)" >&2
  exit 1
fi
[ "$rc" -eq 0 ] || { echo "sanitize: tests failed (exit $rc)" >&2; exit 1; }
echo "sanitize: no sanitizer reports"
