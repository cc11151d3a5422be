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

if [[ $(id -u) -ne 0 ]]; then
	echo "install-mariadb: mariadbd is missing and this script needs root to install it; run: sudo apt-get install mariadb-server" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# policy-rc.d 101 tells invoke-rc.d not to start services during the install;
# remove it afterwards only if we created it.
created_policy=0
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	created_policy=1
fi
cleanup() {
	if [[ $created_policy -eq 1 ]]; then
		rm -f /usr/sbin/policy-rc.d
	fi
}
trap cleanup EXIT

apt-get update -qq
apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client >/dev/null

# In case a service manager started it anyway: the harness runs its own servers.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mariadb 2>/dev/null; then
	systemctl stop mariadb || true
fi
if command -v service >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
	:
elif [[ -x /etc/init.d/mariadb ]]; then
	/etc/init.d/mariadb stop >/dev/null 2>&1 || true
fi

if ! server=$(find_server); then
	echo "install-mariadb: mariadb-server installed but mariadbd not found; check: dpkg -L mariadb-server | grep bin/" >&2
	exit 1
fi
echo "mariadb: $server"
