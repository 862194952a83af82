#!/usr/bin/env bash
# Installs the x64 MSI under Wine with msiexec, checks that the service it
# registers runs and answers /healthz on the example config's address,
# then removes it and checks that the service and the program are gone and
# C:\ProgramData\receiptd (config, database) is kept. Run inside the Wine
# root by .ci/run:  .ci/wine/run bash .ci/wine/msi-check.sh dist/receiptd-V-x64.msi
set -uo pipefail
msi=$1
C=/root/.wine/drive_c
fail() { echo "msi-check: $*" >&2; exit 1; }
# Wine ends services.exe (and every service) once no other Windows
# program runs: keep one running for the length of the check.
wine ping -n 300 127.0.0.1 >/dev/null 2>&1 &
keep=$!
# msiexec /x also deletes the key EventLog\Application when receiptd's
# source was its only subkey (as in a fresh Wine prefix; never on Windows,
# where other sources live there), and kardianos/service's install then
# fails ("SetupEventLogSource() failed: File not found"): put it back.
restore_eventlog() {
  wine reg add 'HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application' /f >/dev/null 2>&1
  kill $keep 2>/dev/null
}
trap restore_eventlog EXIT
rm -rf "$C/ProgramData/receiptd"
wine msiexec /i "$msi" /qn /l*v 'C:\receiptd-msi-install.log' 2>/dev/null \
  || { tr -d '\0' < "$C/receiptd-msi-install.log" | tail -20; fail "msiexec /i failed"; }
ok=
for _ in $(seq 100); do
  if curl -fsS -m 2 http://127.0.0.1:7080/healthz >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.2
done
[ -n "$ok" ] || fail "the service installed by the MSI does not answer /healthz"
wine sc query receiptd 2>/dev/null | grep -q RUNNING || fail "service receiptd is not RUNNING"
[ -f "$C/ProgramData/receiptd/config.toml" ] || fail "no config.toml copied into ProgramData"
[ -f "$C/ProgramData/receiptd/data/receiptd.db" ] || fail "no database in ProgramData\\receiptd\\data"
echo "msi-check: installed, service running, /healthz answers"
wine msiexec /x "$msi" /qn /l*v 'C:\receiptd-msi-remove.log' 2>/dev/null || fail "msiexec /x failed"
if wine sc query receiptd 2>/dev/null | grep -q SERVICE_NAME; then fail "service receiptd still registered"; fi
[ ! -e "$C/Program Files/receiptd/receiptd.exe" ] || fail "receiptd.exe left in Program Files"
[ -f "$C/ProgramData/receiptd/config.toml" ] || fail "uninstall removed the operator's config"
curl -fsS -m 2 http://127.0.0.1:7080/healthz >/dev/null 2>&1 && fail "something still answers on 7080 after uninstall"
echo "msi-check: removed; config and database kept"
