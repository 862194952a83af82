#!/bin/sh
# receiptd postremove: reload systemd after the unit file is gone. On a deb
# purge, remove the configuration and logs, but never the database: receipts
# that were not sent yet, and the audit trail, stay in /var/lib/receiptd
# until an operator removes them (see README.md, "Uninstall").
set -e

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
fi

if [ "$1" = purge ]; then
	rm -f /etc/receiptd/config.toml /etc/receiptd/environment
	rmdir /etc/receiptd 2>/dev/null || true
	rm -rf /var/log/receiptd
fi
exit 0
