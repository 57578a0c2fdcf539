#!/bin/sh
# Installs the Debian packages dkb needs when they are missing, so a fresh machine needs only
# `make run` and `make test`. Quiet when everything is present.
set -e
missing=""
need() { [ -e "$1" ] || missing="$missing $2"; }
need /usr/include/jansson.h libjansson-dev
need /usr/include/openssl/evp.h libssl-dev
need /usr/include/cmocka.h libcmocka-dev
need /usr/include/fiu-control.h libfiu-dev  # tests/failalloc.py: one failing allocation at a time
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null || missing="$missing python3-jsonschema"
/usr/bin/python3 -c 'import numpy' 2>/dev/null || missing="$missing python3-numpy"
[ -x /usr/bin/python3 ] || missing="$missing python3"
# `tools/deps.sh fuzz` (make fuzz): clang and its libFuzzer runtime too
if [ "$1" = fuzz ]; then
  need /usr/bin/clang clang
  [ -n "$(find /usr/lib/llvm-*/lib/clang -name 'libclang_rt.fuzzer-x86_64.a' 2>/dev/null | head -1)" ] ||
    missing="$missing libclang-rt-dev"
fi
[ -z "$missing" ] && exit 0
echo "dkb: installing missing Debian packages:$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
