#!/usr/bin/env bash
# "test && ok || fail" is safe here: ok, want and check_binary always succeed.
# shellcheck disable=SC2015
# Inspect what packaging/build.sh made and fail loudly when something
# expected is missing: the four binaries, a .deb and an .rpm per Linux
# architecture (dpkg-deb -I/-c, rpm -qp), an MSI per Windows architecture
# (msiinfo tables/export/suminfo, msiextract).
#
# Environment:
#   DIST           directory to inspect (default: <repo>/dist)
#   TARGETS        the GOOS/GOARCH list build.sh was given (default: all four)
#   VERSION        when set, the version every package must carry
#   CHECK_INSTALL  1: also install the host's .deb with dpkg, check the
#                  user, directories and files, then purge it. Changes this
#                  machine (adds the receiptd user): for throwaway machines.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIST=${DIST:-$root/dist}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 windows/amd64 windows/386}
unit_src=$root/packaging/systemd/receiptd.service

failures=0
fail() {
	echo "check.sh: FAIL: $*" >&2
	failures=$((failures + 1))
}
ok() { echo "check.sh: ok: $*"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# want TEXT PATTERN WHAT: grep -E PATTERN in TEXT, or fail naming WHAT.
want() {
	if grep -Eq -- "$2" <<<"$1"; then ok "$3"; else fail "$3 (no match for /$2/)"; fi
}

# one_file GLOB: the single file matching GLOB in $DIST; otherwise it
# prints why and returns 1. It runs in $(...), a subshell, so the caller
# records the failure: one_file ... || { fail "..."; return 0; }.
one_file() {
	local matches=()
	shopt -s nullglob
	# shellcheck disable=SC2206 # $1 is a glob on purpose
	matches=("$DIST"/$1)
	shopt -u nullglob
	if ((${#matches[@]} != 1)); then
		echo "want exactly one $1 in $DIST, found ${#matches[@]}"
		return 1
	fi
	echo "${matches[0]}"
}

check_binary() { # file, pattern for `file`
	local desc
	desc=$(file -b "$1")
	want "$desc" "$2" "$(basename "$1") is $2"
}

check_unit() { # unit file text
	local line
	for line in 'Type=simple' 'ExecStart=/usr/bin/receiptd run -config /etc/receiptd/config.toml' \
		'User=receiptd' 'Group=receiptd' 'Restart=always' 'RestartSec=2' 'StateDirectory=receiptd' \
		'ProtectSystem=strict' 'ReadWritePaths=/var/lib/receiptd /var/log/receiptd' \
		'NoNewPrivileges=yes' 'PrivateTmp=yes' 'ProtectHome=yes' 'TimeoutStopSec=[0-9]+' \
		'WantedBy=multi-user.target'; do
		want "$1" "^$line\$" "unit has $line"
	done
}

check_deb() { # goarch
	local goarch=$1 deb info list elf
	deb=$(one_file "receiptd_*_${goarch}.deb") || { fail "${deb}"; return 0; }
	info=$(dpkg-deb -I "$deb") || { fail "dpkg-deb -I $deb"; return 0; }
	list=$(dpkg-deb -c "$deb") || { fail "dpkg-deb -c $deb"; return 0; }
	want "$info" "^ Package: receiptd$" "deb $goarch: Package"
	want "$info" "^ Architecture: ${goarch}$" "deb $goarch: Architecture"
	# nfpm writes a pre-release 1.2.3-rc1 as 1.2.3~rc1: compare x.y.z only.
	[[ -z ${VERSION:-} ]] || want "$info" "^ Version: ${VERSION%%[-+~]*}([-+~]|\$)" "deb $goarch: Version $VERSION"
	for script in preinst postinst prerm postrm conffiles; do
		want "$info" " ${script}( |$)" "deb $goarch: control has $script"
	done
	want "$(dpkg-deb -I "$deb" conffiles)" "^/etc/receiptd/config.toml$" "deb $goarch: config.toml is a conffile"
	want "$list" "^-rwxr-xr-x root/root .* \./usr/bin/receiptd$" "deb $goarch: /usr/bin/receiptd 0755"
	want "$list" "^-rw-r----- root/receiptd .* \./etc/receiptd/config.toml$" "deb $goarch: config.toml 0640 root:receiptd"
	want "$list" "^drwxr-x--- root/receiptd .* \./etc/receiptd/$" "deb $goarch: /etc/receiptd 0750"
	want "$list" " \./lib/systemd/system/receiptd.service$" "deb $goarch: systemd unit"
	want "$list" " \./usr/share/doc/receiptd/README.md$" "deb $goarch: README"
	mkdir -p "$tmp/deb-$goarch"
	dpkg-deb -x "$deb" "$tmp/deb-$goarch"
	check_unit "$(cat "$tmp/deb-$goarch/lib/systemd/system/receiptd.service")"
	cmp -s "$tmp/deb-$goarch/etc/receiptd/config.toml" "$root/config.example.toml" ||
		fail "deb $goarch: config.toml is not config.example.toml"
	case $goarch in
	amd64) elf='ELF 64-bit LSB .*x86-64.*statically linked' ;;
	arm64) elf='ELF 64-bit LSB .*ARM aarch64.*statically linked' ;;
	esac
	check_binary "$tmp/deb-$goarch/usr/bin/receiptd" "$elf"
	if [[ $(dpkg --print-architecture) == "$goarch" && -n ${VERSION:-} ]]; then
		want "$("$tmp/deb-$goarch/usr/bin/receiptd" version 2>&1)" "$VERSION" "deb $goarch: receiptd version prints $VERSION"
	fi
}

check_rpm() { # goarch
	local goarch=$1 rarch rpmf files conf
	case $goarch in amd64) rarch=x86_64 ;; arm64) rarch=aarch64 ;; esac
	rpmf=$(one_file "receiptd-*.${rarch}.rpm") || { fail "${rpmf}"; return 0; }
	if [[ $(head -c 4 "$rpmf" | od -An -tx1 | tr -d ' \n') != edabeedb ]]; then
		fail "rpm $goarch: $rpmf is not an RPM file"
		return 0
	fi
	if ! command -v rpm >/dev/null 2>&1; then
		fail "rpm $goarch: the rpm tool is missing (packaging/install-tools.sh installs it)"
		return 0
	fi
	files=$(rpm -qp --nosignature --qf '[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpmf" 2>/dev/null)
	want "$(rpm -qp --nosignature --qf '%{NAME} %{ARCH}' "$rpmf" 2>/dev/null)" "^receiptd ${rarch}$" "rpm $goarch: name and arch"
	[[ -z ${VERSION:-} ]] || want "$(rpm -qp --nosignature --qf '%{VERSION}' "$rpmf" 2>/dev/null)" "^${VERSION%%[-+~]*}([-+~]|\$)" "rpm $goarch: version"
	want "$files" "^-rwxr-xr-x root:root +/usr/bin/receiptd$" "rpm $goarch: /usr/bin/receiptd 0755"
	want "$files" "^-rw-r----- root:receiptd cn /etc/receiptd/config.toml$" "rpm $goarch: config.toml %config(noreplace) 0640"
	want "$files" " /usr/lib/systemd/system/receiptd.service$" "rpm $goarch: systemd unit"
	conf=$(rpm -qp --nosignature --scripts "$rpmf" 2>/dev/null)
	for s in preinstall postinstall preuninstall postuninstall; do
		want "$conf" "^${s} scriptlet" "rpm $goarch: $s scriptlet"
	done
}

# msi_export MSI TABLE: the table as tab-separated lines, without the CRs
# msiinfo writes.
msi_export() { msiinfo export "$1" "$2" | tr -d '\r'; }

check_msi() { # goarch
	local goarch=$1 arch msi tables seq ri ii comp template pe
	case $goarch in
	amd64) arch=x64 template='^Template: x64;1033' pe='PE32\+ executable.*x86-64' ;;
	386) arch=x86 template='^Template: Intel;1033' pe='PE32 executable.*Intel 80386' ;;
	esac
	msi=$(one_file "receiptd-*-${arch}.msi") || { fail "${msi}"; return 0; }
	tables=$(msiinfo tables "$msi") || { fail "msiinfo tables $msi"; return 0; }
	for t in File Component ServiceInstall ServiceControl CustomAction InstallExecuteSequence Upgrade Registry CreateFolder; do
		want "$tables" "^${t}$" "msi $arch: table $t"
	done
	want "$(msiinfo suminfo "$msi")" "$template" "msi $arch: platform"
	want "$(msi_export "$msi" File)" $'^ReceiptdExeFile\tReceiptdExe\treceiptd.exe\t' "msi $arch: receiptd.exe"
	want "$(msi_export "$msi" File)" $'\tconfig.example.toml\t' "msi $arch: config.example.toml"
	want "$(msi_export "$msi" ServiceInstall)" $'\treceiptd\t[^\t]*\t16\t2\t1\t.*\trun -config "\\[APPDATADIR\\]config.toml"\t' \
		"msi $arch: service receiptd, own process, automatic, run -config"
	want "$(msi_export "$msi" ServiceControl)" $'\treceiptd\t163\t' "msi $arch: service started on install, stopped and removed on uninstall"
	want "$(msi_export "$msi" CustomAction)" 'start= delayed-auto' "msi $arch: delayed auto-start"
	want "$(msi_export "$msi" CustomAction)" 'failure receiptd .*actions= restart/' "msi $arch: restart on failure"
	want "$(msi_export "$msi" CustomAction)" 'if not exist "\[APPDATADIR\]config.toml" copy' "msi $arch: config.toml copied only when missing"
	want "$(msi_export "$msi" Upgrade)" '6F1B7A52-3C0E-4D8B-9E0A-2B6F3C1D7E41' "msi $arch: upgrade code"
	want "$(msi_export "$msi" Registry)" 'EventLog\\Application\\receiptd' "msi $arch: event log source"
	seq=$(msi_export "$msi" InstallExecuteSequence)
	ri=$(awk -F'\t' '$1 == "RemoveExistingProducts" {print $3}' <<<"$seq")
	ii=$(awk -F'\t' '$1 == "InstallInitialize" {print $3}' <<<"$seq")
	if [[ -n $ri && -n $ii ]] && ((ri < ii)); then ok "msi $arch: old version removed before install"; else
		fail "msi $arch: RemoveExistingProducts ($ri) not before InstallInitialize ($ii)"; fi
	comp=$(msi_export "$msi" Component | awk -F'\t' '$1 == "ReceiptdExe" {print $4}')
	if [[ $arch == x64 ]]; then
		[[ $comp == 256 ]] && ok "msi $arch: 64-bit components" || fail "msi $arch: component attributes $comp, want 256"
	else
		[[ $comp == 0 ]] && ok "msi $arch: 32-bit components" || fail "msi $arch: component attributes $comp, want 0"
	fi
	if [[ -n ${VERSION:-} ]]; then
		want "$(msi_export "$msi" Property)" $'^ProductVersion\t[0-9]+\\.[0-9]+\\.[0-9]+' "msi $arch: ProductVersion"
	fi
	mkdir -p "$tmp/msi-$arch"
	(cd "$tmp/msi-$arch" && msiextract "$(realpath "$msi")" >/dev/null) || fail "msi $arch: msiextract"
	local exe
	exe=$(find "$tmp/msi-$arch" -name receiptd.exe | head -1)
	[[ -n $exe ]] && check_binary "$exe" "$pe" || fail "msi $arch: no receiptd.exe inside"
}

check_install() { # install the host's deb and purge it again
	local goarch deb
	goarch=$(dpkg --print-architecture)
	deb=$(one_file "receiptd_*_${goarch}.deb") || { fail "${deb}"; return 0; }
	dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i $deb"; return 0; }
	ok "dpkg -i $(basename "$deb")"
	if [[ ! -d /run/systemd/system ]]; then
		want "$(cat "$tmp/dpkg.log")" "no service was (installed or )?started" "dpkg -i says no service was started"
	fi
	getent passwd receiptd >/dev/null && ok "user receiptd exists" || fail "no user receiptd"
	want "$(stat -c '%U:%G %a' /var/lib/receiptd)" '^receiptd:receiptd 750$' "/var/lib/receiptd receiptd:receiptd 0750"
	want "$(stat -c '%U:%G %a' /etc/receiptd/config.toml)" '^root:receiptd 640$' "config.toml root:receiptd 0640"
	if command -v systemd-analyze >/dev/null 2>&1; then
		systemd-analyze verify --man=no /lib/systemd/system/receiptd.service >"$tmp/verify.log" 2>&1 &&
			ok "systemd-analyze verify receiptd.service" ||
			{ cat "$tmp/verify.log" >&2; fail "systemd-analyze verify receiptd.service"; }
	fi
	# An upgrade (here: the same package again) keeps an edited config.
	echo '# edited by check.sh' >>/etc/receiptd/config.toml
	dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i (again) $deb"; }
	want "$(tail -1 /etc/receiptd/config.toml)" '^# edited by check.sh$' "reinstall kept the edited config"
	dpkg --purge receiptd >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg --purge receiptd"; return 0; }
	[[ ! -e /etc/receiptd/config.toml ]] && ok "purge removed the config" || fail "purge left /etc/receiptd/config.toml"
	[[ -d /var/lib/receiptd ]] && ok "purge kept /var/lib/receiptd" || fail "purge removed /var/lib/receiptd"
	want "$(cat "$tmp/dpkg.log")" "Kept: the database /var/lib/receiptd .* and the system user receiptd" "purge says what it keeps"
}

[[ -d $DIST ]] || { echo "check.sh: FAIL: $DIST does not exist: run packaging/build.sh" >&2; exit 1; }
for target in $TARGETS; do
	goos=${target%/*} goarch=${target#*/}
	case $goos in
	linux)
		check_binary "$DIST/receiptd_linux_$goarch" "ELF 64-bit.*statically linked"
		check_deb "$goarch"
		check_rpm "$goarch"
		;;
	windows)
		check_binary "$DIST/receiptd_windows_$goarch.exe" "PE32"
		check_msi "$goarch"
		;;
	esac
done
check_unit "$(cat "$unit_src")"
[[ ${CHECK_INSTALL:-0} == 1 ]] && check_install

if ((failures)); then
	echo "check.sh: $failures check(s) FAILED" >&2
	exit 1
fi
echo "check.sh: all checks passed"
