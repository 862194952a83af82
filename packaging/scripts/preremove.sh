#!/bin/sh
# receiptd preremove: stop and disable the service on removal, not on
# upgrade. deb: prerm remove|upgrade|deconfigure; rpm: %preun $1 = 0
# (removal) or 1 (upgrade). The database in /var/lib/receiptd is kept.
set -e

remove=no
case "$1" in
	remove|deconfigure|0) remove=yes ;;
esac

if [ "$remove" = yes ] && command -v systemctl >/dev/null 2>&1; then
	if [ -d "${RECEIPTD_PKG_TEST_ROOT:-}/run/systemd/system" ]; then
		systemctl stop receiptd.service || true
	fi
	systemctl disable receiptd.service >/dev/null 2>&1 || true
fi
exit 0
