#!/usr/bin/env bash
# Tools the packaging targets need, installed with apt-get when missing:
#   packaging/deps.sh deb       dpkg-deb and strip (make deb)
#   packaging/deps.sh lint      lintian as well (make lint-deb)
#   packaging/deps.sh install   mmdebstrap as well (make test-install)
set -euo pipefail
want=()
command -v dpkg-deb >/dev/null || want+=(dpkg)
command -v strip >/dev/null || want+=(binutils)
case "${1:-deb}" in
    lint) command -v lintian >/dev/null || want+=(lintian) ;;
    install)
        command -v lintian >/dev/null || want+=(lintian)
        command -v mmdebstrap >/dev/null || want+=(mmdebstrap)
        command -v openssl >/dev/null || want+=(openssl)
        command -v curl >/dev/null || want+=(curl)
        ;;
    deb) ;;
    *) echo "usage: packaging/deps.sh deb|lint|install" >&2; exit 2 ;;
esac
((${#want[@]} > 0)) || exit 0
if [[ "$(id -u)" != 0 ]]; then
    echo "packaging/deps.sh: missing ${want[*]}. As root, run:" >&2
    echo "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${want[*]}" >&2
    exit 1
fi
echo "packaging/deps.sh: installing ${want[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}"
