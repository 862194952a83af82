#!/bin/sh
# receiptd postinstall: data and log directories, then systemd.
# deb: postinst configure <old-version>; rpm: %post $1 = 1 (install) or 2
# (upgrade). Without systemd (a container, a chroot) only the directories
# are made, nothing fails, and the script says that no service was started.
set -e

# Tests only (packaging/scripts/scripts_test.go): a directory standing in
# for / , with stand-ins for systemctl, journalctl and install on PATH.
R=${RECEIPTD_PKG_TEST_ROOT:-}

install -d -m 0750 -o receiptd -g receiptd "$R/var/lib/receiptd"
install -d -m 0750 -o receiptd -g receiptd "$R/var/log/receiptd"

# deb: act on "configure" only (not abort-upgrade and the like); rpm: $1.
case "$1" in
	configure|[0-9]*) ;;
	*) exit 0 ;;
esac

upgrade=no
case "$1" in
	configure) [ -n "$2" ] && upgrade=yes ;;
	[0-9]*) [ "$1" -ge 2 ] && upgrade=yes ;;
esac
# deb: "configure <old-version>" also follows a reinstall after `apt
# remove` (the configuration was kept), when prerm had stopped and
# disabled the service; the preinst left this note. That is a new
# install for the service: enable and start it.
if [ -e "$R/etc/receiptd/.reinstall" ]; then
	rm -f "$R/etc/receiptd/.reinstall"
	upgrade=no
fi

run_it="run it yourself as user receiptd: receiptd run -config /etc/receiptd/config.toml"
# still_running: the service restarted a moment ago is still the same run
# after ${RECEIPTD_PKG_WAIT:-5} seconds. A Type=simple unit is "active" as
# soon as its process starts, also when the daemon then refuses to start
# (a bad config, a database written by a newer receiptd) and systemd
# restarts it every 2 s; so the run must outlive the wait: same MainPID,
# still active. receiptd refuses within a second or two of its start.
still_running() {
	pid=$(systemctl show -p MainPID --value receiptd.service 2>/dev/null || echo 0)
	sleep "${RECEIPTD_PKG_WAIT:-5}"
	[ "$(systemctl show -p ActiveState --value receiptd.service 2>/dev/null)" = active ] &&
		[ "$pid" != 0 ] && [ "$(systemctl show -p MainPID --value receiptd.service 2>/dev/null)" = "$pid" ]
}

# upgrade_restart: a running service is restarted on the new binary and
# checked; a stopped one stays stopped. When the new version does not
# stay up, the daemon's own words are printed and the script fails, so
# apt, dnf and whatever runs them report the upgrade as failed: the POS
# cannot store receipts until someone acts (docs/decisions/snapshots.md).
upgrade_restart() {
	systemctl is-active --quiet receiptd.service || return 0
	if systemctl restart receiptd.service && still_running; then
		return 0
	fi
	echo "receiptd: ERROR: the service does not stay up on the new version: the POS cannot store receipts."
	echo "receiptd: receiptd's own words (journalctl -u receiptd.service -n 20):"
	journalctl -u receiptd.service -n 20 --no-pager -o cat 2>&1 | sed 's/^/receiptd:   /' || true
	echo "receiptd: fix the cause above, then: receiptd restart. A database written by a newer"
	echo "receiptd: receiptd is refused by an older one: install the version it names again"
	echo "receiptd: (/usr/share/doc/receiptd/README.md, \"Upgrade\" and \"Going back to an older version\")."
	return 1
}

if [ -d "$R/run/systemd/system" ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
	if [ "$upgrade" = yes ]; then
		upgrade_restart || exit 1
	else
		systemctl enable receiptd.service || true
		# receiptd start watches the service for a few seconds and prints
		# why it failed (a Type=simple unit "starts" even when the daemon
		# then refuses its config).
		if ! "$R/usr/bin/receiptd" start; then
			echo "receiptd: installed, but the service is not running (the reason is above)."
			echo "receiptd: fix /etc/receiptd/config.toml (receiptd config check), then: receiptd start"
		fi
	fi
elif command -v systemctl >/dev/null 2>&1; then
	# systemd installed but not running (image build): enable for next boot.
	[ "$upgrade" = yes ] || systemctl enable receiptd.service >/dev/null 2>&1 || true
	echo "receiptd: systemd is not running here, so no service was started (it starts at the next boot"
	echo "receiptd: with systemd); until then, $run_it"
else
	echo "receiptd: this system has no systemd, so no service was installed or started;"
	echo "receiptd: $run_it"
fi
exit 0
