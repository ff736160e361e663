#!/usr/bin/env bash
# Installs the Debian packages of a build (BUILD/packages/*.deb, from `make package`) on this machine
# with apt-get, uses them as a user would with the build and source trees hidden
# (tests/package/check_install.sh --system), and removes them again.
#
#   scripts/check-packages.sh [BUILD_DIR]      (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

if [ "$(id -u)" -ne 0 ]; then
  echo "check-packages: run as root: it installs and removes Debian packages" >&2
  exit 1
fi
shopt -s nullglob
debs=("$PWD/$build"/packages/*.deb)
if [ ${#debs[@]} -ne 4 ]; then
  echo "check-packages: expected 4 packages in $build/packages (run make package), found ${#debs[@]}" >&2
  exit 1
fi
names=()
for deb in "${debs[@]}"; do
  names+=("$(dpkg-deb --field "$deb" Package)")
done

remove() { apt-get remove -y -qq --purge "${names[@]}" > /dev/null 2>&1 || true; }
trap remove EXIT
remove

echo "check-packages: installing ${names[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends "${debs[@]}" > /dev/null
for name in "${names[@]}"; do
  dpkg-query -W -f='${Status}' "$name" | grep -q "install ok installed" \
    || { echo "check-packages: $name is not installed" >&2; exit 1; }
done
bash tests/package/check_install.sh "$build" --system
echo "check-packages: passed"
