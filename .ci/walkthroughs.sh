#!/usr/bin/env bash
# Runs the walkthroughs of README.md and docs/operations.md as written, with the real binary, where
# nothing but loopback exists. A walkthrough is a line
# "<!-- walkthrough: NAME -->" followed by two ```sh blocks: the first is
# terminal 1 (one command that runs until Ctrl-C: started in the
# background, and waited for until it prints its daemon's address), the
# second terminal 2 (each line run in turn; each must exit 0).
# `go run ./cmd/receiptd` runs the binary built once here.
#
# Checks, besides each command's exit status:
#   - the network: under `unshare -rn` (a network namespace with only lo),
#     and no log line names the live hosts or a failed name lookup: a
#     lookup that would leave 127.0.0.0/8 fails the run;
#   - fleet: the push says it started; posapi: receiptd's own sendData
#     happened and shows in /receiptd/status.
#
#   .ci/walkthroughs.sh            every walkthrough of both files
#   .ci/walkthroughs.sh NAME...    only those
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

say() { printf 'walkthroughs: %s\n' "$*"; }
die() { printf 'walkthroughs: FAIL: %s\n' "$*" >&2; exit 1; }

if [ -z "${WALKTHROUGH_BIN:-}" ]; then
  bin=$(mktemp -d)/receiptd
  go build -o "$bin" ./cmd/receiptd
  export WALKTHROUGH_BIN=$bin
  if unshare -rn true 2>/dev/null; then
    say "in a network namespace with loopback only (unshare -rn)"
    exec unshare -rn bash -c 'ip link set lo up && exec bash .ci/walkthroughs.sh "$@"' _ "$@"
  fi
  [ -n "${CI:-}" ] && die "unshare -rn is not available: the walkthroughs must run with loopback only"
  say "unshare -rn is not available: running on this machine's network (the log check still applies)"
fi

export NO_PROXY='*' no_proxy='*'
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy
work=$(mktemp -d)
export TMPDIR=$work # what a walkthrough writes under ${TMPDIR:-/tmp} goes with it
bg=""
cleanup() {
  if [ -n "$bg" ] && kill -0 "$bg" 2>/dev/null; then kill -INT "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

docs=(README.md docs/operations.md)
# extract: the walkthroughs into $work/NAME.1 and $work/NAME.2.
awk -v dir="$work" '
  /^<!-- walkthrough: [a-z0-9-]+ -->$/ { name = $3; block = 0; next }
  name != "" && /^```sh$/ { block++; inblock = 1; next }
  inblock && /^```$/ { inblock = 0; if (block == 2) name = ""; next }
  inblock { print > (dir "/" name "." block) }
' "${docs[@]}"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  mapfile -t names < <(sed -n 's/^<!-- walkthrough: \([a-z0-9-]*\) -->$/\1/p' "${docs[@]}")
fi
[ ${#names[@]} -gt 0 ] || die "no walkthrough in ${docs[*]}"

as_run() { sed "s|go run ./cmd/receiptd|$WALKTHROUGH_BIN|g" <<<"$1"; }

run_one() {
  local name=$1 line log=$work/$1.log api=""
  [ -s "$work/$name.1" ] && [ -s "$work/$name.2" ] || die "$name: want two sh blocks after its marker"
  [ "$(wc -l <"$work/$name.1")" -eq 1 ] || die "$name: terminal 1 is one command"
  say "$name: terminal 1: $(cat "$work/$name.1")"
  : >"$log"
  bash -c "$(as_run "$(cat "$work/$name.1")")" >"$log" 2>&1 &
  bg=$!
  for _ in $(seq 1 300); do
    api=$(sed -n 's|^receiptd demo: the daemon at \(http://[^,]*\),.*|\1|p' "$log")
    [ -n "$api" ] && break
    kill -0 "$bg" 2>/dev/null || { cat "$log"; die "$name: terminal 1 exited"; }
    sleep 0.1
  done
  [ -n "$api" ] || { cat "$log"; die "$name: no daemon address within 30s"; }
  [ "$api" = "http://127.0.0.1:7080" ] || die "$name: the daemon is at $api, not the 127.0.0.1:7080 the commands use"
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    say "$name: \$ $line"
    bash -c "$(as_run "$line")" >"$work/out" 2>&1 || { cat "$work/out"; die "$name: exit $? from: $line"; }
    head -c 400 "$work/out" | sed 's/^/    /'; echo
  done <"$work/$name.2"
  expect "$name" "$api" "$log"
  kill -INT "$bg"
  wait "$bg" || die "$name: terminal 1 did not stop cleanly on Ctrl-C (exit $?): $(tail -n 20 "$log")"
  bg=""
  if grep -nE 'api\.ebarimt\.mn|service\.itc\.gov\.mn|no such host|network is unreachable' "$log"; then
    die "$name: a request left 127.0.0.0/8 (the lines above)"
  fi
  say "$name: ok"
}

# expect NAME API LOG: what each walkthrough must have shown.
expect() {
  case $1 in
  fleet)
    grep -q "pushing this till's receiptd_ series to the head office" "$3" || die "fleet: the push did not log its start"
    ;;
  posapi)
    for _ in $(seq 1 400); do
      curl -s "$2/receiptd/status" | grep -q '"lastSendData":{"at":' && return 0
      sleep 0.1
    done
    die "posapi: no sendData of receiptd's own within 40s: $(curl -s "$2/receiptd/status")"
    ;;
  esac
}

for n in "${names[@]}"; do run_one "$n"; done
say "all ${#names[@]} walkthroughs ran as written"
