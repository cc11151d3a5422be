package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/internal/redact"
)

// Errors a caller can test for with errors.Is. The messages that wrap them say what
// to do about it.
var (
	// ErrSlotInUse: another walsender (another pgrelay, a subscription, pg_recvlogical)
	// is streaming from the slot. A second instance waits and retries until the first
	// one is gone (SQLSTATE 55006).
	ErrSlotInUse = errors.New("replication slot is in use")
	// ErrSnapshotTooLarge: creating a slot found more transaction ids in
	// progress than an exported snapshot holds (SQLSTATE 40001); it passes
	// once some of them end, so a new session tries again.
	ErrSnapshotTooLarge = errors.New("too many transactions in progress on the source to export a snapshot")
	// ErrSlotNotFound: the replication slot does not exist (SQLSTATE 42704).
	ErrSlotNotFound = errors.New("replication slot does not exist")
	// ErrSlotExists: CreateSlot found a slot of that name (SQLSTATE 42710).
	ErrSlotExists = errors.New("replication slot already exists")
	// ErrSlotInvalidated: the server removed WAL the slot still needed
	// (wal_status = lost); the slot must be dropped and the target seeded again.
	ErrSlotInvalidated = errors.New("replication slot is invalidated")
	// ErrSlotPlugin: a slot of that name exists but does not decode with pgoutput.
	ErrSlotPlugin = errors.New("replication slot uses another output plugin")
	// ErrNoFreeSlot: max_replication_slots are all in use.
	ErrNoFreeSlot = errors.New("no free replication slot")
	// ErrWALLevel: wal_level is not logical.
	ErrWALLevel = errors.New("wal_level is not logical")
	// ErrNoReplicationRole: the role may not open replication connections.
	ErrNoReplicationRole = errors.New("role lacks the REPLICATION attribute")
	// ErrPublicationMissing: the publication does not exist and could not be created,
	// or does not publish a table it should.
	ErrPublicationMissing = errors.New("publication is missing")
	// ErrCannotRead: the role may not read a published table (SELECT on it,
	// USAGE on its schema), which the snapshot copy does.
	ErrCannotRead = errors.New("cannot read published tables")
	// ErrUnsupported: the server is too old for a requested feature.
	ErrUnsupported = errors.New("not supported by this server")
	// ErrStreamEnded: the server ended the replication stream (CopyDone), usually
	// because it is shutting down. Reconnect and start again from the acked LSN.
	ErrStreamEnded = errors.New("source ended the replication stream")
)

// Defaults applied by ConnConfig.Validate.
const (
	DefaultSlot           = "pgrelay"
	DefaultPublication    = "pgrelay"
	DefaultStatusInterval = 10 * time.Second
)

// ConnConfig is the source side of the configuration, filled by cmd from the
// PGRELAY_* environment.
type ConnConfig struct {
	URL         string   // libpq URL or key=value string
	Slot        string   // replication slot name
	Publication string   // publication name
	Tables      []string // schema.table to publish; empty means all tables
	Streaming   string   // auto, on, off or parallel
	TwoPhase    string   // auto, on or off
	Messages    bool     // ask for pg_logical_emit_message messages (PostgreSQL 14+)
	Binary      bool     // ask for values in binary form (PostgreSQL 14+)
	// StatusInterval is how often a standby status update is sent while streaming.
	// It must stay well below the server's wal_sender_timeout (default 60s).
	StatusInterval time.Duration
	// ReplaceSlot says the slot is to be dropped and created again
	// (PGRELAY_SNAPSHOT=always): preflight takes an invalidated one as no
	// problem.
	ReplaceSlot bool
	// MetadataSchema is the target schema pgrelay keeps its metadata in
	// (migrate, replicate; empty for tail, which writes nowhere): preflight
	// refuses published tables in a source schema of that name, which would
	// be created in it (MetadataSchemaError).
	MetadataSchema string
	// BeforeCreatePublication, when set, is called before preflight creates
	// the publication, and an error it returns is preflight's: the caller
	// checks there that the target can take the data, so that a run that
	// cannot go on leaves nothing behind on the source.
	BeforeCreatePublication func(context.Context) error
}

// Validate applies defaults and reports the first setting a user must fix.
func (c *ConnConfig) Validate() error {
	if strings.TrimSpace(c.URL) == "" {
		return errors.New("source config: the source URL is empty: set PGRELAY_SOURCE_URL")
	}
	if c.Slot == "" {
		c.Slot = DefaultSlot
	}
	if err := ValidateSlotName(c.Slot); err != nil {
		return fmt.Errorf("source config: %w", err)
	}
	if c.Publication == "" {
		c.Publication = DefaultPublication
	}
	if len(c.Publication) > maxIdentifierLen {
		return fmt.Errorf("source config: publication name %q is longer than %d bytes", c.Publication, maxIdentifierLen)
	}
	for _, t := range c.Tables {
		if _, _, err := SplitTableName(t); err != nil {
			return fmt.Errorf("source config: PGRELAY_TABLES: %w", err)
		}
	}
	c.Streaming = strings.ToLower(strings.TrimSpace(c.Streaming))
	switch c.Streaming {
	case "":
		c.Streaming = "auto"
	case "auto", "on", "off", "parallel":
	default:
		return fmt.Errorf("source config: streaming %q is not one of auto, on, off, parallel (PGRELAY_STREAMING)", c.Streaming)
	}
	c.TwoPhase = strings.ToLower(strings.TrimSpace(c.TwoPhase))
	switch c.TwoPhase {
	case "":
		c.TwoPhase = "auto"
	case "auto", "on", "off":
	default:
		return fmt.Errorf("source config: two-phase %q is not one of auto, on, off (PGRELAY_TWO_PHASE)", c.TwoPhase)
	}
	switch {
	case c.StatusInterval == 0:
		c.StatusInterval = DefaultStatusInterval
	case c.StatusInterval < 0:
		return fmt.Errorf("source config: status interval %v is negative", c.StatusInterval)
	}
	return nil
}

// StreamOptions resolves the "auto" settings against a server's major version and
// whether the target can hold prepared transactions. An explicit "on" that the
// server cannot do is an error; "auto" quietly picks what the server can do.
func (c *ConnConfig) StreamOptions(serverMajor int, targetTwoPhase bool) (StreamOptions, error) {
	proto := ProtoVersionFor(serverMajor)
	o := StreamOptions{
		Publication:    c.Publication,
		Proto:          proto,
		Messages:       c.Messages,
		Binary:         c.Binary,
		StatusInterval: c.StatusInterval,
	}
	switch c.Streaming {
	case "", "auto":
		if proto >= 2 {
			o.Streaming = "on"
		}
	case "on":
		if proto < 2 {
			return o, fmt.Errorf("source: streaming of in-progress transactions needs PostgreSQL 14 or newer (server is %d): set PGRELAY_STREAMING=off: %w", serverMajor, ErrUnsupported)
		}
		o.Streaming = "on"
	case "parallel":
		if proto < 4 {
			return o, fmt.Errorf("source: streaming=parallel needs PostgreSQL 16 or newer (server is %d): set PGRELAY_STREAMING=on or auto: %w", serverMajor, ErrUnsupported)
		}
		o.Streaming = "parallel"
	case "off":
		if proto >= 2 {
			o.Streaming = "off"
		}
	}
	switch c.TwoPhase {
	case "", "auto":
		o.TwoPhase = proto >= 3 && targetTwoPhase
	case "on":
		if proto < 3 {
			return o, fmt.Errorf("source: two-phase decoding needs PostgreSQL 15 or newer (server is %d): set PGRELAY_TWO_PHASE=off: %w", serverMajor, ErrUnsupported)
		}
		o.TwoPhase = true
	}
	if (c.Messages || c.Binary) && serverMajor < 14 {
		return o, fmt.Errorf("source: the messages and binary options need PostgreSQL 14 or newer (server is %d): %w", serverMajor, ErrUnsupported)
	}
	return o, nil
}

// maxIdentifierLen is NAMEDATALEN-1, the longest PostgreSQL identifier.
const maxIdentifierLen = 63

// ValidateSlotName checks a replication slot name the way the server does: 1 to 63
// characters, lower-case letters, digits and underscores. Names that pass need no
// quoting in replication commands.
func ValidateSlotName(name string) error {
	if name == "" {
		return errors.New("replication slot name is empty")
	}
	if len(name) > maxIdentifierLen {
		return fmt.Errorf("replication slot name %q is longer than %d characters", name, maxIdentifierLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Errorf("replication slot name %q may contain only lower-case letters, digits and underscores", name)
		}
	}
	return nil
}

// SplitTableList splits a list of table names (PGRELAY_TABLES) at the commas
// that are not inside a double quoted identifier: public."a,b",s.c is two
// entries.
func SplitTableList(s string) []string {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted // "" inside quotes toggles twice: still quoted
		case ',':
			if !quoted {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// SplitTableName splits "schema.table" into its parts. Either part may be
// double-quoted (embedded quotes doubled) to keep its case or contain dots;
// unquoted parts fold to lower case, as in SQL.
func SplitTableName(s string) (schemaName, tableName string, err error) {
	parts, err := splitQualified(strings.TrimSpace(s))
	if err != nil {
		return "", "", fmt.Errorf("table %q: %w", s, err)
	}
	if len(parts) != 2 {
		return "", "", fmt.Errorf("table %q: write it as schema.table", s)
	}
	return parts[0], parts[1], nil
}

func splitQualified(s string) ([]string, error) {
	var parts []string
	for {
		var part string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i := 1
			closed := false
			for i < len(s) {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					closed = true
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, errors.New("unterminated quoted identifier")
			}
			part, s = b.String(), s[i:]
		} else {
			end := strings.IndexAny(s, `."`)
			if end < 0 {
				end = len(s)
			}
			part, s = strings.ToLower(strings.TrimSpace(s[:end])), s[end:]
		}
		if part == "" {
			return nil, errors.New("empty name")
		}
		if len(part) > maxIdentifierLen {
			return nil, fmt.Errorf("name %q is longer than %d bytes", part, maxIdentifierLen)
		}
		parts = append(parts, part)
		if s == "" {
			return parts, nil
		}
		if s[0] != '.' {
			return nil, errors.New(`unexpected character after a name (quote names that contain '"')`)
		}
		s = s[1:]
	}
}

// ProtoVersionFor is the highest pgoutput proto_version a server major supports:
// 1 on 10–13, 2 on 14, 3 on 15, 4 on 16 and newer.
func ProtoVersionFor(major int) int {
	switch {
	case major >= 16:
		return 4
	case major == 15:
		return 3
	case major == 14:
		return 2
	default:
		return 1
	}
}

// ReplConn is a replication connection (replication=database) to the source. It
// runs replication commands: creating slots and streaming. It is not safe for
// concurrent use, and once StartReplication succeeded it belongs to the Stream:
// the only thing left to do with it is Close, after Stream.Run has returned.
type ReplConn struct {
	conn      *pgconn.PgConn
	major     int
	version   string
	system    pglogrepl.IdentifySystemResult
	streaming bool
}

// Connect opens a replication connection to the source named by url (a libpq URL
// or key=value string; a replication parameter in it is overridden). Failures are
// one line saying what to fix; the password is never part of it.
func Connect(ctx context.Context, url string) (*ReplConn, error) {
	cfg, err := parseSourceURL(url)
	if err != nil {
		return nil, err
	}
	c, err := connectConfig(ctx, cfg)
	// A password split by an unescaped '@' or '/' leaves pieces in the host
	// or the database a message names.
	return c, redact.New(url).Err(err)
}

// sessionParams are set in the startup packet of every source session, the
// walsender's included (pgoutput writes text values with its output
// functions): values then come out in forms every target reads back the same,
// whatever the source database's or role's defaults. A DateStyle of
// "SQL, DMY" would otherwise turn 3 February into 2 March on an MDY target.
var sessionParams = map[string]string{
	"DateStyle":          "ISO, YMD",
	"IntervalStyle":      "postgres",
	"extra_float_digits": "3", // exact floats from sources before 12 too
	// Text in UTF8 whatever the database's encoding (the server converts,
	// text values and names alike, in the stream and in COPY): otherwise a
	// LATIN1 database's bytes reach a UTF8 target as they are.
	"client_encoding": "UTF8",
	// money prints in the C locale's form, which target sessions read
	// (sink/postgres pins the same): the amount's stored integer is the same
	// on both sides, whatever lc_monetary each database has.
	"lc_monetary": "C",
	// Values of the OID alias types (regclass, regtype, regproc, …) name
	// their objects schema-qualified unless in pg_catalog: 't' would be
	// looked up on the target under its sessions' search_path, which is not
	// the source's. Every name pgrelay sends is qualified already.
	"search_path": "",
}

func setSessionParams(params *map[string]string) {
	if *params == nil {
		*params = map[string]string{}
	}
	for k, v := range sessionParams {
		(*params)[k] = v
	}
}

// ParseConnConfig parses the source URL for a plain (non-replication)
// session, with the session settings every source session gets.
func ParseConnConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pgconnstr.ParsePgx(url)
	if err != nil {
		return nil, err
	}
	setSessionParams(&cfg.RuntimeParams)
	return cfg, nil
}

func connectConfig(ctx context.Context, cfg *pgconn.Config) (*ReplConn, error) {
	setSessionParams(&cfg.RuntimeParams)
	cfg.RuntimeParams["replication"] = "database"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, describeConnectError(cfg, err, true)
	}
	c := &ReplConn{conn: conn, version: conn.ParameterStatus("server_version")}
	c.major = parseMajor(c.version)
	if c.major < 10 {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("source: server version %q is not supported: pgrelay needs PostgreSQL 10 or newer", c.version)
	}
	c.system, err = pglogrepl.IdentifySystem(ctx, conn)
	if err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("source: identify system: %w", classifyPgError(err, ""))
	}
	if c.system.DBName == "" {
		_ = conn.Close(ctx)
		return nil, errors.New("source: the replication connection is not bound to a database: name the database in the source URL")
	}
	return c, nil
}

// parseSourceURL parses a connection string without ever echoing it: pgconn's own
// message contains the string (redacted on a best-effort basis only).
func parseSourceURL(s string) (*pgconn.Config, error) {
	cfg, err := pgconnstr.Parse(s)
	if err == nil {
		return cfg, nil
	}
	reason := "check its syntax"
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		// pgx's own errors are all ParseConfigErrors: this is a libpq
		// setting pgrelay cannot honour, and the error names it.
		return nil, fmt.Errorf("source: the source URL: %w", err)
	}
	if inner := errors.Unwrap(pce); inner != nil {
		var ue *url.Error
		if errors.As(inner, &ue) {
			inner = ue.Err
		}
		reason = inner.Error()
	}
	reason = redact.New(s).String(reason)
	return nil, fmt.Errorf("source: cannot parse the source URL (%s): use postgres://user:password@host:port/database or key=value form", reason)
}

// connectError keeps pgconn's error for errors.As but shows our own line.
type connectError struct {
	msg string
	err error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.err }

// describeConnectError turns a connection failure into one actionable line.
func describeConnectError(cfg *pgconn.Config, err error, replication bool) error {
	return describeConnectErrorOf("source", cfg, err, replication)
}

// DescribeConnectError turns a failed connection to the server cfg names into
// one actionable line; side ("source" or "target") names the server and its
// URL setting. The password never appears.
func DescribeConnectError(side string, cfg *pgconn.Config, err error) error {
	return describeConnectErrorOf(side, cfg, err, false)
}

func describeConnectErrorOf(side string, cfg *pgconn.Config, err error, replication bool) error {
	hosts := hostPorts(cfg)
	where := strings.Join(hosts, ", ")
	kind := "connection"
	if replication {
		kind = "replication connection"
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		var msg string
		switch pgErr.Code {
		case "28P01":
			msg = fmt.Sprintf(side+": password authentication failed for user %q at %s: check the user and password in the "+side+" URL", cfg.User, where)
		case "28000":
			if strings.Contains(pgErr.Message, "does not exist") {
				// "role … does not exist": no pg_hba.conf line would help.
				msg = fmt.Sprintf(side+": %s at %s: fix the user in the "+side+" URL, or create the role (CREATE ROLE %s LOGIN …)", pgErr.Message, where, pgquote.Ident(cfg.User))
				break
			}
			msg = fmt.Sprintf(side+": %s rejected for user %q at %s: %s: allow it in pg_hba.conf and reload the server", kind, cfg.User, where, pgErr.Message)
		case "42501":
			msg = fmt.Sprintf(side+": role %q may not open a replication connection (%s): run ALTER ROLE %s REPLICATION; as a superuser",
				cfg.User, pgErr.Message, pgquote.Ident(cfg.User))
			return &connectError{msg: msg, err: errors.Join(ErrNoReplicationRole, err)}
		case "3D000":
			msg = fmt.Sprintf(side+": database %q does not exist at %s: fix the database name in the "+side+" URL", cfg.Database, where)
		case "53300":
			hint := "raise max_connections or close idle sessions"
			if replication {
				hint = "raise max_wal_senders (restart needed) or stop other replication clients"
			}
			msg = fmt.Sprintf(side+": %s at %s refused: %s: %s", kind, where, pgErr.Message, hint)
		case "57P03":
			msg = fmt.Sprintf(side+": server at %s is not accepting connections yet (%s): retry when it has started", where, pgErr.Message)
		default:
			msg = fmt.Sprintf(side+": %s to %s as %q failed: %s (SQLSTATE %s)", kind, where, cfg.User, pgErr.Message, pgErr.Code)
		}
		return &connectError{msg: msg, err: err}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		msg := fmt.Sprintf(side+": %s to %s timed out or was cancelled: check that the server is reachable", kind, where)
		if cfg.ConnectTimeout > 0 && errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf(side+": %s to %s got no answer within connect_timeout (%v): check that the server is reachable and not frozen or overloaded, or raise connect_timeout in the "+side+" URL", kind, where, cfg.ConnectTimeout)
		}
		return &connectError{msg: msg, err: err}
	}
	// The hosts' failures: pgx joins one per host (or address) it tried.
	var reasons []string
	dnsOnly := true
	for _, e := range leafErrors(err) {
		var dnsErr *net.DNSError
		var opErr *net.OpError
		var reason string
		switch {
		case errors.As(e, &dnsErr):
			reason = fmt.Sprintf("cannot resolve host %q: %v", dnsErr.Name, dnsErr.Err)
		case errors.As(e, &opErr):
			dnsOnly = false
			reason = opErr.Err.Error()
			if opErr.Addr != nil {
				reason = fmt.Sprintf("%s: %v", opErr.Addr, opErr.Err)
			}
		}
		if reason == "" {
			reasons = nil // something else: said as pgx says it, below
			break
		}
		// pgx tries a host twice with sslmode prefer or allow.
		if !slices.Contains(reasons, reason) {
			reasons = append(reasons, reason)
		}
	}
	switch {
	case len(reasons) == 0:
	case len(hosts) > 1:
		return &connectError{msg: fmt.Sprintf(side+": cannot reach any of the hosts %s (%s): check the hosts and ports in the "+side+" URL and that a server is running", where, strings.Join(reasons, "; ")), err: err}
	case dnsOnly:
		return &connectError{msg: fmt.Sprintf(side+": %s: fix the host in the "+side+" URL", reasons[0]), err: err}
	default:
		var opErr *net.OpError
		errors.As(err, &opErr)
		return &connectError{msg: fmt.Sprintf(side+": cannot reach %s: %v: check the host and port in the "+side+" URL and that the server is running", where, opErr.Err), err: err}
	}
	// Whatever pgconn says after its "failed to connect to `user=… database=…`:"
	// prefix; it never contains the password.
	text := err.Error()
	if i := strings.Index(text, "`: "); i >= 0 {
		text = text[i+3:]
	}
	text = redact.New().With(cfg.Password).String(strings.ReplaceAll(strings.TrimSpace(text), "\n\t", "; "))
	return &connectError{msg: fmt.Sprintf(side+": %s to %s failed: %s", kind, where, text), err: err}
}

// hostPorts lists the host:port (or socket directory) of each host cfg
// connects to, in order and each once (pgx lists a host twice in a row for
// sslmode prefer or allow).
func hostPorts(cfg *pgconn.Config) []string {
	one := func(host string, port uint16) string {
		if strings.HasPrefix(host, "/") {
			return host
		}
		return net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	out := []string{one(cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks {
		if h := one(f.Host, f.Port); !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// leafErrors are the errors err joins (pgx joins one per host it tried), or
// err alone.
func leafErrors(err error) []error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			var out []error
			for _, x := range j.Unwrap() {
				out = append(out, leafErrors(x)...)
			}
			return out
		}
	}
	return []error{err}
}

// parseMajor reads the major version from server_version ("15.4 (Debian …)",
// "16beta1", "9.6.24"; for 9.x the major is reported as 9).
func parseMajor(version string) int {
	i := 0
	for i < len(version) && version[i] >= '0' && version[i] <= '9' {
		i++
	}
	major, err := strconv.Atoi(version[:i])
	if err != nil {
		return 0
	}
	return major
}

// ServerMajor is the source server's major version (10, 11, … 18).
func (c *ReplConn) ServerMajor() int { return c.major }

// ServerVersion is the server_version the server reported.
func (c *ReplConn) ServerVersion() string { return c.version }

// ProtoVersion is the highest pgoutput protocol version the server supports.
func (c *ReplConn) ProtoVersion() int { return ProtoVersionFor(c.major) }

// System is the IDENTIFY_SYSTEM result read at connect time (system id, timeline,
// WAL position then, database).
func (c *ReplConn) System() pglogrepl.IdentifySystemResult { return c.system }

// PgConn is the underlying connection, for SQL on the replication connection (for
// example BEGIN ISOLATION LEVEL REPEATABLE READ before a slot created with
// Snapshot "use"). Do not use it while a Stream runs.
func (c *ReplConn) PgConn() *pgconn.PgConn { return c.conn }

// Close ends the connection; a temporary slot it created is dropped by the server.
// A running Stream must have returned from Run first.
func (c *ReplConn) Close(ctx context.Context) error {
	if err := c.conn.Close(ctx); err != nil {
		return fmt.Errorf("source: close replication connection: %w", err)
	}
	return nil
}

// SlotOptions are the options of CreateSlot.
type SlotOptions struct {
	Temporary bool // dropped when the connection ends (or on error)
	TwoPhase  bool // decode prepared transactions at PREPARE time (PostgreSQL 15+)
	// Snapshot is what to do with the snapshot the slot starts from:
	//   "export"  export it; SlotInfo.SnapshotName names it for SET TRANSACTION SNAPSHOT
	//   "use"     use it in the current transaction of this connection (which must be
	//             inside BEGIN ISOLATION LEVEL REPEATABLE READ, see PgConn)
	//   "nothing" or "" do not export it
	Snapshot string
}

// SlotInfo is what CREATE_REPLICATION_SLOT returned.
type SlotInfo struct {
	Name string
	// ConsistentPoint is the LSN from which the slot streams changes: every
	// transaction committed after it is streamed, every one before it is in the
	// snapshot.
	ConsistentPoint LSN
	// SnapshotName is the exported snapshot ("" unless Snapshot was "export"). It
	// stays valid only while this ReplConn issues no other command and stays open:
	// other connections import it with
	//   BEGIN ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT '<name>';
	// and the copy must have imported it (in every copying transaction) before
	// StartReplication or any other command is sent on this connection.
	SnapshotName string
	TwoPhase     bool
}

// CreateSlot creates a logical replication slot decoding with pgoutput.
// See SlotInfo.SnapshotName for how long an exported snapshot lives.
func (c *ReplConn) CreateSlot(ctx context.Context, name string, o SlotOptions) (SlotInfo, error) {
	if c.streaming {
		return SlotInfo{}, errors.New("source: create slot: the connection is streaming")
	}
	if err := ValidateSlotName(name); err != nil {
		return SlotInfo{}, fmt.Errorf("source: create slot: %w", err)
	}
	sql, err := createSlotSQL(c.major, name, o)
	if err != nil {
		return SlotInfo{}, fmt.Errorf("source: create slot %q: %w", name, err)
	}
	res, err := pglogrepl.ParseCreateReplicationSlot(c.conn.Exec(ctx, sql))
	if err != nil {
		return SlotInfo{}, fmt.Errorf("source: create slot %q: %w", name, classifySlotError(name, err))
	}
	cp, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return SlotInfo{}, fmt.Errorf("source: create slot %q: consistent point %q: %w", name, res.ConsistentPoint, err)
	}
	return SlotInfo{Name: res.SlotName, ConsistentPoint: cp, SnapshotName: res.SnapshotName, TwoPhase: o.TwoPhase}, nil
}

// createSlotSQL builds CREATE_REPLICATION_SLOT in the syntax of the server: the
// parenthesized options list from 15 on (the only way to ask for TWO_PHASE, which
// pglogrepl does not offer), the keyword form before.
func createSlotSQL(major int, name string, o SlotOptions) (string, error) {
	var b strings.Builder
	b.WriteString("CREATE_REPLICATION_SLOT ")
	b.WriteString(name)
	if o.Temporary {
		b.WriteString(" TEMPORARY")
	}
	b.WriteString(" LOGICAL pgoutput")
	snapshot := o.Snapshot
	if snapshot == "" {
		snapshot = "nothing"
	}
	if major >= 15 {
		switch snapshot {
		case "export", "nothing", "use":
		default:
			return "", fmt.Errorf("snapshot action %q is not one of export, nothing, use", o.Snapshot)
		}
		fmt.Fprintf(&b, " (SNAPSHOT '%s'", snapshot)
		if o.TwoPhase {
			b.WriteString(", TWO_PHASE true")
		}
		b.WriteString(")")
		return b.String(), nil
	}
	if o.TwoPhase {
		return "", fmt.Errorf("two-phase decoding needs PostgreSQL 15 or newer (server is %d): set PGRELAY_TWO_PHASE=off: %w", major, ErrUnsupported)
	}
	switch snapshot {
	case "export":
		b.WriteString(" EXPORT_SNAPSHOT")
	case "nothing":
		b.WriteString(" NOEXPORT_SNAPSHOT")
	case "use":
		b.WriteString(" USE_SNAPSHOT")
	default:
		return "", fmt.Errorf("snapshot action %q is not one of export, nothing, use", o.Snapshot)
	}
	return b.String(), nil
}

// classifyPgError wraps server errors that callers act on with their sentinel.
// slot names the slot involved, if any, for the fix it prints.
func classifyPgError(err error, slot string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	if slot == "" {
		slot = "<slot>"
	}
	switch {
	case pgErr.Code == "55006" && strings.Contains(pgErr.Message, "replication slot"):
		return fmt.Errorf("%w: %s: another process streams from it; pgrelay waits and retries until it is free", ErrSlotInUse, pgErr.Message)
	case pgErr.Code == "42704" && strings.Contains(pgErr.Message, "replication slot"):
		return fmt.Errorf("%w: %s", ErrSlotNotFound, pgErr.Message)
	case pgErr.Code == "42704" && strings.Contains(pgErr.Message, "publication"):
		return fmt.Errorf("%w: %s: create it (CREATE PUBLICATION …) or fix PGRELAY_PUBLICATION", ErrPublicationMissing, pgErr.Message)
	case pgErr.Code == "55000" && (strings.Contains(pgErr.Detail, "invalidated") || strings.Contains(pgErr.Message, "invalidated")):
		return fmt.Errorf("%w: %s (%s): drop it with SELECT pg_drop_replication_slot(%s); and seed the target again", ErrSlotInvalidated, pgErr.Message, pgErr.Detail, pgquote.Literal(slot))
	case pgErr.Code == "55000" && strings.Contains(pgErr.Message, "wal_level"):
		return fmt.Errorf("%w: %s: run ALTER SYSTEM SET wal_level = logical; then restart the server", ErrWALLevel, pgErr.Message)
	case pgErr.Code == "53400" && strings.Contains(pgErr.Message, "replication slots"):
		return fmt.Errorf("%w: %s: raise max_replication_slots (restart needed) or drop an unused slot", ErrNoFreeSlot, pgErr.Message)
	case pgErr.Code == "42501" && strings.Contains(pgErr.Message, "replication"):
		return fmt.Errorf("%w: %s: run ALTER ROLE <user> REPLICATION; as a superuser", ErrNoReplicationRole, pgErr.Message)
	case pgErr.Code == "XX000" && strings.HasPrefix(pgErr.Message, "invalid memory alloc request size"):
		// pgoutput sends values in text form, a bytea as hex: twice its size,
		// over PostgreSQL's 1 GB allocation limit for one over 512 MiB.
		return fmt.Errorf("%w: the source cannot send a value of the next transaction: in text form, which pgrelay streams, it is over PostgreSQL's 1 GB limit (a bytea over 512 MiB, sent as hex, or a value near 1 GB); no later transaction can come through this slot: make such values smaller on the source, then run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew", err)
	case strings.Contains(pgErr.Message, "could not map filenumber") || strings.Contains(pgErr.Message, "could not map filenode"):
		// Seen on 16 and 18: DDL in a rolled-back savepoint of a transaction
		// decoded in streaming mode.
		return fmt.Errorf("%w: the source's decoder failed on a large transaction with DDL in a rolled-back savepoint (a PostgreSQL bug of streaming mode): run with PGRELAY_STREAMING=off, which decodes large transactions at commit, until past it", err)
	}
	return err
}

func classifySlotError(name string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42710" {
		return fmt.Errorf("%w: %s: use it, or drop it with SELECT pg_drop_replication_slot(%s);", ErrSlotExists, pgErr.Message, pgquote.Literal(name))
	}
	if errors.As(err, &pgErr) && pgErr.Code == "40001" && strings.Contains(pgErr.Message, "snapshot too large") {
		// More transaction ids in progress (prepared transactions and their
		// subtransactions included) than an exported snapshot holds: it
		// passes once some of them end.
		return fmt.Errorf("%w: %w (prepared transactions and subtransactions included); pgrelay tries again, and if it keeps failing, end long or prepared transactions with many savepoints",
			ErrSnapshotTooLarge, err)
	}
	return classifyPgError(err, name)
}
