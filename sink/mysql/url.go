package mysql

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// urlParams are the query parameters a target URL may carry, with what they
// set; anything else is refused, so a typo is not silently ignored.
var urlParams = map[string]string{
	"tls":                     "TLS: true, false, skip-verify or preferred, as the driver's tls=",
	"tls-ca":                  "a PEM file of the CA certificates that sign the server's (implies tls=true)",
	"tls-cert":                "a PEM client certificate (with tls-key)",
	"tls-key":                 "the PEM key of tls-cert",
	"tls-server-name":         "the name to verify the server's certificate against",
	"socket":                  "a Unix socket to connect through instead of host:port",
	"timeout":                 "the dial timeout, e.g. 10s",
	"readTimeout":             "the I/O read timeout, e.g. 1h",
	"writeTimeout":            "the I/O write timeout",
	"allowCleartextPasswords": "true to allow the mysql_clear_password plugin (only over TLS or a socket)",
	"serverPubKey":            "a registered server public key (caching_sha2_password without TLS)",
}

// ParseURL turns a target URL, mysql://user:password@host:port/db?params
// (the password percent-encoded; a Unix socket as
// mysql://user@%2Fpath%2Fto%2Fmysqld.sock/db or ?socket=/path), into the
// driver's configuration with pgrelay's own settings. The database is
// required: source schema public lands there, with pgrelay's metadata tables.
// Errors never show the password.
func ParseURL(raw string) (*gomysql.Config, error) {
	raw, socket := cutSocketHost(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("sink/mysql: the target URL does not parse: expected mysql://user:password@host:port/db (percent-encode special characters of the password)")
	}
	if u.Scheme != "mysql" {
		return nil, fmt.Errorf("sink/mysql: target URL scheme %q: expected mysql://user:password@host:port/db", u.Scheme)
	}
	cfg := gomysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if cfg.DBName == "" || strings.Contains(cfg.DBName, "/") {
		return nil, errors.New("sink/mysql: the target URL names no database: expected mysql://user:password@host:port/db")
	}
	host := u.Host
	if socket != "" {
		host = socket
	}
	q := u.Query()
	var unknown []string
	for k := range q {
		if _, ok := urlParams[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := make([]string, 0, len(urlParams))
		for k := range urlParams {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("sink/mysql: target URL parameter %s is not one pgrelay takes (it takes %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	switch {
	case q.Get("socket") != "":
		cfg.Net, cfg.Addr = "unix", q.Get("socket")
	case strings.HasPrefix(host, "/"):
		cfg.Net, cfg.Addr = "unix", host
	case host == "":
		return nil, errors.New("sink/mysql: the target URL names no host: expected mysql://user:password@host:port/db, or ?socket=/path for a Unix socket")
	default:
		cfg.Net = "tcp"
		if _, _, err := net.SplitHostPort(host); err != nil {
			host = net.JoinHostPort(strings.Trim(host, "[]"), "3306")
		}
		cfg.Addr = host
	}
	for name, dst := range map[string]*time.Duration{"timeout": &cfg.Timeout, "readTimeout": &cfg.ReadTimeout, "writeTimeout": &cfg.WriteTimeout} {
		if v := q.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("sink/mysql: target URL parameter %s=%q is not a duration (e.g. 10s)", name, v)
			}
			*dst = d
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if v := q.Get("allowCleartextPasswords"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("sink/mysql: target URL parameter allowCleartextPasswords=%q is not true or false", v)
		}
		cfg.AllowCleartextPasswords = b
	}
	cfg.ServerPubKey = q.Get("serverPubKey")
	if err := tlsConfig(cfg, q); err != nil {
		return nil, err
	}
	// pgrelay's own: literals are rendered by the sink (no placeholders in
	// apply statements; metadata queries interpolate theirs), several
	// statements go in one round trip, an UPDATE reports the rows it found
	// (a row updated to the values it has is not missing), times are text.
	cfg.InterpolateParams = true
	cfg.MultiStatements = true
	cfg.ClientFoundRows = true
	cfg.ParseTime = false
	cfg.Loc = time.UTC
	// A write a read-only server refuses is the sink's to classify
	// (sink.ErrReadOnly, with what makes it so), not a bad connection.
	cfg.RejectReadOnly = false
	cfg.Logger = discardLogger{}
	return cfg, nil
}

// cutSocketHost takes a percent-encoded socket path out of the host part
// (mysql://user@%2Fpath%2Fmysqld.sock/db), which net/url refuses there: it
// returns the URL with host localhost in its place, and the path.
func cutSocketHost(raw string) (string, string) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, ""
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		// The host ends at the path; a socket path's slashes are encoded.
		authority, path = rest[:i], rest[i:]
	}
	userinfo, host := "", authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, host = authority[:at+1], authority[at+1:]
	}
	if !strings.HasPrefix(strings.ToUpper(host), "%2F") {
		return raw, ""
	}
	socket, err := url.PathUnescape(host)
	if err != nil {
		return raw, ""
	}
	return scheme + "://" + userinfo + "localhost" + path, socket
}

// tlsConfig applies the URL's TLS parameters.
func tlsConfig(cfg *gomysql.Config, q url.Values) error {
	mode := q.Get("tls")
	ca, cert, key, serverName := q.Get("tls-ca"), q.Get("tls-cert"), q.Get("tls-key"), q.Get("tls-server-name")
	if ca == "" && cert == "" && key == "" && serverName == "" {
		switch strings.ToLower(mode) {
		case "", "false", "0":
			cfg.TLSConfig = "false"
		case "true", "1":
			cfg.TLSConfig = "true"
		case "skip-verify":
			cfg.TLSConfig = "skip-verify"
		case "preferred":
			cfg.TLSConfig = "preferred"
		default:
			return fmt.Errorf("sink/mysql: target URL parameter tls=%q: expected true, false, skip-verify or preferred (or tls-ca=file for a CA of your own)", mode)
		}
		return nil
	}
	if m := strings.ToLower(mode); m != "" && m != "true" && m != "1" && m != "skip-verify" {
		return fmt.Errorf("sink/mysql: target URL parameter tls=%q with tls-ca, tls-cert or tls-server-name: expected tls=true (or leave it out)", mode)
	}
	tc := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12, InsecureSkipVerify: strings.EqualFold(mode, "skip-verify")}
	if tc.ServerName == "" && cfg.Net == "tcp" {
		tc.ServerName, _, _ = net.SplitHostPort(cfg.Addr)
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return fmt.Errorf("sink/mysql: target URL parameter tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("sink/mysql: target URL parameter tls-ca: %s holds no PEM certificate", ca)
		}
		tc.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return errors.New("sink/mysql: target URL parameters tls-cert and tls-key go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return fmt.Errorf("sink/mysql: target URL parameters tls-cert and tls-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	cfg.TLS = tc
	return nil
}

// discardLogger silences the driver's own log lines ("closing bad idle
// connection"): the sink reports what matters.
type discardLogger struct{}

func (discardLogger) Print(...any) {}

var loggerOnce sync.Once

// quietDriver turns the driver's package-level logger off once.
func quietDriver() {
	loggerOnce.Do(func() { _ = gomysql.SetLogger(discardLogger{}) })
}

// OnThisMachine reports whether the target URL names a server on this
// machine (a Unix socket, localhost, a loopback address), which then shares
// its cores with pgrelay. Its error is ParseURL's.
func OnThisMachine(url string) (bool, error) {
	cfg, err := ParseURL(url)
	if err != nil {
		return false, err
	}
	if cfg.Net == "unix" {
		return true, nil
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return false, nil
	}
	ip := net.ParseIP(host)
	return strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback(), nil
}
