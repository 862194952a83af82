#!/bin/sh
# receiptd postremove: reload systemd after the unit file is gone. On a deb
# purge, remove the configuration and logs, but never the database: receipts
# that were not sent yet, and the audit trail, stay in /var/lib/receiptd
# until an operator removes them (see packaging/README.md, "Debian and Ubuntu"). The system
# user stays too (files may still belong to it). Both are said on removal.
set -e

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
fi

kept="the database /var/lib/receiptd (receipts not yet sent, and the audit trail) and the system user receiptd"
case "$1" in
purge)
	rm -f /etc/receiptd/config.toml /etc/receiptd/environment
	rmdir /etc/receiptd 2>/dev/null || true
	rm -rf /var/log/receiptd
	echo "receiptd: purged /etc/receiptd and /var/log/receiptd. Kept: $kept."
	echo "receiptd: when you are sure nothing in it is left unsent, remove them yourself:"
	echo "receiptd:   sudo rm -r /var/lib/receiptd && sudo userdel receiptd"
	;;
remove | 0)
	# deb remove, rpm erase: the configuration stays too.
	echo "receiptd: removed the program and the service. Kept: /etc/receiptd, $kept."
	;;
esac
exit 0
