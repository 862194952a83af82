#!/bin/sh
# receiptd preinstall: create the receiptd system user and group before the
# files are unpacked, so /etc/receiptd can belong to group receiptd.
# Runs for deb (preinst install|upgrade) and rpm (%pre, $1 = 1 or 2).
set -e

# Tests only (packaging/scripts/scripts_test.go): a directory standing in for /.
R=${RECEIPTD_PKG_TEST_ROOT:-}

# deb: "install <old-version>" is a reinstall after `apt remove`, which
# kept the configuration: the postinst's "configure <old-version>" would
# look like an upgrade and leave the service disabled (prerm disabled
# it). The note tells the postinst to enable and start it.
if [ "$1" = install ] && [ -n "$2" ] && [ -d "$R/etc/receiptd" ]; then
	: >"$R/etc/receiptd/.reinstall"
fi

if ! getent group receiptd >/dev/null 2>&1; then
	if command -v groupadd >/dev/null 2>&1; then
		groupadd --system receiptd
	else
		addgroup --system receiptd
	fi
fi

if ! getent passwd receiptd >/dev/null 2>&1; then
	nologin=/usr/sbin/nologin
	[ -x "$nologin" ] || nologin=/sbin/nologin
	[ -x "$nologin" ] || nologin=/bin/false
	if command -v useradd >/dev/null 2>&1; then
		useradd --system --gid receiptd --home-dir /var/lib/receiptd \
			--no-create-home --shell "$nologin" \
			--comment "receiptd tax receipt queue" receiptd
	else
		adduser --system --ingroup receiptd --home /var/lib/receiptd \
			--no-create-home --shell "$nologin" \
			--gecos "receiptd tax receipt queue" receiptd
	fi
fi
exit 0
