// Package mysql is pgrelay's MySQL and MariaDB sink: it applies source
// transactions to a MySQL 8.0+ or MariaDB 10.5+ target in commit order, each
// together with its position in the pgrelay_progress table of the target
// URL's database, through github.com/go-sql-driver/mysql.
//
// # Sessions
//
// Every session behaves like a replica's (DESIGN.md, invariant 11):
// time_zone '+00:00' (timestamptz values arrive in UTC), a strict sql_mode
// with NO_AUTO_VALUE_ON_ZERO, NO_ZERO_DATE and NO_ZERO_IN_DATE (a value that
// does not fit is an error, never a silent change), foreign_key_checks = 0
// (the source checked them, and rows of one transaction may come in any
// order), READ COMMITTED, utf8mb4. Setup warns when the server's settings
// cannot keep a committed transaction through a crash.
//
// # Values
//
// Values arrive in PostgreSQL's text form and are converted by the MySQL
// dialect (schema.MySQLTable.Convert) and written as literals: numbers bare,
// text quoted, bytes in hex. A value MySQL cannot hold (NaN, infinities,
// years outside 1000-9999, 24:00:00, more digits than DECIMAL(65,30)) stops
// apply with an error naming table, column, key and LSN, nothing of its
// transaction applied, unless Options.UnfitAsNull stores NULL for it.
//
// # Speed
//
// A target transaction's changes wait in per-table queues (queue.go), so
// that each table gets them in one stretch. Runs of inserts into one table
// are multi-row INSERTs, runs of deletes by key one DELETE … WHERE (key)
// IN (…), runs of updates by key one UPDATE … SET c = CASE … WHERE (key)
// IN (…), and a row updated again keeps only its last update. Statements
// are sent several at a time (multi-statements), within max_allowed_packet,
// each batch behind a savepoint: when one fails or touches fewer rows than
// it should (a missing row), the batch is rolled back to the savepoint and
// its changes are run one by one to name the one at fault. No REPLACE, no
// INSERT IGNORE: a duplicate is an error.
//
// # Schema changes
//
// MySQL commits every DDL statement on its own (DDLCommits), so apply calls
// EnsureTable between target transactions. A table change is a list of steps
// (schema.MySQLDialect.AlterSteps), each run only when the target still needs
// it, with the step reached recorded in pgrelay_relation after each: a crash
// between two steps, or between the change and the next commit, resumes
// without a duplicate column or a lost change.
//
// # Concurrency
//
// Setup, EnsureTable, Begin and the Tx methods use the one apply connection
// and must be called from one goroutine. The metadata methods (Seed,
// TableStates, …) use the pool and are safe to call concurrently.
package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/pgrelay/pgrelay/migrations"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

// Compile-time checks of the capabilities (the others next to their code).
var (
	_ sink.Sink           = (*Sink)(nil)
	_ sink.Tx             = (*Tx)(nil)
	_ sink.DDLCommits     = (*Sink)(nil)
	_ sink.SeedStore      = (*Sink)(nil)
	_ sink.StatesSetter   = (*Sink)(nil)
	_ sink.StatsReporter  = (*Sink)(nil)
	_ sink.MetadataReader = (*Sink)(nil)
	_ sink.SlotLocker     = (*Sink)(nil)
	_ sink.Teardowner     = (*Sink)(nil)
	_ sink.TableInspector = (*Sink)(nil)
	_ sink.PreparedLister = (*Sink)(nil)
)

// UnfitSetting is the environment variable that sets Options.UnfitAsNull
// (PGRELAY_MYSQL_UNFIT=null), named in the errors of values that do not fit.
const UnfitSetting = "PGRELAY_MYSQL_UNFIT"

// MetadataPrefix starts the names of pgrelay's tables in the target URL's
// database; a source table of schema public with such a name is refused.
const MetadataPrefix = "pgrelay_"

// Options tune the sink. The zero value is usable.
type Options struct {
	// Logger receives warnings (settings that lose committed transactions,
	// defaults left out, values stored as NULL); slog.Default when nil.
	Logger *slog.Logger
	// UnfitAsNull stores NULL for a value its MySQL column cannot hold
	// (NaN, an infinity, a year outside 1000-9999, 24:00:00, a number beyond
	// DECIMAL(65,30), one MySQL 8's JSON would round) instead of stopping
	// apply: each is logged and counted (Stats.UnfitNulled). A NOT NULL
	// column still refuses it.
	UnfitAsNull bool
	// BatchBytes bounds the SQL text sent in one round trip. Default 4 MiB;
	// never more than the server's max_allowed_packet allows.
	BatchBytes int
	// Inspect opens the sink for status, verify and teardown: no apply
	// connection is opened until one is needed.
	Inspect bool
	// KeepOrder applies each target transaction's changes in arrival order
	// instead of table by table (queue.go) (PGRELAY_KEEP_ORDER).
	KeepOrder bool
}

// Validate applies defaults and rejects impossible values.
func (o *Options) Validate() error {
	if o.BatchBytes < 0 {
		return errors.New("sink/mysql: options: BatchBytes must not be negative")
	}
	if o.BatchBytes == 0 {
		o.BatchBytes = 4 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// sqlMode is every session's sql_mode: strict, no zero dates, explicit zeros
// kept in AUTO_INCREMENT columns, backslash escapes on (the sink's literals
// use them).
const sqlMode = "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

// Sink applies changes to a MySQL or MariaDB target.
type Sink struct {
	cfg      *gomysql.Config
	opts     Options
	log      *slog.Logger
	db       *sql.DB
	server   schema.MySQLServer
	dialect  *schema.MySQLDialect
	database string

	// maxPacket is the server's max_allowed_packet, read by Setup.
	maxPacket int
	// localInfile: the server allows LOAD DATA LOCAL INFILE.
	localInfile bool
	// canPrepare: the server holds prepared XA transactions for pgrelay.
	canPrepare bool

	// Apply connection state: one goroutine.
	conn   *sql.Conn
	connID int64 // its session's CONNECTION_ID()
	slot   string
	tables map[*schema.Table]*tableMap
	// ensured holds the relations EnsureTable brought to a definition in
	// this session: an unchanged one needs no look at the target.
	ensured map[uint32]bool
	cur     *Tx
	warnMu  sync.Mutex
	warned  map[string]bool // warnings given once per table version

	stats stats

	// seqCarried is what the last SetSequences made of each sequence, by
	// the name a migration's report gives it.
	seqMu      sync.Mutex
	seqCarried map[string]sequenceCarried

	// lockConn holds the slot's named lock (LockSlot).
	lockMu   sync.Mutex
	lockConn *sql.Conn

	// unmarkedSeen is when HeldPrepared first saw each prepared XA
	// transaction it found no marker row of.
	unmarkedMu   sync.Mutex
	unmarkedSeen map[string]time.Time
}

// New connects to the target at url (mysql://user:password@host:port/db),
// reads the server's flavour and version, and refuses servers pgrelay does
// not support.
func New(ctx context.Context, url string, opts Options) (*Sink, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	quietDriver()
	cfg, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg, opts: opts, log: opts.Logger, database: cfg.DBName, tables: map[*schema.Table]*tableMap{}, ensured: map[uint32]bool{}, warned: map[string]bool{}}
	// The flavour decides the session settings: read it on a plain session.
	probe, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("sink/mysql: %w", err)
	}
	pdb := sql.OpenDB(probe)
	var version string
	err = pdb.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version)
	_ = pdb.Close()
	if err != nil {
		return nil, classify(describeConnectError(cfg, err), true)
	}
	if s.server, err = schema.ParseMySQLServer(version); err != nil {
		return nil, fmt.Errorf("sink/mysql: %w", err)
	}
	if err := s.server.Supported(); err != nil {
		return nil, fmt.Errorf("sink/mysql: the target is %w", err)
	}
	s.dialect = schema.NewMySQL(s.server, s.database)
	inner, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("sink/mysql: %w", err)
	}
	s.db = sql.OpenDB(&sessionConnector{Connector: inner, init: s.sessionSettings()})
	s.db.SetMaxIdleConns(8)
	if opts.Inspect {
		// A first session says whether the server can be reached at all.
		if err := s.db.PingContext(ctx); err != nil {
			_ = s.db.Close()
			return nil, classify(describeConnectError(cfg, err), true)
		}
		return s, nil
	}
	if _, err = s.applyConn(ctx); err != nil {
		_ = s.db.Close()
		return nil, err
	}
	return s, nil
}

// sessionSettings is the SET statement every session starts with.
func (s *Sink) sessionSettings() string {
	iso := "transaction_isolation"
	if s.server.MariaDB {
		iso = "tx_isolation" // transaction_isolation only from MariaDB 11.1
	}
	return "SET time_zone = '+00:00', sql_mode = '" + sqlMode + "', foreign_key_checks = 0, " + iso + " = 'READ-COMMITTED'"
}

// sessionConnector runs the session settings on every new connection.
type sessionConnector struct {
	driver.Connector
	init string
}

func (c *sessionConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.(driver.ExecerContext).ExecContext(ctx, c.init, nil); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("set the session up (%s): %w", c.init, err)
	}
	return conn, nil
}

// describeConnectError says what a failed connection needs, without the
// password.
func describeConnectError(cfg *gomysql.Config, err error) error {
	where := cfg.Addr
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1045:
			return fmt.Errorf("sink/mysql: connect to %s as %q: the server refused the user or password (check PGRELAY_TARGET_URL): %w", where, cfg.User, err)
		case 1049:
			return fmt.Errorf("sink/mysql: connect to %s: database %q does not exist: create it (CREATE DATABASE %s CHARACTER SET utf8mb4) or fix PGRELAY_TARGET_URL: %w",
				where, cfg.DBName, "`"+cfg.DBName+"`", err)
		case 1044:
			return fmt.Errorf("sink/mysql: connect to %s: user %q may not use database %q: grant it (GRANT ALL ON %s.* TO …): %w", where, cfg.User, cfg.DBName, "`"+cfg.DBName+"`", err)
		}
	}
	return fmt.Errorf("sink/mysql: connect to %s: %w", where, err)
}

// Server is the target's flavour and version.
func (s *Sink) Server() schema.MySQLServer { return s.server }

// Dialect is the sink's MySQL dialect.
func (s *Sink) Dialect() *schema.MySQLDialect { return s.dialect }

// DDLCommits implements sink.DDLCommits: MySQL commits every DDL statement.
func (s *Sink) DDLCommits() bool { return true }

// applyConn returns the apply connection, reconnecting after a loss.
func (s *Sink) applyConn(ctx context.Context) (*sql.Conn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	conn, err := s.db.Conn(ctx)
	if err == nil {
		err = conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.connID)
		if err != nil {
			discard(conn)
		}
	}
	if err != nil {
		return nil, classify(describeConnectError(s.cfg, err), true)
	}
	s.conn = conn
	return conn, nil
}

// dropConn discards the apply connection after an error that may have left
// it broken or inside a transaction.
func (s *Sink) dropConn() {
	if s.conn != nil {
		discard(s.conn)
		s.conn = nil
	}
}

// discard ends conn's session instead of returning it to the pool: what the
// session holds (a transaction, a named lock, a prepared XA transaction on
// MariaDB) goes with it.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// Setup brings pgrelay's metadata tables up to date, checks the server's
// settings and returns the stored progress of slot.
func (s *Sink) Setup(ctx context.Context, slot string) (sink.Progress, error) {
	if s.cur != nil {
		return sink.Progress{}, errors.New("sink/mysql: setup: a transaction is open")
	}
	conn, err := s.applyConn(ctx)
	if err != nil {
		return sink.Progress{}, err
	}
	if _, err := migrations.ApplyMySQL(ctx, conn, s.database); err != nil {
		var me *gomysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1142 || me.Number == 1044) {
			err = fmt.Errorf("user %q lacks privileges on database %q (pgrelay creates and alters tables there, and databases for other source schemas): %w", s.cfg.User, s.database, err)
		}
		s.dropConn()
		return sink.Progress{}, classify(fmt.Errorf("sink/mysql: setup: %w", err), false)
	}
	if err := s.checkSettings(ctx, conn); err != nil {
		s.dropConn()
		return sink.Progress{}, classify(fmt.Errorf("sink/mysql: setup: %w", err), false)
	}
	s.checkXA(ctx, conn)
	s.slot = slot
	p, err := readProgress(ctx, conn, slot)
	if err != nil {
		s.dropConn()
		return sink.Progress{}, classify(err, false)
	}
	return p, nil
}

// checkSettings reads the settings the sink depends on. The settings that
// cannot keep a committed transaction through a crash are Preflight's.
func (s *Sink) checkSettings(ctx context.Context, conn *sql.Conn) error {
	var infile sql.NullString
	var packet int64
	err := conn.QueryRowContext(ctx, "SELECT @@max_allowed_packet, @@local_infile").Scan(&packet, &infile)
	if err != nil {
		return fmt.Errorf("read server settings: %w", err)
	}
	s.maxPacket = int(packet)
	s.localInfile = infile.String == "1" || infile.String == "ON"
	return nil
}

// Close ends the sessions, releasing the slot's lock; an open transaction
// is rolled back by the server.
func (s *Sink) Close(ctx context.Context) error {
	s.cur = nil
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
	s.lockMu.Lock()
	if s.lockConn != nil {
		discard(s.lockConn)
		s.lockConn = nil
	}
	s.lockMu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sink/mysql: close: %w", err)
	}
	return nil
}

// batchLimit is how many bytes of SQL one round trip may carry.
func (s *Sink) batchLimit() int {
	limit := s.opts.BatchBytes
	if s.maxPacket > 0 {
		limit = min(limit, s.maxPacket-64<<10)
	}
	return max(limit, 1)
}

type stats struct {
	batches, statements, insertRuns, insertRows, setStatements, setRows, folded, unfitNulled atomic.Int64
}

// Stats implements sink.StatsReporter: what the sink sent since New. Multi-row
// INSERTs count as CopyRuns and CopyRows, DELETE … IN (…) and batched
// UPDATEs as SetStatements and SetRows, updates folded into a later one of
// the same row as Folded, values stored as NULL under Options.UnfitAsNull
// as UnfitNulled. Safe to call from any goroutine.
func (s *Sink) Stats() sink.Stats {
	return sink.Stats{
		Batches:       s.stats.batches.Load(),
		Statements:    s.stats.statements.Load(),
		CopyRuns:      s.stats.insertRuns.Load(),
		CopyRows:      s.stats.insertRows.Load(),
		SetStatements: s.stats.setStatements.Load(),
		SetRows:       s.stats.setRows.Load(),
		Folded:        s.stats.folded.Load(),
		UnfitNulled:   s.stats.unfitNulled.Load(),
	}
}

// warnOnce logs msg once per key.
func (s *Sink) warnOnce(key, msg string, args ...any) {
	s.warnMu.Lock()
	seen := s.warned[key]
	s.warned[key] = true
	s.warnMu.Unlock()
	if !seen {
		s.log.Warn(msg, args...)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
