#!/usr/bin/env bash
# Checks the alert rules with promtool: syntax (check rules) and the unit
# tests of receiptd-rules.test.yml and receiptd-update-rules.test.yml
# (ReceiptdVersionBehind's ten days, at its own evaluation interval),
# which fire each alert from synthetic series (test rules). The metric names are checked against a real daemon
# by monitoring_test.go (go test ./packaging/monitoring).
#
# Uses promtool from PATH, else Debian's prometheus package unpacked (not
# installed: installing it would start a Prometheus server) into
# ${PROMTOOL_DIR:-/tmp/receiptd-promtool}.
set -euo pipefail
cd "$(dirname "$0")"

find_promtool() {
  if command -v promtool >/dev/null 2>&1; then
    command -v promtool
    return
  fi
  local dir="${PROMTOOL_DIR:-/tmp/receiptd-promtool}"
  if [ ! -x "$dir/usr/bin/promtool" ]; then
    mkdir -p "$dir"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    (cd "$dir" && apt-get download prometheus >/dev/null 2>&1) ||
      { $sudo apt-get update >/dev/null && (cd "$dir" && apt-get download prometheus >/dev/null); }
    dpkg-deb -x "$dir"/prometheus_*.deb "$dir"
  fi
  echo "$dir/usr/bin/promtool"
}

promtool=$(find_promtool)
"$promtool" --version 2>&1 | head -n 1
"$promtool" check rules receiptd-rules.yml
"$promtool" test rules receiptd-rules.test.yml
"$promtool" test rules receiptd-update-rules.test.yml
"$promtool" check rules receiptd-control-rules.yml
"$promtool" test rules receiptd-control-rules.test.yml
