#!/usr/bin/env bash
# install-mariadb.sh — make the MariaDB server binaries available for the
# integration harness. The harness runs mariadbd itself, on its own temporary
# data directory and loopback port, so the distribution's service is not
# started (and is stopped if the package's postinst started it).
#
# Usage: scripts/install-mariadb.sh
# Prints the directory holding mariadbd on success.
set -euo pipefail

find_server() {
	local name dir
	for name in mariadbd mysqld; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
		for dir in /usr/sbin /usr/local/sbin /usr/libexec; do
			if [[ -x "$dir/$name" ]]; then
				echo "$dir/$name"
				return 0
			fi
		done
	done
	return 1
}

has_install_db() {
	command -v mariadb-install-db >/dev/null 2>&1 || command -v mysql_install_db >/dev/null 2>&1
}

if server=$(find_server) && has_install_db; then
	echo "mariadb: $server"
	exit 0
fi

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
apt_install mariadb-server mariadb-client

# In case a service manager started it anyway: the harness runs its own servers.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mariadb 2>/dev/null; then
	systemctl stop mariadb || true
fi
if [[ ! -d /run/systemd/system && -x /etc/init.d/mariadb ]]; then
	/etc/init.d/mariadb stop >/dev/null 2>&1 || true
fi

if ! server=$(find_server); then
	echo "install-mariadb: mariadb-server installed but mariadbd not found; check: dpkg -L mariadb-server | grep bin/" >&2
	exit 1
fi
echo "mariadb: $server"
