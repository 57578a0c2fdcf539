#!/bin/sh
# fetch-wheel.sh NAME VERSION SHA256 DEST [PIP-OPTION...] - the upstream package a backend plugin builds
# against: `pip download --no-deps` of exactly NAME==VERSION into build/plugins/dl/, its archive SHA-256
# checked against the pin, unpacked into DEST (a wheel is a zip). Nothing of it is committed. DEST/.pin
# records what was unpacked, so a second run does nothing. Extra arguments go to pip (for a wheel with
# platform tags: --python-version, --platform, --only-binary=:all:, ...), so every machine picks the
# same file. Errors: "fetch-wheel: error: ...", exit 1.
set -eu
[ $# -ge 4 ] || { echo "usage: tools/fetch-wheel.sh NAME VERSION SHA256 DEST [PIP-OPTION...]" >&2; exit 2; }
name=$1 version=$2 pin=$3 dest=$4
shift 4
die() { echo "fetch-wheel: error: $*" >&2; exit 1; }
[ -f "$dest/.pin" ] && [ "$(cat "$dest/.pin")" = "$name==$version $pin" ] && exit 0
dl=build/plugins/dl
mkdir -p "$dl"
archive=$(ls "$dl"/*.whl 2>/dev/null | while read -r f; do
  [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$pin" ] && echo "$f" && break; done || true)
if [ -z "$archive" ]; then
  echo "fetch-wheel: pip download --no-deps $name==$version" >&2
  tmp=$(mktemp -d "$dl/.tmp.XXXXXX")
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$name==$version" "$@" ||
    { rm -rf "$tmp"; die "pip download $name==$version failed (is PyPI reachable?)"; }
  for f in "$tmp"/*; do
    got=$(sha256sum "$f" | cut -d' ' -f1)
    [ "$got" = "$pin" ] || { rm -rf "$tmp"; die "$(basename "$f"): SHA-256 $got, the pin says $pin"; }
    mv "$f" "$dl/"
    archive="$dl/$(basename "$f")"
  done
  rm -rf "$tmp"
fi
case "$archive" in *.whl) ;; *) die "$archive: not a wheel";; esac
rm -rf "$dest"
mkdir -p "$dest"
python3 -m zipfile -e "$archive" "$dest" || die "cannot unpack $archive"
echo "$name==$version $pin" > "$dest/.pin"
echo "$archive" > "$dest/.archive"
