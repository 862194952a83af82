#!/usr/bin/env bash
# The alert rules end to end: a real Prometheus server scrapes a real
# receiptd (job "receiptd", as packaging/README.md says) whose tax service
# (receiptd sim) refused one receipt and is then down, with
# alerts.unsent_critical = "2s". Passes when Prometheus fires
# ReceiptdReceiptsRejected and ReceiptdUnsentCritical for that till, and
# nothing else (the till answers; the outage is younger than 15 minutes).
#
# Uses prometheus from PATH, else the one check.sh unpacked from Debian's
# package into ${PROMTOOL_DIR:-/tmp/receiptd-promtool}.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
say() { printf 'monitoring e2e: %s\n' "$*"; }
die() {
  printf 'monitoring e2e: FAIL: %s\n' "$*" >&2
  for f in "$work"/*.log; do [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}

prometheus=$(command -v prometheus || echo "${PROMTOOL_DIR:-/tmp/receiptd-promtool}/usr/bin/prometheus")
[ -x "$prometheus" ] || die "no prometheus binary (run packaging/monitoring/check.sh first: it unpacks Debian's)"

go build -o "$work/receiptd" ./cmd/receiptd
"$work/receiptd" sim -listen 127.0.0.1:0 -seed 5 >"$work/sim.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  sim=$(sed -n 's|^tax service simulator listening on \(http://[^ ]*\).*|\1|p' "$work/sim.log")
  [ -n "$sim" ] && break
  sleep 0.1
done
[ -n "$sim" ] || die "receiptd sim printed no address"

# start_daemon: run receiptd on the kept data dir and port; sets $api.
start_daemon() {
  cat >"$work/receiptd.toml" <<EOF
listen = "127.0.0.1:${port:-0}"
data_dir = "$work/data"
[upstream]
base_url = "$sim"
lookup_base_url = "$sim"
[alerts]
unsent_warn = "1s"
unsent_critical = "2s"
[log]
format = "json"
EOF
  "$work/receiptd" run -config "$work/receiptd.toml" >"$work/daemon.log" 2>&1 &
  daemon=$!
  pids+=("$daemon")
  api=""
  for _ in $(seq 1 300); do
    api=$(grep -o '"msg":"receiptd ready".*"url":"http://[^"]*"' "$work/daemon.log" | sed 's/.*"url":"\([^"]*\)"/\1/' || true)
    [ -n "$api" ] && break
    sleep 0.1
  done
  [ -n "$api" ] || die "receiptd run did not get ready"
  port=${api##*:}
}
post() {
  curl -sS --noproxy '*' -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$(sed "s/\"billIdSuffix\":\"[^\"]*\"/\"billIdSuffix\":\"$1\"/" "$work/sample.json")" "$api/rest/receipt"
}
faults() { curl -sSf --noproxy '*' -o /dev/null -X PUT -H 'Content-Type: application/json' -d "$1" "$sim/sim/faults"; }

start_daemon
# The simulator's sample receipt, as `receiptd demo` prints it.
cat >"$work/sample.json" <<'EOF'
{"branchNo":"001","totalAmount":12500.50,"totalVAT":1136.41,"totalCityTax":0,"districtCode":"0102","merchantTin":"37900846788","posNo":"POS-1","type":"B2C_RECEIPT","billIdSuffix":"000001","receipts":[{"totalAmount":12500.50,"taxType":"VAT_ABLE","merchantTin":"37900846788","totalVAT":1136.41,"totalCityTax":0,"items":[{"name":"Bread","barCode":"4900000000001","barCodeType":"GS1","classificationCode":"2349010","measureUnit":"pcs","qty":2,"unitPrice":6250.25,"totalVAT":1136.41,"totalCityTax":0,"totalAmount":12500.50}]}],"payments":[{"code":"CASH","status":"PAID","paidAmount":500.50},{"code":"PAYMENT_CARD","status":"PAID","paidAmount":12000}]}
EOF
faults '{"rejectNext":1,"rejectMessage":"not registered"}'
code=$(post 000001)
[ "$code" = 400 ] || die "the refused receipt: HTTP $code, want 400"
faults '{"down":true,"downFor":"300s"}'
code=$(post 000002)
[ "$code" = 202 ] || die "a receipt while the tax service is down: HTTP $code, want 202"
# The ageing level is checked at start and every 30s: restart once the
# queued receipt is past 2s, so the gauge says critical at once.
sleep 2.2
kill -TERM "$daemon"
wait "$daemon" 2>/dev/null || true
start_daemon
say "receiptd at $api: one receipt refused, one queued past alerts.unsent_critical"

cp packaging/monitoring/receiptd-rules.yml "$work/"
cat >"$work/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [receiptd-rules.yml]
scrape_configs:
  - job_name: receiptd
    static_configs: [{targets: ["${api#http://}"], labels: {shop: "e2e"}}]
EOF
"$prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address=127.0.0.1:0 >"$work/prometheus.log" 2>&1 &
pids+=($!)
prom=""
for _ in $(seq 1 100); do
  prom=$(grep -o 'msg="Listening on" address=[^ ]*' "$work/prometheus.log" | sed 's/.*address=//' || true)
  [ -n "$prom" ] && break
  sleep 0.1
done
[ -n "$prom" ] || die "prometheus did not say where it listens"

want="ReceiptdReceiptsRejected ReceiptdUnsentCritical"
got=""
for _ in $(seq 1 300); do
  curl -sS --noproxy '*' -G --data-urlencode 'query=ALERTS{alertstate="firing"}' \
    "http://$prom/api/v1/query" >"$work/firing.json" 2>/dev/null || true
  got=$(grep -o '"alertname":"[A-Za-z]*"' "$work/firing.json" | cut -d'"' -f4 | sort -u | tr '\n' ' ' | sed 's/ $//' || true)
  [ "$got" = "$want" ] && break
  sleep 0.1
done
[ "$got" = "$want" ] || die "firing alerts: got [$got], want [$want]: $(cat "$work/firing.json")"
curl -sS --noproxy '*' "http://$prom/api/v1/alerts" >"$work/alerts.json"
grep -q '"instance":"'"${api#http://}"'"' "$work/alerts.json" || die "the alerts do not name the till: $(cat "$work/alerts.json")"
grep -q '"summary":"1 entries refused by the tax service on '"${api#http://}"' (rejected)"' "$work/alerts.json" ||
  die "ReceiptdReceiptsRejected's summary: $(cat "$work/alerts.json")"
say "OK: Prometheus fires $want for the till, nothing else"
