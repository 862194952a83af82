#!/usr/bin/env bash
# Makes the upgrade fixtures: a data directory written by each landed
# release of receiptd, for upgrade_test.go. Each release is built from a
# temporary git worktree (removed again; nothing of it is kept), run
# against today's simulator (`receiptd sim`), and given the same story:
#   000001, 000002  sent (200)
#   000003          rejected by the tax service (400)
#   000004, 000005  accepted while the tax service is down (202): unsent
# then stopped with SIGTERM. Kept, gzipped: the database file and, from
# the releases that write one, the data directory's marker. The
# write-ahead log (271721b on) is applied to the database by a clean
# stop, so the database alone holds every receipt (the test checks all
# five).
#
# Run from anywhere inside the repository (it needs the history):
#   cmd/receiptd/testdata/upgrade/make.sh
set -euo pipefail
shopt -s inherit_errexit

releases=(a0959c8 d6a4b47 7558b84 271721b)
repo=$(git rev-parse --show-toplevel)
out=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
sim_pid=""
cleanup() {
	[[ -n $sim_pid ]] && kill "$sim_pid" 2>/dev/null || true
	for r in "${releases[@]}"; do
		git -C "$repo" worktree remove --force "$work/src-$r" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

body() {
	printf '{"branchNo":"001","totalAmount":12500.50,"totalVAT":1136.41,"totalCityTax":0,"districtCode":"0102","merchantTin":"37900846788","posNo":"POS-1","type":"B2C_RECEIPT","billIdSuffix":"%s","receipts":[{"totalAmount":12500.50,"taxType":"VAT_ABLE","merchantTin":"37900846788","totalVAT":1136.41,"totalCityTax":0,"items":[{"name":"Bread","barCode":"4900000000001","barCodeType":"GS1","classificationCode":"2349010","measureUnit":"pcs","qty":2,"unitPrice":6250.25,"totalVAT":1136.41,"totalCityTax":0,"totalAmount":12500.50}]}],"payments":[{"code":"CASH","status":"PAID","paidAmount":500.50},{"code":"PAYMENT_CARD","status":"PAID","paidAmount":12000}]}' "$1"
}

# post BILL WANT: posts the sample receipt and checks the status code.
post() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
		--data-binary "$(body "$1")" "http://127.0.0.1:$port/rest/receipt")
	[[ $code == "$2" ]] || { echo "make.sh: $rel: receipt $1 got $code, want $2" >&2; cat "$work/log-$rel" >&2; exit 1; }
}

wait_for() {
	for _ in $(seq 100); do
		curl -sf -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "make.sh: $1 never answered" >&2
	exit 1
}

(cd "$repo" && go build -o "$work/today" ./cmd/receiptd)
sim_port=$(free_port)
start_sim() {
	"$work/today" sim -listen "127.0.0.1:$sim_port" -seed 25 >/dev/null 2>&1 &
	sim_pid=$!
	wait_for "http://127.0.0.1:$sim_port/sim/faults"
}

for rel in "${releases[@]}"; do
	git -C "$repo" worktree add --quiet --detach "$work/src-$rel" "$rel"
	(cd "$work/src-$rel" && GOFLAGS=-buildvcs=false go build -o "$work/receiptd-$rel" ./cmd/receiptd)
	git -C "$repo" worktree remove --force "$work/src-$rel"

	start_sim
	port=$(free_port)
	data="$work/data-$rel"
	cat >"$work/$rel.toml" <<-TOML
		listen = "127.0.0.1:$port"
		data_dir = "$data"
		[accept]
		wait = "2s"
		[upstream]
		base_url = "http://127.0.0.1:$sim_port"
		lookup_base_url = "http://127.0.0.1:$sim_port"
		[sync]
		min_backoff = "100ms"
		max_backoff = "300ms"
	TOML
	"$work/receiptd-$rel" run -config "$work/$rel.toml" >"$work/log-$rel" 2>&1 &
	pid=$!
	wait_for "http://127.0.0.1:$port/healthz"
	post 000001 200
	post 000002 200
	curl -sf -X PUT -d '{"rejectNext":1}' "http://127.0.0.1:$sim_port/sim/faults" >/dev/null
	post 000003 400
	kill "$sim_pid"
	wait "$sim_pid" 2>/dev/null || true
	sim_pid=""
	post 000004 202
	post 000005 202
	kill -TERM "$pid"
	wait "$pid"

	gzip -9 -n -c "$data/receiptd.db" >"$out/$rel.db.gz"
	if [[ -f $data/receiptd.db.id ]]; then
		cp "$data/receiptd.db.id" "$out/$rel.db.id"
	fi
	echo "$rel: $(stat -c %s "$data/receiptd.db") bytes, gzipped $(stat -c %s "$out/$rel.db.gz"); data dir: $(ls "$data" | tr '\n' ' ')"
done
