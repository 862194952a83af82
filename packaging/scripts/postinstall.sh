#!/bin/sh
# receiptd postinstall: data and log directories, then systemd.
# deb: postinst configure <old-version>; rpm: %post $1 = 1 (install) or 2
# (upgrade). Without systemd (a container, a chroot) only the directories
# are made, nothing fails, and the script says that no service was started.
set -e

install -d -m 0750 -o receiptd -g receiptd /var/lib/receiptd
install -d -m 0750 -o receiptd -g receiptd /var/log/receiptd

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

run_it="run it yourself as user receiptd: receiptd run -config /etc/receiptd/config.toml"
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
	if [ "$upgrade" = yes ]; then
		# Pick up the new binary; a stopped service stays stopped.
		systemctl try-restart receiptd.service ||
			echo "receiptd: the service did not restart on the new version; see: receiptd status"
	else
		systemctl enable receiptd.service || true
		# receiptd start watches the service for a few seconds and prints
		# why it failed (a Type=simple unit "starts" even when the daemon
		# then refuses its config).
		if ! /usr/bin/receiptd start; then
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
