#!/usr/bin/env bash
# The status page (GET /) checked in a real headless Chromium.
#
#   .ci/statuspage.sh              build receiptd, run `receiptd demo`, post
#                                  receipts, cut the simulated tax service,
#                                  then load the page in Chromium
#   .ci/statuspage.sh -url URL     only load an already running page at URL
#                                  (no demo, no expectations on its numbers)
#
# Fails unless the page loads, shows the counts by state and the outage, and
# Chromium's log has no console message (a script, a CSP violation or an
# error would show there). The screenshot goes to
# ${ARTIFACTS:-/tmp}/statuspage.png, the DOM next to it. Installs Debian's
# chromium with apt-get when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

ARTIFACTS="${ARTIFACTS:-/tmp}"
CHROMIUM_TIMEOUT="${CHROMIUM_TIMEOUT:-90}"
mkdir -p "$ARTIFACTS"
work=$(mktemp -d)
demo_pid=""

cleanup() {
  if [ -n "$demo_pid" ] && kill -0 "$demo_pid" 2>/dev/null; then
    kill -TERM "$demo_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$demo_pid" 2>/dev/null || true
    wait "$demo_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf 'statuspage: %s\n' "$*"; }
die() {
  printf 'statuspage: FAIL: %s\n' "$*" >&2
  if [ -s "$work/demo.err" ]; then
    printf -- '--- receiptd demo log (last 40 lines) ---\n' >&2
    tail -n 40 "$work/demo.err" >&2
  fi
  exit 1
}

install_chromium() {
  command -v chromium >/dev/null 2>&1 && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  say "installing chromium (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y --no-install-recommends chromium >/dev/null ||
    { $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends chromium >/dev/null; }
  command -v chromium >/dev/null 2>&1 || die "chromium is still missing after apt-get install"
}

# chromium_run OUT_STDOUT OUT_STDERR ARGS... runs headless Chromium with a
# fresh profile, nothing in the background, and its log on stderr.
chromium_run() {
  local out=$1 err=$2
  shift 2
  local profile
  profile=$(mktemp -d "$work/profile.XXXXXX")
  timeout -k 5 "$CHROMIUM_TIMEOUT" chromium --headless --no-sandbox --disable-gpu --disable-quic \
    --no-first-run --disable-background-networking --disable-component-update --disable-sync \
    --no-proxy-server --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@" >"$out" 2>"$err" ||
    die "chromium failed (exit $?); its log: $err"
}

# page_text FILE prints the visible text of an HTML file on one line: tags
# dropped, the few entities the page uses decoded, spaces collapsed.
page_text() {
  tr '\n' ' ' <"$1" | sed -e 's/<style>.*<\/style>//' -e 's/<[^>]*>/ /g' \
    -e 's/&lt;/</g; s/&gt;/>/g; s/&#34;/"/g; s/&quot;/"/g; s/&nbsp;/ /g; s/&amp;/\&/g' | tr -s ' '
}

# check_page URL: load URL in Chromium, keep the DOM and a screenshot, and
# fail on any console message or a page that is not the status page.
check_page() {
  local url=$1 headers
  headers=$(curl -sS --noproxy '*' -o /dev/null -D - "$url") || die "GET $url failed"
  grep -qi '^content-type: text/html; charset=utf-8' <<<"$headers" || die "GET $url: not text/html; charset=utf-8: $headers"
  grep -qi '^cache-control: no-store' <<<"$headers" || die "GET $url: no Cache-Control: no-store"

  local shot="$ARTIFACTS/statuspage.png" dom="$ARTIFACTS/statuspage.html"
  rm -f "$shot"
  chromium_run "$dom" "$work/dom.log" --dump-dom "$url"
  chromium_run "$work/shot.out" "$work/shot.log" --screenshot="$shot" --window-size=1280,1400 "$url"
  [ -s "$shot" ] || die "no screenshot written to $shot"

  local console
  console=$(grep -hE 'CONSOLE|Uncaught' "$work/dom.log" "$work/shot.log" || true)
  [ -z "$console" ] || die "console messages in Chromium's log:"$'\n'"$console"
  ! grep -qi '<script' "$dom" || die "the page has a <script> element"
  page_text "$dom" >"$work/page.txt"
  grep -q 'Tax service' "$work/page.txt" || die "the DOM is not the status page: $(head -c 400 "$work/page.txt")"
  say "DOM saved to $dom"
}

# expect TEXT_REGEX WHAT: the page's text must match.
expect() {
  grep -qE -- "$1" "$work/page.txt" || die "the page does not show $2 (/$1/); its text: $(cat "$work/page.txt")"
}

# post_receipt N: post the sample receipt the demo printed (demo.go's: the
# totals add up exactly) with bill suffix N; prints the HTTP status code.
post_receipt() {
  sed "s/\"billIdSuffix\":\"[^\"]*\"/\"billIdSuffix\":\"$(printf %06d "$1")\"/" <<<"$sample" >"$work/receipt.json"
  curl -sS --noproxy '*' -o "$work/answer.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$work/receipt.json" "$api/rest/receipt"
}

# upstream_down: true when /receiptd/status reports the upstream down.
upstream_down() {
  curl -sS --noproxy '*' "$api/receiptd/status" 2>/dev/null |
    tr -d ' \n' | grep -q '"upstream":{"state":"down"'
}

# sent_count_is N: true when /receiptd/status counts N sent entries.
sent_count_is() {
  curl -sS --noproxy '*' "$api/receiptd/status" 2>/dev/null | tr -d ' \n' | grep -q "\"sent\":$1[,}]"
}

start_demo() {
  say "building receiptd"
  go build -o "$work/receiptd" ./cmd/receiptd
  "$work/receiptd" demo -listen 127.0.0.1:0 >"$work/demo.out" 2>"$work/demo.err" &
  demo_pid=$!
  for _ in $(seq 1 300); do
    api=$(sed -n 's|^ *status JSON *\(http://[^ ]*\)/receiptd/status.*|\1|p' "$work/demo.out")
    sim=$(sed -n 's|^ *sim faults *\(http://[^ ]*\)/sim/faults.*|\1|p' "$work/demo.out")
    sample=$(sed -n "s|^ *curl .* -d '\({.*}\)' http://[^ ]*/rest/receipt\$|\1|p" "$work/demo.out")
    [ -n "$api" ] && [ -n "$sim" ] && [ -n "$sample" ] && break
    kill -0 "$demo_pid" 2>/dev/null || die "receiptd demo exited: $(cat "$work/demo.out")"
    sleep 0.1
  done
  [ -n "$api" ] && [ -n "$sim" ] && [ -n "$sample" ] ||
    die "receiptd demo printed no URLs or no sample receipt within 30s: $(cat "$work/demo.out")"
  for _ in $(seq 1 100); do
    curl -sf --noproxy '*' -o /dev/null "$api/healthz" && break
    sleep 0.1
  done
  curl -sSf --noproxy '*' -o /dev/null "$api/healthz" || die "GET $api/healthz: no 200 within 10s"
  say "daemon at $api, simulator at $sim"
}

main() {
  local url=""
  case "${1:-}" in
  -url) url=${2:?-url needs a URL} ;;
  "") ;;
  *) echo "usage: $0 [-url URL]" >&2; exit 2 ;;
  esac
  install_chromium
  if [ -n "$url" ]; then
    check_page "$url"
    say "OK, screenshot: $ARTIFACTS/statuspage.png"
    return
  fi

  start_demo
  local sent=3 code i
  for i in $(seq 1 "$sent"); do
    code=$(post_receipt "$i") || die "receipt $i while online: no answer (curl exit $?)"
    case $code in
    200 | 202) ;; # 202: not answered within accept.wait on a slow machine; sent soon after
    *) die "receipt $i while online: HTTP $code, want 200: $(cat "$work/answer.json")" ;;
    esac
  done
  for _ in $(seq 1 300); do sent_count_is "$sent" && break; sleep 0.1; done
  sent_count_is "$sent" || die "/receiptd/status does not count $sent sent receipts within 30s: $(curl -sS --noproxy '*' "$api/receiptd/status")"
  say "posted $sent receipts, all sent"

  code=$(curl -sS --noproxy '*' -o "$work/faults.json" -w '%{http_code}' -X PUT \
    -H 'Content-Type: application/json' -d '{"down":true,"downFor":"300s"}' "$sim/sim/faults") || die "PUT $sim/sim/faults: no answer (curl exit $?)"
  [ "$code" = 200 ] || die "PUT $sim/sim/faults: HTTP $code: $(cat "$work/faults.json")"
  code=$(post_receipt 99) || die "receipt during the outage: no answer (curl exit $?)"
  [ "$code" = 202 ] || die "receipt during the outage: HTTP $code, want 202: $(cat "$work/answer.json")"
  say "tax service down; one more receipt answered 202"
  for _ in $(seq 1 200); do upstream_down && break; sleep 0.1; done
  upstream_down || die "/receiptd/status does not report the upstream down within 20s"

  check_page "$api/"
  expect 'Unreachable' "the outage"
  expect 'down for ' "how long the outage lasts"
  expect "(^| )sent $sent( |$)" "the $sent sent receipts in the counts by state"
  expect '(^| )[1-9][0-9]* waiting' "the receipt waiting to be sent"
  expect '(^| )queued [0-9]+ ' "the queued row of the counts"
  say "OK: the page shows the counts and the outage, no console messages"
  say "screenshot: $ARTIFACTS/statuspage.png"
}

main "$@"
