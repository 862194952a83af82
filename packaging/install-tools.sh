#!/usr/bin/env bash
# Install the tools packaging/build.sh and packaging/check.sh need:
#   - wixl and msiinfo (Debian packages wixl and msitools) for the MSI,
#   - nfpm (a Go program) for the .deb and .rpm,
#   - file and rpm, for check.sh to inspect binaries and the .rpm.
# Idempotent: does nothing for a tool that is already there. Needs root for
# apt-get (CI runs as root). nfpm goes to $(go env GOPATH)/bin (or $GOBIN),
# never into receiptd's go.mod.
#
# NFPM_VERSION: v2.45.2 is the newest nfpm v2 whose dependencies all come
# from the Go module proxy (v2.46.0 and later need go.digitalxero.dev
# modules that the proxy does not serve).
set -euo pipefail

NFPM_VERSION=${NFPM_VERSION:-v2.45.2}

need_apt=()
command -v wixl >/dev/null 2>&1 || need_apt+=(wixl)
command -v msiinfo >/dev/null 2>&1 || need_apt+=(msitools)
command -v file >/dev/null 2>&1 || need_apt+=(file)
command -v rpm >/dev/null 2>&1 || need_apt+=(rpm)
if ((${#need_apt[@]})); then
	echo "install-tools: apt-get install ${need_apt[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

gobin=$(go env GOBIN)
[[ -n $gobin ]] || gobin="$(go env GOPATH)/bin"
if [[ -x $gobin/nfpm ]] && "$gobin/nfpm" --version 2>/dev/null | grep -q "ModuleSum"; then
	have=$(go version -m "$gobin/nfpm" | awk '$1 == "mod" {print $3}')
	if [[ $have == "$NFPM_VERSION" ]]; then
		echo "install-tools: nfpm $have already in $gobin"
		exit 0
	fi
fi
echo "install-tools: go install nfpm $NFPM_VERSION into $gobin"
# Outside the repository, so receiptd's go.mod is not touched.
(cd / && GOFLAGS='' go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION")
"$gobin/nfpm" --version >/dev/null
