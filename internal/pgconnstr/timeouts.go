package pgconnstr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Bounds of a short-lived command's connections (pgrelay status, teardown):
// how long a connection may take to open, and a statement to run.
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultStatementTimeout = 30 * time.Second
)

// Timeouts are the bounds WithTimeouts gives a connection string; zero
// leaves one alone.
type Timeouts struct {
	Connect   time.Duration // connect_timeout (whole seconds, at least 1)
	Statement time.Duration // the statement_timeout the sessions start with
}

// WithTimeouts returns the PostgreSQL connection string s (URL or key=value)
// with t's bounds added where s does not set them: connect_timeout unless s
// (or PGCONNECT_TIMEOUT) sets it, statement_timeout unless s sets it as a
// setting or in options=-c statement_timeout=… (or PGOPTIONS does). A
// string of another kind (mysql://) is returned as it is.
func WithTimeouts(s string, t Timeouts) string {
	settings, url, ok := settingsOf(s)
	if !ok {
		return s
	}
	var add []string
	if _, set := settings["connect_timeout"]; !set && t.Connect > 0 && !envSet("PGCONNECT_TIMEOUT") {
		add = append(add, "connect_timeout="+strconv.Itoa(int(max(time.Second, t.Connect.Round(time.Second))/time.Second)))
	}
	if _, set := statementTimeout(settings); !set && t.Statement > 0 && !optionsSetStatementTimeout(os.Getenv("PGOPTIONS")) {
		add = append(add, "statement_timeout="+strconv.FormatInt(t.Statement.Milliseconds(), 10))
	}
	if len(add) == 0 {
		return s
	}
	if !url {
		return strings.TrimRight(s, " \t\n\r") + " " + strings.Join(add, " ")
	}
	sep := "&"
	if _, hasQuery, _ := urlQuery(s); !hasQuery {
		sep = "?"
	}
	return s + sep + strings.Join(add, "&")
}

func envSet(name string) bool {
	v, ok := os.LookupEnv(name)
	return ok && v != ""
}

// settingsOf reads the settings of a PostgreSQL connection string as pgx
// does (URL query parameters, or key=value pairs), best effort: a string it
// cannot read is pgx's to refuse. url tells which form s is; ok is false for
// a string of neither form.
func settingsOf(s string) (settings map[string]string, url bool, ok bool) {
	settings = map[string]string{}
	if query, _, isURL := urlQuery(s); isURL {
		for _, pair := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(pair, "=")
			if k = strings.TrimSpace(unescape(k)); k != "" {
				settings[k] = unescape(v)
			}
		}
		return settings, true, true
	}
	if strings.Contains(strings.ToLower(s), "://") || !strings.Contains(s, "=") {
		return nil, false, false
	}
	for rest := strings.TrimLeft(s, " \t\n\r\v\f"); rest != ""; rest = strings.TrimLeft(rest, " \t\n\r\v\f") {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 {
			break
		}
		key := strings.TrimSpace(rest[:eq])
		rest = strings.TrimLeft(rest[eq+1:], " \t\n\r\v\f")
		var val strings.Builder
		quoted := strings.HasPrefix(rest, "'")
		if quoted {
			rest = rest[1:]
		}
		i := 0
		for ; i < len(rest); i++ {
			c := rest[i]
			if quoted && c == '\'' || !quoted && strings.IndexByte(" \t\n\r\v\f", c) >= 0 {
				break
			}
			if c == '\\' && i+1 < len(rest) {
				i++
				c = rest[i]
			}
			val.WriteByte(c)
		}
		if quoted && i < len(rest) {
			i++ // the closing quote
		}
		rest = rest[i:]
		settings[key] = val.String()
	}
	return settings, false, true
}

// urlQuery returns the query of a postgres:// URL as pgx finds it (after the
// userinfo, which ends at the first '@' before any '/'), and whether it has
// one (a '?'); isURL is false for a string of another kind.
func urlQuery(s string) (query string, hasQuery, isURL bool) {
	lower := strings.ToLower(s)
	var p string
	switch {
	case strings.HasPrefix(lower, "postgres://"):
		p = s[len("postgres://"):]
	case strings.HasPrefix(lower, "postgresql://"):
		p = s[len("postgresql://"):]
	default:
		return "", false, false
	}
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		p = p[i+1:]
	}
	i := strings.IndexByte(p, '?')
	if i < 0 {
		return "", false, true
	}
	return p[i+1:], true, true
}

// unescape decodes the %XX escapes of s that are well formed.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// optionsStatementTimeout finds statement_timeout in a libpq options value
// (-c statement_timeout=5s, -cstatement_timeout=5s, --statement-timeout=5s).
var optionsStatementTimeout = regexp.MustCompile(`(?:^|\s)(?:-c\s*|--)statement[_-]timeout=(\S+)`)

func optionsSetStatementTimeout(options string) bool {
	return optionsStatementTimeout.MatchString(options)
}

// statementTimeout is the statement_timeout the sessions of settings start
// with: the setting itself, which the server applies after options, or
// options' -c statement_timeout=…; set is false when neither gives one.
func statementTimeout(settings map[string]string) (value string, set bool) {
	if v, ok := settings["statement_timeout"]; ok {
		return v, true
	}
	if m := optionsStatementTimeout.FindStringSubmatch(settings["options"]); m != nil {
		return m[1], true
	}
	return "", false
}

// gucDuration reads a time setting's value as the server does: a number
// with an optional unit (us, ms, s, min, h, d), milliseconds without one.
func gucDuration(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	if err != nil || n < 0 {
		return 0, false
	}
	unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := unit[strings.TrimSpace(v[i:])]
	if !ok || n*float64(u) > float64(1<<62) {
		return 0, false
	}
	return time.Duration(n * float64(u)), true
}

// replyGrace is how much longer than its statement_timeout a session waits
// for the server before it gives up: the server's own cancellation, which
// says more, comes first when the server runs.
func replyGrace(statementTimeout time.Duration) time.Duration {
	return time.Second + statementTimeout/10
}

// watchReplies bounds every wait for the server of a session that starts
// with a statement_timeout (not a replication connection: its stream is
// silent while the source is idle). statement_timeout ends a slow statement
// only on a server that runs; a server that is frozen (SIGSTOP, a suspended
// machine) keeps its TCP connection open and answers nothing, so the client
// stops waiting too, somewhat later.
func watchReplies(cfg *pgconn.Config) {
	v, set := statementTimeout(cfg.RuntimeParams)
	d, ok := gucDuration(v)
	if !set || !ok || d <= 0 {
		return
	}
	limit := d + replyGrace(d)
	prev := cfg.AfterNetConnect
	cfg.AfterNetConnect = func(ctx context.Context, c *pgconn.Config, conn net.Conn) (net.Conn, error) {
		if prev != nil {
			var err error
			if conn, err = prev(ctx, c, conn); err != nil {
				return nil, err
			}
		}
		if _, repl := c.RuntimeParams["replication"]; repl {
			return conn, nil
		}
		return &replyWatch{Conn: conn, limit: limit, statementTimeout: d}, nil
	}
}

// NoReplyError is the failure of a session whose server sent nothing for
// longer than its statement_timeout (and a grace) while pgrelay waited for it.
type NoReplyError struct {
	Addr             string
	Waited           time.Duration
	StatementTimeout time.Duration
}

func (e *NoReplyError) Error() string {
	return fmt.Sprintf("the server at %s sent nothing for %v, longer than statement_timeout (%v) allows: it is frozen, overloaded or cut off; raise statement_timeout in the URL (options=-c statement_timeout=…) if it is only slow",
		e.Addr, e.Waited, e.StatementTimeout)
}

// Timeout and Temporary make a NoReplyError a net.Error that timed out, as
// pgx and pgrelay's retries expect of a connection that stopped answering.
func (e *NoReplyError) Timeout() bool   { return true }
func (e *NoReplyError) Temporary() bool { return true }

// replyWatch is a connection whose reads end after limit without data.
type replyWatch struct {
	net.Conn
	limit            time.Duration
	statementTimeout time.Duration

	mu           sync.Mutex
	readDeadline time.Time     // pgx's own, which stays in force
	gaveUp       *NoReplyError // once set, every read fails with it
}

func (c *replyWatch) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDeadline = t
	return c.Conn.SetDeadline(t)
}

func (c *replyWatch) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDeadline = t
	return c.Conn.SetReadDeadline(t)
}

func (c *replyWatch) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.gaveUp != nil {
		c.mu.Unlock()
		return 0, c.gaveUp
	}
	own := time.Now().Add(c.limit)
	theirs := c.readDeadline
	d := own
	if !theirs.IsZero() && theirs.Before(own) {
		d = theirs
	}
	err := c.Conn.SetReadDeadline(d)
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(own) {
		// pgx reads again after a timeout (its own deadlines are timeouts
		// it retries): the next reads fail at once.
		c.mu.Lock()
		defer c.mu.Unlock()
		if theirs = c.readDeadline; theirs.IsZero() || !theirs.Before(own) {
			c.gaveUp = &NoReplyError{Addr: c.RemoteAddr().String(), Waited: c.limit, StatementTimeout: c.statementTimeout}
			return n, c.gaveUp
		}
	}
	return n, err
}
