#!/usr/bin/env bash
# Installs the Debian packages named as arguments with apt when run as root; otherwise prints the command to run
# and fails. Used by install-deps.sh and install-test-tools.sh. Usage: apt-install.sh WHAT-FOR PACKAGE...
set -euo pipefail
what=$1
shift
[ $# -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing $* with apt" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "$@" >/dev/null
else
  echo "$what needs $*. Run: sudo apt-get update && sudo apt-get install -y $*" >&2
  exit 1
fi
