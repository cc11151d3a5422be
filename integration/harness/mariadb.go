package harness

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MY is a fresh database on the test binary's MariaDB server. User has all
// privileges on the server (it may create databases and run XA).
type MY struct {
	Host     string
	Port     int
	DB       string
	User     string
	Password string

	mu        sync.Mutex
	db        *sql.DB // for Exec and QueryString; opened on first use
	srv       *myServer
	dedicated bool
}

// MYOption changes how MariaDB prepares a database.
type MYOption func(*myOptions)

type myOptions struct {
	dedicated bool
	args      []string // more mariadbd options
}

// MariaDBDedicated gives the test a MariaDB server of its own (its CPU and
// I/O are the test's alone, e.g. for a benchmark), removed when the test
// ends or by Destroy.
func MariaDBDedicated() MYOption {
	return func(o *myOptions) { o.dedicated = true }
}

// MariaDBBinlog gives the test a dedicated MariaDB server that writes a
// binary log as production servers usually do, durable at every commit:
// --log-bin --sync-binlog=1 --binlog-format=ROW.
func MariaDBBinlog() MYOption {
	return func(o *myOptions) {
		o.dedicated = true
		o.args = append(o.args, "--log-bin=mariadb-bin", "--sync-binlog=1", "--binlog-format=ROW", "--server-id=1")
	}
}

// MariaDB returns a ready, fresh database on the MariaDB server shared by the
// test binary, started on first use (installing mariadb-server through
// scripts/install-mariadb.sh when it is missing), or with MariaDBDedicated on
// a server of its own. The database is left on the temporary server when the
// test ends: dropping it could wait on the locks of an XA transaction the
// test left prepared.
func MariaDB(t testing.TB, opts ...MYOption) *MY {
	t.Helper()
	var o myOptions
	for _, opt := range opts {
		opt(&o)
	}
	var srv *myServer
	if o.dedicated {
		start := time.Now()
		s, err := newMariaDBServer(o.args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.shutdown)
		t.Logf("harness: started dedicated MariaDB %s on 127.0.0.1:%d in %v", s.version, s.port, time.Since(start).Round(time.Millisecond))
		srv = s
	} else {
		s, started, took, err := sharedMariaDB()
		if err != nil {
			t.Fatal(err)
		}
		if started {
			t.Logf("harness: started shared MariaDB %s on 127.0.0.1:%d in %v", s.version, s.port, took.Round(time.Millisecond))
		}
		srv = s
	}
	db := dbName(t, 64)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := srv.root.ExecContext(ctx, "CREATE DATABASE "+mysqlIdent(db)+" CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("harness: create database %s on MariaDB: %v", db, err)
	}
	m := &MY{Host: "127.0.0.1", Port: srv.port, DB: db, User: testUser, Password: srv.password, srv: srv, dedicated: o.dedicated}
	t.Cleanup(m.close)
	return m
}

// ServerPID is the process id of the database's mariadbd: its CPU time in
// /proc/<pid>/stat is the server's (all its threads).
func (m *MY) ServerPID() int {
	m.srv.mu.Lock()
	defer m.srv.mu.Unlock()
	if m.srv.proc == nil {
		return 0
	}
	return m.srv.proc.cmd.Process.Pid
}

// Destroy stops the dedicated server at once and removes its files, before
// the end of the test (a benchmark freeing memory and disk between copies).
func (m *MY) Destroy(t testing.TB) {
	t.Helper()
	if !m.dedicated {
		t.Fatalf("harness: Destroy of MariaDB database %s: the server is shared; use MariaDBDedicated", m.DB)
	}
	m.close()
	m.srv.shutdown()
}

// URL is the database's URL in the form pgrelay takes for a MySQL target:
// mysql://user:pass@127.0.0.1:port/db
func (m *MY) URL() string {
	u := url.URL{
		Scheme: "mysql",
		User:   url.UserPassword(m.User, m.Password),
		Host:   fmt.Sprintf("%s:%d", m.Host, m.Port),
		Path:   "/" + m.DB,
	}
	return u.String()
}

// DSN is the database's data source name for github.com/go-sql-driver/mysql.
func (m *MY) DSN() string {
	return m.config().FormatDSN()
}

func (m *MY) config() *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User = m.User
	cfg.Passwd = m.Password
	cfg.Net = "tcp"
	cfg.Addr = fmt.Sprintf("%s:%d", m.Host, m.Port)
	cfg.DBName = m.DB
	return cfg
}

// Open opens a database/sql handle on the database, closed when the test ends.
func (m *MY) Open(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", m.DSN())
	if err != nil {
		t.Fatalf("harness: open MariaDB database %s: %v", m.DB, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Exec runs sql (several statements are allowed) and fails the test on error.
func (m *MY) Exec(t testing.TB, query string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := m.handle()
	if err == nil {
		_, err = db.ExecContext(ctx, query, args...)
	}
	if err != nil {
		t.Fatalf("harness: exec on MariaDB database %s: %v\nSQL: %s", m.DB, err, query)
	}
}

// QueryString returns the first column of the first row as text ("" for
// NULL). A query that returns no row fails the test.
func (m *MY) QueryString(t testing.TB, query string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := m.handle()
	if err != nil {
		t.Fatalf("harness: query on MariaDB database %s: %v\nSQL: %s", m.DB, err, query)
	}
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatalf("harness: query on MariaDB database %s: %v\nSQL: %s", m.DB, err, query)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			t.Fatalf("harness: query on MariaDB database %s: %v\nSQL: %s", m.DB, err, query)
		}
		t.Fatalf("harness: query on MariaDB database %s returned no row\nSQL: %s", m.DB, query)
	}
	cols, err := rows.Columns()
	if err != nil {
		t.Fatalf("harness: query on MariaDB database %s: %v\nSQL: %s", m.DB, err, query)
	}
	dest := make([]any, len(cols))
	var first sql.RawBytes
	dest[0] = &first
	for i := 1; i < len(dest); i++ {
		dest[i] = new(sql.RawBytes)
	}
	if err := rows.Scan(dest...); err != nil {
		t.Fatalf("harness: query on MariaDB database %s: %v\nSQL: %s", m.DB, err, query)
	}
	return string(first)
}

// SetReadOnly turns the server's read_only on or off, as root: User may not
// write past it (it lacks READ_ONLY ADMIN). read_only is the server's, so a
// test that turns it on must not run beside other tests of the server, and
// turns it off before it ends.
func (m *MY) SetReadOnly(t testing.TB, on bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := m.srv.root.ExecContext(ctx, fmt.Sprintf("SET GLOBAL read_only = %t", on)); err != nil {
		t.Fatalf("harness: set MariaDB read_only = %t: %v", on, err)
	}
}

// handle is the shared *sql.DB of Exec and QueryString, with multiStatements
// so a script of statements can be run at once.
func (m *MY) handle() (*sql.DB, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.db == nil {
		cfg := m.config()
		cfg.MultiStatements = true
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		m.db = sql.OpenDB(connector)
	}
	return m.db, nil
}

func (m *MY) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.db != nil {
		_ = m.db.Close()
		m.db = nil
	}
}

// mysqlIdent quotes an identifier with backticks, doubling embedded ones.
func mysqlIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

var (
	mariaOnce    sync.Once
	mariaSrv     *myServer
	mariaErr     error
	mariaTook    time.Duration
	mariaStarted bool
)

func sharedMariaDB() (srv *myServer, started bool, took time.Duration, err error) {
	mariaOnce.Do(func() {
		begin := time.Now()
		mariaSrv, mariaErr = newMariaDBServer()
		mariaTook = time.Since(begin)
		started = mariaErr == nil
	})
	return mariaSrv, started, mariaTook, mariaErr
}

// myServer is one MariaDB server in a temporary directory.
type myServer struct {
	dir      string
	dataDir  string
	socket   string
	logPath  string
	port     int
	password string
	version  string
	acct     *account
	root     *sql.DB // root over the unix socket, for creating databases

	mu   sync.Mutex
	proc *proc
}

// mariaDBPrograms finds mariadbd and mariadb-install-db (or their mysql
// names), installing mariadb-server when they are missing.
func mariaDBPrograms() (server, installDB string, err error) {
	find := func() (string, string) {
		var s, i string
		for _, name := range []string{"mariadbd", "mysqld"} {
			if p, err := exec.LookPath(name); err == nil {
				s = p
				break
			}
			if isExecutable("/usr/sbin/" + name) {
				s = "/usr/sbin/" + name
				break
			}
		}
		for _, name := range []string{"mariadb-install-db", "mysql_install_db"} {
			if p, err := exec.LookPath(name); err == nil {
				i = p
				break
			}
		}
		return s, i
	}
	if s, i := find(); s != "" && i != "" {
		return s, i, nil
	}
	if err := runScript("install-mariadb.sh"); err != nil {
		return "", "", err
	}
	if s, i := find(); s != "" && i != "" {
		return s, i, nil
	}
	return "", "", fmt.Errorf("harness: scripts/install-mariadb.sh ran but mariadbd or mariadb-install-db is still missing; install them: apt-get install mariadb-server")
}

// newMariaDBServer starts a server with the harness's options and args.
func newMariaDBServer(args ...string) (*myServer, error) {
	server, installDB, err := mariaDBPrograms()
	if err != nil {
		return nil, err
	}
	acct, err := serverAccount("mysql")
	if err != nil {
		return nil, err
	}
	dir, err := serverDir("mariadb", acct)
	if err != nil {
		return nil, err
	}
	s := &myServer{
		dir:      dir,
		dataDir:  filepath.Join(dir, "data"),
		socket:   filepath.Join(dir, "mysqld.sock"),
		logPath:  filepath.Join(dir, "mariadb.log"),
		password: randomHex(12),
		acct:     acct,
	}
	env := childEnv(dir)
	out, err := runAs(acct, dir, env, installDB,
		"--no-defaults",
		"--datadir="+s.dataDir,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
	)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("harness: %s failed (%w); output:\n%s", filepath.Base(installDB), err, indent(lastLines(out, 20)))
	}
	register(s)
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			s.shutdown()
			return nil, err
		}
		s.port = port
		offset := fileSize(s.logPath)
		p, err := startDaemon("MariaDB", append([]string{server,
			"--no-defaults",
			"--datadir=" + s.dataDir,
			"--port=" + strconv.Itoa(port),
			"--bind-address=127.0.0.1",
			"--socket=" + s.socket,
			"--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
			"--tmpdir=" + dir,
			"--skip-name-resolve",
			"--character-set-server=utf8mb4",
			// A replication target: commits must be durable (invariant 1;
			// the MySQL sink warns otherwise), LOAD DATA LOCAL is its bulk path.
			"--innodb-flush-log-at-trx-commit=1",
			"--local-infile=1",
			"--max-connections=500",
			"--innodb-buffer-pool-size=256M",
		}, args...), acct, s.logPath, env)
		if err != nil {
			s.shutdown()
			return nil, err
		}
		s.proc = p
		err = s.waitReady(p, offset)
		if err == nil {
			break
		}
		p.stop(syscall.SIGKILL, 10*time.Second)
		s.proc = nil
		startLog := logSince(s.logPath, offset)
		if attempt < 5 && (strings.Contains(startLog, "Address already in use") || strings.Contains(startLog, "Can't start server: Bind")) {
			continue
		}
		s.shutdown()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, stmt := range []string{
		"CREATE USER " + sqlLiteral(testUser, true) + "@'%' IDENTIFIED BY " + sqlLiteral(s.password, true),
		"GRANT ALL PRIVILEGES ON *.* TO " + sqlLiteral(testUser, true) + "@'%' WITH GRANT OPTION",
		// As pgrelay's users: a read_only server refuses its writes.
		"REVOKE READ_ONLY ADMIN ON *.* FROM " + sqlLiteral(testUser, true) + "@'%'",
	} {
		if _, err := s.root.ExecContext(ctx, stmt); err != nil {
			s.shutdown()
			return nil, fmt.Errorf("harness: MariaDB set-up %q: %w", stmt, err)
		}
	}
	return s, nil
}

// waitReady waits until root can log in over the unix socket.
func (s *myServer) waitReady(p *proc, logOffset int64) error {
	const timeout = 90 * time.Second
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "unix"
	cfg.Addr = s.socket
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("harness: MariaDB root connector: %w", err)
	}
	root := sql.OpenDB(connector)
	root.SetMaxOpenConns(4)
	err = Await(timeout, 50*time.Millisecond, "MariaDB to accept connections on "+s.socket, func() error {
		if p.exited() {
			return Abort(fmt.Errorf("it exited during start-up (%v)", p.waitErr))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return root.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s.version)
	})
	if err != nil {
		_ = root.Close()
		return fmt.Errorf("harness: %v; its log:\n%s", err, indent(lastLines(logSince(s.logPath, logOffset), 30)))
	}
	s.root = root
	return nil
}

// shutdown implements server.
func (s *myServer) shutdown() {
	unregister(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root != nil {
		_ = s.root.Close()
		s.root = nil
	}
	if s.proc != nil {
		s.proc.stop(syscall.SIGKILL, 10*time.Second)
		s.proc = nil
	}
	_ = os.RemoveAll(s.dir)
}
