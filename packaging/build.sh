#!/usr/bin/env bash
# Build receiptd for linux/amd64, linux/arm64, windows/amd64 and windows/386
# into dist/, then a .deb and an .rpm for each Linux architecture and an
# MSI for each Windows architecture. Installs nothing: run
# packaging/install-tools.sh first (wixl, msitools, nfpm).
#
# Environment:
#   VERSION           version to stamp (-X main.version) and package; default
#                     from "git describe --tags" (v1.2.3 -> 1.2.3), else
#                     0.0.0-dev+g<commit>
#   DIST              output directory (default: <repo>/dist)
#   RECEIPTD_BIN_DIR  directory of the main package to build (default:
#                     <repo>/cmd/receiptd); it may be another module, e.g.
#                     a stand-in for trying the packaging
#   TARGETS           space-separated GOOS/GOARCH subset (default: all four)
#   NFPM, WIXL        tool paths (default: from PATH, nfpm also from
#                     $(go env GOPATH)/bin)
#
# Outputs (in $DIST):
#   receiptd_<goos>_<goarch>[.exe]     the binaries
#   receiptd_<version>-1_<arch>.deb, receiptd-<version>-1.<arch>.rpm
#   receiptd-<version>-<x64|x86>.msi
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

die() {
	echo "build.sh: $*" >&2
	exit 1
}

default_version() {
	local v
	if v=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
		echo "${v#v}"
	elif v=$(git rev-parse --short=12 HEAD 2>/dev/null); then
		echo "0.0.0-dev+g$v"
	else
		echo "0.0.0-dev"
	fi
}

# msi_version keeps the numeric x.y.z an MSI ProductVersion must be
# (major, minor <= 255, build <= 65535).
msi_version() {
	local v=$1 major minor patch
	if [[ $v =~ ^([0-9]+)\.([0-9]+)\.([0-9]+) ]]; then
		major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]} patch=${BASH_REMATCH[3]}
		if ((10#$major <= 255 && 10#$minor <= 255 && 10#$patch <= 65535)); then
			echo "$((10#$major)).$((10#$minor)).$((10#$patch))"
			return
		fi
	fi
	die "version $v cannot be an MSI version (want x.y.z, x,y <= 255, z <= 65535)"
}

VERSION=${VERSION:-$(default_version)}
[[ $VERSION =~ ^[0-9] ]] || die "VERSION $VERSION must start with a digit (deb, rpm and MSI need it)"
DIST=${DIST:-$root/dist}
RECEIPTD_BIN_DIR=${RECEIPTD_BIN_DIR:-$root/cmd/receiptd}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 windows/amd64 windows/386}

find_tool() { # name, override
	if [[ -n $2 ]]; then
		echo "$2"
	elif command -v "$1" >/dev/null 2>&1; then
		command -v "$1"
	elif [[ -x "$(go env GOPATH)/bin/$1" ]]; then
		echo "$(go env GOPATH)/bin/$1"
	else
		die "$1 not found: run packaging/install-tools.sh"
	fi
}

mkdir -p "$DIST"
# Packages of an earlier build (another VERSION) would be mistaken for this
# one's by check.sh: start from no output of ours.
rm -f "$DIST"/receiptd_* "$DIST"/receiptd-*
# nfpm and wixl read paths relative to the repository root; keep $DIST
# absolute for the binaries and relative for wixl (which wants relative
# source paths).
DIST=$(cd "$DIST" && pwd)
rel_dist=$(realpath --relative-to="$root" "$DIST")

build_binary() { # goos goarch -> prints the output path
	local goos=$1 goarch=$2 ext="" out
	[[ $goos == windows ]] && ext=.exe
	out="$DIST/receiptd_${goos}_${goarch}${ext}"
	echo "build.sh: go build $goos/$goarch -> $out" >&2
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch \
		go build -C "$RECEIPTD_BIN_DIR" -trimpath \
		-ldflags "-s -w -X main.version=$VERSION" -o "$out" . ||
		die "go build $goos/$goarch of $RECEIPTD_BIN_DIR failed"
	echo "$out"
}

build_linux_packages() { # goarch binary
	local goarch=$1 bin=$2 nfpm format
	nfpm=$(find_tool nfpm "${NFPM:-}")
	for format in deb rpm; do
		echo "build.sh: nfpm $format $goarch" >&2
		GOARCH=$goarch VERSION=$VERSION RECEIPTD_BIN=$bin \
			"$nfpm" package --config packaging/nfpm.yaml --packager "$format" --target "$DIST/" >&2
	done
}

build_msi() { # goarch binary
	local goarch=$1 bin=$2 wixl arch win64 pfdir sysdir out msiver
	wixl=$(find_tool wixl "${WIXL:-}")
	# An assignment of its own: msi_version's die inside wixl's arguments
	# would be lost, and wixl would run with an empty version.
	msiver=$(msi_version "$VERSION")
	case $goarch in
	amd64) arch=x64 win64=yes pfdir=ProgramFiles64Folder sysdir=System64Folder ;;
	386) arch=x86 win64=no pfdir=ProgramFilesFolder sysdir=SystemFolder ;;
	*) die "no MSI for windows/$goarch" ;;
	esac
	out="$DIST/receiptd-$VERSION-$arch.msi"
	echo "build.sh: wixl $arch -> $out" >&2
	"$wixl" --arch "$arch" \
		-D "Version=$msiver" \
		-D "Exe=$rel_dist/$(basename "$bin")" \
		-D "Config=config.example.toml" \
		-D "Readme=packaging/README.md" \
		-D "Win64=$win64" -D "ProgramFilesDir=$pfdir" -D "SystemDir=$sysdir" \
		-o "$out" packaging/windows/receiptd.wxs >&2
}

echo "build.sh: receiptd $VERSION from $RECEIPTD_BIN_DIR into $DIST" >&2
for target in $TARGETS; do
	goos=${target%/*} goarch=${target#*/}
	bin=$(build_binary "$goos" "$goarch")
	case $goos in
	linux) build_linux_packages "$goarch" "$bin" ;;
	windows) build_msi "$goarch" "$bin" ;;
	*) die "unsupported target $target" ;;
	esac
done
echo "build.sh: done" >&2
ls -l "$DIST" >&2
