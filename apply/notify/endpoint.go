package notify

import (
	"net/url"
	"strings"
)

// Endpoint is what events say of a connection string (a postgres://,
// postgresql:// or mysql:// URL, or libpq key=value settings):
// host:port/database. It never includes the user or the password: everything
// up to the URL's last '@' is left out, so a password with an unescaped '/' or
// '@' cannot leak either.
func Endpoint(conn string) string {
	conn = strings.TrimSpace(conn)
	if conn == "" {
		return ""
	}
	var host, port, db string
	if i := strings.Index(conn, "://"); i >= 0 {
		rest := conn[i+3:]
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = rest[at+1:]
		}
		rest, _, _ = strings.Cut(rest, "#")
		rest, query, _ := strings.Cut(rest, "?")
		hostport, path, _ := strings.Cut(rest, "/")
		host = hostport
		if p, err := url.PathUnescape(path); err == nil {
			db = p
		}
		if q, err := url.ParseQuery(query); err == nil {
			if host == "" {
				host, port = q.Get("host"), q.Get("port")
			}
			if db == "" {
				db = q.Get("dbname")
			}
		}
	} else {
		kv := keyValues(conn)
		host, port, db = kv["host"], kv["port"], kv["dbname"]
		if host == "" {
			host = kv["hostaddr"]
		}
	}
	if port != "" {
		host += ":" + port
	}
	switch {
	case host == "":
		return db
	case db == "":
		return host
	}
	return host + "/" + db
}

// keyValues parses libpq key=value settings: values may be single-quoted,
// with \' and \\ inside.
func keyValues(s string) map[string]string {
	out := make(map[string]string)
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := s[start:i]
		skip()
		if i >= len(s) || s[i] != '=' || key == "" {
			return out
		}
		i++
		skip()
		var val strings.Builder
		if i < len(s) && s[i] == '\'' {
			for i++; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
			}
			i++
		} else {
			for ; i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
			}
		}
		out[strings.ToLower(key)] = val.String()
	}
}

// passwordOf is the password a connection string carries (user:pass@ or
// password= in a URL, password= in key=value settings), or "".
func passwordOf(conn string) string {
	conn = strings.TrimSpace(conn)
	if i := strings.Index(conn, "://"); i >= 0 {
		rest := conn[i+3:]
		at := strings.LastIndexByte(rest, '@')
		if at >= 0 {
			if _, pass, ok := strings.Cut(rest[:at], ":"); ok {
				if p, err := url.PathUnescape(pass); err == nil {
					return p
				}
				return pass
			}
		}
		if _, query, ok := strings.Cut(rest, "?"); ok {
			if q, err := url.ParseQuery(query); err == nil {
				return q.Get("password")
			}
		}
		return ""
	}
	return keyValues(conn)["password"]
}
