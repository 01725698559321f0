#!/bin/sh
# Prints, one a line, the Debian packages that own the shared libraries a
# binary links (ldd), so that a runtime image installs those and nothing of
# the build: deploy/Containerfile runs it on the psflow it has built.
#
#   deploy/runtime-packages.sh build/psflow
#
# Exit 1 when a library belongs to no package (a library built by hand
# would be missing from the runtime image).
set -eu
binary=${1:?usage: runtime-packages.sh BINARY}
linked=$(ldd "$binary")
libraries=$(printf '%s\n' "$linked" | awk '/=> \// { print $3 }')
if [ -z "$libraries" ]; then
  echo "runtime-packages: $binary links no shared library (is it a dynamic executable?)" >&2
  exit 1
fi
# dpkg knows a library by the path its package installed it at, which on a
# merged-/usr system may differ from the path ldd prints (/lib/x or
# /usr/lib/x, or the file a symlink points at): every form is asked, in one
# dpkg query (a query per library takes seconds).
forms() { # PATH: the forms of PATH dpkg may know
  printf '%s\n' "$1" "/usr${1#/usr}" "${1#/usr}" "$(realpath "$1")"
}
candidates=$(for lib in $libraries; do forms "$lib"; done | sort -u)
# shellcheck disable=SC2086 # one argument per path
known=$(dpkg -S $candidates 2>/dev/null || true)
packages=""
for lib in $libraries; do
  owner=""
  for form in $(forms "$lib"); do
    if [ -z "$owner" ]; then
      # "libgrpc29:amd64: /usr/lib/...": the (first) package name alone.
      owner=$(printf '%s\n' "$known" |
        awk -v path="$form" '$NF == path { sub(/[:,].*/, ""); print; exit }')
    fi
  done
  if [ -z "$owner" ]; then
    echo "runtime-packages: no Debian package owns $lib" >&2
    exit 1
  fi
  packages="$packages $owner"
done
printf '%s\n' $packages | sort -u
