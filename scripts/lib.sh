# shellcheck shell=bash
# lib.sh — helpers shared by the set-up scripts (sourced, not run).

# apt_install PACKAGE... installs Debian packages non-interactively, running
# apt-get update first (once per script run), without starting the services
# they ship: the tests and the demo run their own servers.
apt_updated=0
apt_install() {
	if [[ $(id -u) -ne 0 ]]; then
		echo "${0##*/}: $* missing and installing needs root; run: sudo apt-get install -y $*" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt_update || return 1
	# policy-rc.d exit 101 tells invoke-rc.d not to start services.
	local created_policy=0 rc=0
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		created_policy=1
	fi
	apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 "$@" >/dev/null || rc=$?
	if [[ $created_policy -eq 1 ]]; then
		rm -f /usr/sbin/policy-rc.d
	fi
	if [[ $rc -ne 0 ]]; then
		echo "${0##*/}: apt-get install $* failed (exit $rc)" >&2
	fi
	return $rc
}

apt_update() {
	[[ $apt_updated -eq 1 ]] && return 0
	apt-get update -qq -o DPkg::Lock::Timeout=300 || {
		echo "${0##*/}: apt-get update failed; check the Debian mirrors are reachable" >&2
		return 1
	}
	apt_updated=1
}

# apt_has_candidate PACKAGE is true when apt can install PACKAGE.
apt_has_candidate() {
	apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]'
}
