#!/usr/bin/env bash
# install-locales.sh — make the locales the integration tests set on their
# databases available (lc_monetary = de_DE.UTF-8, whose money reads
# "1.234,56 €"). Generates a missing one with localedef, installing Debian's
# locales package (the locale sources) first when needed.
#
# Usage: scripts/install-locales.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have() { locale -a 2>/dev/null | grep -qix "$1"; }

for loc in de_DE.UTF-8; do
	norm=${loc/UTF-8/utf8}
	if have "$norm"; then
		continue
	fi
	if [[ $(id -u) -ne 0 ]]; then
		echo "${0##*/}: locale $loc missing and generating it needs root; run: sudo localedef -i ${loc%%.*} -f UTF-8 $loc" >&2
		exit 1
	fi
	if [[ ! -e /usr/share/i18n/locales/${loc%%.*} ]] || ! command -v localedef >/dev/null; then
		apt_install locales
	fi
	localedef -i "${loc%%.*}" -f UTF-8 "$loc"
	have "$norm" || { echo "${0##*/}: localedef made no $loc" >&2; exit 1; }
done
