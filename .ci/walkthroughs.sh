#!/usr/bin/env bash
# Runs the walkthroughs of README.md and docs/operations.md as written, with the real binary, where
# nothing but loopback exists. A walkthrough is a line
# "<!-- walkthrough: NAME -->" followed by two ```sh blocks: the first is
# terminal 1 (one command that runs until Ctrl-C: started in the
# background, and waited for until it prints its daemon's address), the
# second terminal 2 (each line run in turn; each must exit 0). A line
# "<!-- walkthrough: NAME, with a server -->" is followed by three: the
# first a server started before terminal 1 (one command, run until
# Ctrl-C, waited for until it prints its first line).
# `go run ./cmd/receiptd` runs the binary built once here.
#
# Checks, besides each command's exit status:
#   - the network: under `unshare -rn` (a network namespace with only lo),
#     and no log line names the live hosts or a failed name lookup: a
#     lookup that would leave 127.0.0.0/8 fails the run;
#   - what each walkthrough's text says it shows (expect, below): the
#     answers of its commands, found by what the command line holds (so
#     a reordered block still checks the same things), the status JSON
#     and page, and the demo's log, waited for where the text says it
#     comes later.
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
server=""
cleanup() {
  if [ -n "$bg" ] && kill -0 "$bg" 2>/dev/null; then kill -INT "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true; fi
  if [ -n "$server" ]; then kill -INT -- -"$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

docs=(README.md docs/operations.md)
# extract: the walkthroughs into $work/NAME.1 and $work/NAME.2.
awk -v dir="$work" '
  /^<!-- walkthrough: [a-z0-9-]+ -->$/ { name = $3; block = 0; next }
  /^<!-- walkthrough: [a-z0-9-]+, with a server -->$/ { name = substr($3, 1, length($3) - 1); block = -1; next }
  name != "" && /^```sh$/ { block++; inblock = 1; next }
  inblock && /^```$/ { inblock = 0; if (block == 2) name = ""; next }
  inblock { print > (dir "/" name "." block) }
' "${docs[@]}"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  mapfile -t names < <(sed -n 's/^<!-- walkthrough: \([a-z0-9-]*\)\(, with a server\)\{0,1\} -->$/\1/p' "${docs[@]}")
fi
[ ${#names[@]} -gt 0 ] || die "no walkthrough in ${docs[*]}"

as_run() { sed "s|go run ./cmd/receiptd|$WALKTHROUGH_BIN|g" <<<"$1"; }

run_one() {
  local name=$1 line log=$work/$1.log api=""
  [ -s "$work/$name.1" ] && [ -s "$work/$name.2" ] || die "$name: want two sh blocks after its marker"
  [ "$(wc -l <"$work/$name.1")" -eq 1 ] || die "$name: terminal 1 is one command"
  if [ -s "$work/$name.0" ]; then
    [ "$(wc -l <"$work/$name.0")" -eq 1 ] || die "$name: the server is one command"
    say "$name: server: $(cat "$work/$name.0")"
    : >"$work/$name.server.log"
    # Its own session, so that Ctrl-C reaches the program `go run` starts.
    setsid bash -c "$(as_run "$(cat "$work/$name.0")")" >"$work/$name.server.log" 2>&1 &
    server=$!
    for _ in $(seq 1 600); do
      [ -s "$work/$name.server.log" ] && break
      kill -0 "$server" 2>/dev/null || { cat "$work/$name.server.log"; die "$name: the server exited"; }
      sleep 0.1
    done
    [ -s "$work/$name.server.log" ] || die "$name: the server printed nothing within 60s"
    head -n 1 "$work/$name.server.log" | sed 's/^/    /'
  fi
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
  local i=0
  while IFS= read -r line; do
    i=$((i + 1))
    [ -n "$line" ] || continue
    say "$name: \$ $line"
    bash -c "$(as_run "$line")" >"$work/$name.out.$i" 2>&1 || { cat "$work/$name.out.$i"; die "$name: exit $? from: $line"; }
    head -c 400 "$work/$name.out.$i" | sed 's/^/    /'; echo
  done <"$work/$name.2"
  expect "$name" "$api" "$log"
  kill -INT "$bg"
  wait "$bg" || die "$name: terminal 1 did not stop cleanly on Ctrl-C (exit $?): $(tail -n 20 "$log")"
  bg=""
  if [ -n "$server" ]; then
    kill -INT -- -"$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
  fi
  if grep -nE 'api\.ebarimt\.mn|service\.itc\.gov\.mn|no such host|network is unreachable' "$log"; then
    die "$name: a request left 127.0.0.0/8 (the lines above)"
  fi
  say "$name: ok"
}

# out NAME TEXT [K]: the file holding what terminal 2's K-th command
# (default the first) whose line contains TEXT printed.
out() {
  local k=0 i=0 line
  while IFS= read -r line; do
    i=$((i + 1))
    [[ "$line" == *"$2"* ]] || continue
    k=$((k + 1))
    [ "$k" -eq "${3:-1}" ] && { echo "$work/$1.out.$i"; return 0; }
  done <"$work/$1.2"
  die "$1: no command ${3:-1} with \"$2\" in terminal 2: the walkthrough's text and its check disagree"
}

# want FILE REGEX WHAT: FILE matches REGEX (grep -E), or the walkthrough
# did not show WHAT. lacks: the opposite.
want() { grep -qE -- "$2" "$1" || { head -c 3000 "$1" | sed 's/^/    /'; die "$3"; }; }
lacks() { ! grep -qE -- "$2" "$1" || { head -c 3000 "$1" | sed 's/^/    /'; die "$3"; }; }

# eventually SECONDS WHAT SHOW CMD...: CMD succeeds within SECONDS, or
# the walkthrough did not show WHAT; SHOW is the file CMD last read.
eventually() {
  local secs=$1 what=$2 show=$3 i
  shift 3
  for i in $(seq 1 $((secs * 2))); do
    "$@" && return 0
    sleep 0.5
  done
  [ -f "$show" ] && head -c 3000 "$show" | sed 's/^/    /'
  die "$what (not within ${secs}s)"
}

# status_has API REGEX: /receiptd/status matches REGEX now.
status_has() { curl -s "$1/receiptd/status" >"$work/status.json" && grep -qE -- "$2" "$work/status.json"; }
# attention_has API ID REGEX: the status page's "Needs attention" item ID
# matches REGEX now.
attention_has() {
  curl -s "$1/" >"$work/page.html" &&
    sed -n "/<article class=\"item [a-z]*\" id=\"attention-$2\">/,/<\/article>/p" "$work/page.html" | grep -qE -- "$3"
}

# expect NAME API LOG: what each walkthrough's text says it shows.
expect() {
  case $1 in
  demo) expect_demo "$2" "$3" ;;
  fleet)
    grep -q "pushing this till's receiptd_ series to the head office" "$3" || die "fleet: the push did not log its start"
    # Without a head office the samples wait on disk, not accepted yet:
    # the JSON of /receiptd/status, which the page's "Head office" reads.
    eventually 30 "fleet: /receiptd/status does not say samples wait, not accepted yet" "$work/status.json" \
      status_has "$2" '"fleet":\{"enabled":true,"lastSuccess":null,"bufferedSamples":[1-9]'
    ;;
  posapi)
    # Its sendData failing and its clock 5 minutes behind, both at once
    # (PUT /sim/faults changes only what it names), each under "Needs
    # attention" and in the status's alert.
    eventually 60 "posapi: /receiptd/status does not show a failed sendData, a 5 min skew and an alert" "$work/status.json" \
      status_has "$2" '"alert":"(warn|critical)".*"clockSkewSeconds":-[23][0-9][0-9],"lastSendData":\{"at":"[^"]*","ok":false'
    attention_has "$2" posapi-lotteries 'receiptd asked PosAPI to send its data at [^<]* and it failed' ||
      die "posapi: the failed sendData is not under Needs attention: $(grep -o 'id="attention-[a-z-]*"' "$work/page.html" | tr '\n' ' ')"
    attention_has "$2" clock "clock is about 5 min ahead of" ||
      die "posapi: the skewed clock is not under Needs attention: $(grep -o 'id="attention-[a-z-]*"' "$work/page.html" | tr '\n' ' ')"
    ;;
  release)
    # The config pushed is applied; 1.1.0 installed and answering; the
    # release that exits at start rolled back by it and halted.
    want "$(out release /receiptd/update 2)" '"version":"1.1.0"' "release: 1.1.0 does not answer"
    want "$(out release /receiptd/update 2)" '"state":"rolled_back","message":"rolled back: it stopped at start' \
      "release: the release that exits at start was not rolled back"
    want "$(out release /tills)" '"config":\{("hash":"[0-9a-f]+",)?"status":"APPLIED"' "release: the config pushed was not applied"
    want "$(out release /tills)" '"package":\{"status":"INSTALL_FAILED","version":"1.1.0"' \
      "release: the head office does not see 1.1.0 running and the bad release failed"
    ;;
  operator)
    want "$(out operator /rest/receipt)" '"status":"SUCCESS"' "operator: the receipt was not issued at once"
    want "$(out operator ' status ')" '0 waiting, 0 need a person, 1 sent' "operator: status does not count the receipt sent"
    want "$(out operator ' entries ')" 'Q000000000001 +receipt +sent ' "operator: entries does not list the receipt sent"
    want "$(out operator ' export ')" '^\{"queueId":"Q000000000001","kind":"receipt","state":"sent"' "operator: export does not write the receipt"
    want "$(out operator ' backup ')" '^backup written and checked: ' "operator: backup did not write its file"
    [ -s "$work/receiptd-walkthrough.db" ] || die "operator: no backup file at \${TMPDIR:-/tmp}/receiptd-walkthrough.db"
    want "$(out operator 'config check')" '^ok: config.example.toml$' "operator: config check did not say ok"
    ;;
  esac
}

# expect_demo API LOG: the repeat is a replay, the second bill is
# rejected with the tax service's message, and the receipt the outage
# queued is sent once the simulator is back.
expect_demo() {
  local first replay bill2
  first=$(out demo receipt.json 1) replay=$(out demo receipt.json 2) bill2=$(out demo receipt-2.json)
  want "$first" '^HTTP/1\.1 200 ' "demo: the first receipt was not answered 200"
  want "$first" '"status":"SUCCESS"' "demo: the first answer carries no e-barimt"
  lacks "$first" '^Idempotent-Replayed:' "demo: the first receipt was answered as a replay"
  want "$replay" '^HTTP/1\.1 200 ' "demo: the repeat was not answered 200"
  want "$replay" '^Idempotent-Replayed: true' "demo: the repeat was not marked Idempotent-Replayed: true"
  want "$(out demo /sim/faults)" '"rejectNext":1,"rejectMessage":"merchantTin: not registered"' \
    "demo: the simulator did not take the rejection"
  want "$bill2" '^HTTP/1\.1 400 ' "demo: the second bill was not refused"
  want "$bill2" 'merchantTin: not registered' "demo: the refusal does not carry the tax service's message"
  want "$(out demo ' entries ')" 'receipt +rejected .*merchantTin: not registered' \
    "demo: entries does not list the second bill rejected with its message"
  want "$(out demo /receiptd/status)" '"rejected":1' "demo: /receiptd/status does not count the rejection"
  local outage after
  outage=$(sed -n 's/.* -outage \([0-9]*\)s.*/\1/p' "$work/demo.1")
  after=$(sed -n 's/.* -outage-after \([0-9]*\)s.*/\1/p' "$work/demo.1")
  [ -n "$outage" ] || die "demo: terminal 1 has no -outage Ns"
  eventually $((${after:-15} + outage + 30)) "demo: the receipt queued during the outage was not logged sent" "$2" \
    grep -q 'recovered: the receipt queued during the outage was sent' "$2"
  grep -qE 'receipt posted while the tax service is down.*"httpStatus": 202' "$2" ||
    die "demo: the receipt posted during the outage was not answered 202: $(grep -E 'outage' "$2")"
}

for n in "${names[@]}"; do run_one "$n"; done
say "all ${#names[@]} walkthroughs ran as written"
