#!/bin/sh
# receiptd postinstall: data and log directories, then systemd.
# deb: postinst configure <old-version>; rpm: %post $1 = 1 (install) or 2
# (upgrade). Without systemd (a container, a chroot) only the directories
# are made; nothing fails.
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

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
	if [ "$upgrade" = yes ]; then
		# Pick up the new binary; a stopped service stays stopped.
		systemctl try-restart receiptd.service || true
	else
		systemctl enable receiptd.service || true
		systemctl start receiptd.service || true
	fi
elif command -v systemctl >/dev/null 2>&1 && [ "$upgrade" = no ]; then
	# systemd installed but not running (image build): enable for next boot.
	systemctl enable receiptd.service >/dev/null 2>&1 || true
fi
exit 0
