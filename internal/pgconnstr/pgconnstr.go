// Package pgconnstr parses PostgreSQL connection strings (URLs and key=value
// settings) with pgx and then takes the libpq settings pgx does not know
// itself. pgx passes every setting it does not know to the server as a
// run-time parameter, and the server ends the connection on the first it does
// not know either ("unrecognized configuration parameter \"hostaddr\""): a
// connection string that works with psql would fail with that message. Here
// hostaddr, fallback_application_name and the keepalives settings do what
// libpq does with them, and the libpq settings that cannot be honoured are
// refused with an error that names them. Sessions are named "pgrelay" unless
// the string names them. WithTimeouts bounds a short-lived command's
// connections, and a session that starts with a statement_timeout stops
// waiting for a server that answers nothing for longer (timeouts.go).
package pgconnstr

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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultApplicationName is the application_name of pgrelay's sessions when
// the connection string sets neither application_name nor
// fallback_application_name.
const DefaultApplicationName = "pgrelay"

// unsupported are libpq client settings pgx has no equivalent for.
var unsupported = []string{
	"gssencmode", "gsslib", "gssdelegation", "requirepeer", "requiressl",
	"sslcompression", "sslcrl", "sslcrldir", "sslkeylogfile", "load_balance_hosts",
	"tcp_user_timeout", "oauth_issuer", "oauth_client_id", "oauth_client_secret",
	"oauth_scope", "scram_client_key", "scram_server_key",
}

// Parse parses a connection string into a pgconn configuration.
func Parse(s string) (*pgconn.Config, error) {
	cfg, err := pgconn.ParseConfig(s)
	if err != nil {
		return nil, err
	}
	if _, err := fix(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Check parses s as Parse does and tells its failure apart: a string the
// driver cannot parse gives its reason ("cannot be parsed" when it gives
// none; it may quote the password), any other failure (a libpq setting
// pgrelay cannot honour) reason "" and the error.
func Check(s string) (reason string, err error) {
	_, err = Parse(s)
	if err == nil {
		return "", nil
	}
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) { // pgx's own errors are all ParseConfigErrors
		return "", err
	}
	// pgx's reason is its inner error, or else what follows the connection
	// string its message quotes (redacted only in part).
	reason = "cannot be parsed"
	if inner := pce.Unwrap(); inner != nil {
		reason = inner.Error()
	} else if text := pce.Error(); strings.LastIndex(text, "`: ") >= 0 {
		reason = text[strings.LastIndex(text, "`: ")+3:]
	}
	return reason, err
}

// SocketHostURL rewrites a postgres URL whose host is a percent-encoded
// Unix-socket directory, as libpq takes it (postgres://u@%2Fvar%2Frun%2Fpg:5432/db),
// into the form Go's URL parser and pgx take (postgres://u@:5432/db?host=%2Fvar%2Frun%2Fpg).
// Anything else is returned as it is.
func SocketHostURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !strings.EqualFold(scheme, "postgres") && !strings.EqualFold(scheme, "postgresql") {
		return s
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth, tail := rest[:end], rest[end:]
	userinfo, hostport := "", auth
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		userinfo, hostport = auth[:i+1], auth[i+1:]
	}
	if !strings.HasPrefix(strings.ToLower(hostport), "%2f") {
		return s
	}
	host, port := hostport, ""
	if i := strings.LastIndex(hostport, ":"); i >= 0 {
		host, port = hostport[:i], hostport[i:]
	}
	dir, err := url.PathUnescape(host)
	if err != nil {
		return s
	}
	path, query, _ := strings.Cut(tail, "?")
	q := "host=" + url.QueryEscape(dir)
	if query != "" {
		q += "&" + query
	}
	return scheme + "://" + userinfo + port + path + "?" + q
}

// ParsePgx parses a connection string into a pgx configuration.
func ParsePgx(s string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(s)
	if err != nil {
		return nil, err
	}
	if _, err := fix(&cfg.Config); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Hosts lists the hosts a connection string connects to, in order and each
// once: a Unix socket directory, a name, or the address hostaddr gives the
// name.
func Hosts(s string) ([]string, error) {
	cfg, err := pgconn.ParseConfig(s)
	if err != nil {
		return nil, err
	}
	addrs, err := fix(cfg)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, h := range append([]string{cfg.Host}, fallbackHosts(cfg)...) {
		if a, ok := addrs[h]; ok {
			h = a
		}
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// OnThisMachine reports whether every host a PostgreSQL URL names is this
// machine: a Unix socket, localhost or a loopback address. An URL pgx cannot
// parse (not PostgreSQL's) is taken to name another machine.
func OnThisMachine(url string) bool {
	hosts, err := Hosts(url)
	if err != nil {
		return false
	}
	for _, h := range hosts {
		ip := net.ParseIP(h)
		if !strings.HasPrefix(h, "/") && !strings.EqualFold(h, "localhost") && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}

func fallbackHosts(cfg *pgconn.Config) []string {
	hosts := make([]string, len(cfg.Fallbacks))
	for i, f := range cfg.Fallbacks {
		hosts[i] = f.Host
	}
	return hosts
}

// fix applies the settings pgx left in cfg.RuntimeParams and returns the
// address hostaddr gives each host name.
func fix(cfg *pgconn.Config) (map[string]string, error) {
	p := cfg.RuntimeParams
	for _, k := range unsupported {
		if _, ok := p[k]; ok {
			return nil, fmt.Errorf("the libpq setting %s is not supported by pgrelay's PostgreSQL driver: remove it from the connection string", k)
		}
	}
	// application_name, else fallback_application_name, else pgrelay: what
	// pg_stat_activity and pg_stat_replication show for pgrelay's sessions.
	if _, set := p["application_name"]; !set {
		p["application_name"] = DefaultApplicationName
		if v, ok := p["fallback_application_name"]; ok {
			p["application_name"] = v
		}
	}
	delete(p, "fallback_application_name")
	if err := keepalives(cfg); err != nil {
		return nil, err
	}
	watchReplies(cfg)
	v, ok := p["hostaddr"]
	if !ok {
		return nil, nil
	}
	delete(p, "hostaddr")
	return hostaddr(cfg, v)
}

// keepalives applies keepalives, keepalives_idle, keepalives_interval and
// keepalives_count (libpq: on by default; the others in seconds, a count)
// to the dialer.
func keepalives(cfg *pgconn.Config) error {
	p := cfg.RuntimeParams
	ka := net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}
	given := false
	for _, s := range []struct {
		key string
		set func(n int)
	}{
		{"keepalives", func(n int) { ka.Enable = n != 0 }},
		{"keepalives_idle", func(n int) { ka.Idle = time.Duration(n) * time.Second }},
		{"keepalives_interval", func(n int) { ka.Interval = time.Duration(n) * time.Second }},
		{"keepalives_count", func(n int) { ka.Count = n }},
	} {
		v, ok := p[s.key]
		if !ok {
			continue
		}
		delete(p, s.key)
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q is not a whole number of 0 or more: fix it in the connection string", s.key, v)
		}
		s.set(n)
		given = true
	}
	if !given {
		return nil
	}
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAliveConfig: ka}
	if !ka.Enable {
		d.KeepAlive = -1
	}
	cfg.DialFunc = d.DialContext
	return nil
}

// hostaddr makes each host connect to its address in the comma list v, as
// libpq does: the name still serves TLS verification and the password file.
func hostaddr(cfg *pgconn.Config, v string) (map[string]string, error) {
	// With sslmode prefer or allow, pgx lists each host twice in a row.
	hosts := []string{cfg.Host}
	for _, h := range fallbackHosts(cfg) {
		if h != hosts[len(hosts)-1] {
			hosts = append(hosts, h)
		}
	}
	addrs := strings.Split(v, ",")
	if len(addrs) != len(hosts) {
		return nil, fmt.Errorf("hostaddr lists %d addresses for %d hosts: give one address per host", len(addrs), len(hosts))
	}
	m := map[string]string{}
	for i, a := range addrs {
		a = strings.TrimSpace(a)
		if net.ParseIP(a) == nil {
			return nil, fmt.Errorf("hostaddr %q is not an IP address: give a numeric address, or put the name in host", a)
		}
		h := hosts[i]
		if strings.HasPrefix(h, "/") {
			return nil, fmt.Errorf("hostaddr %s is given without a host name: put the address in host (host=%s) instead", a, a)
		}
		if prev, ok := m[h]; ok && prev != a {
			return nil, fmt.Errorf("host %s is listed twice with different addresses in hostaddr (%s, %s): list it once", h, prev, a)
		}
		m[h] = a
	}
	next := cfg.LookupFunc
	cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) {
		if a, ok := m[host]; ok {
			return []string{a}, nil
		}
		return next(ctx, host)
	}
	return m, nil
}
