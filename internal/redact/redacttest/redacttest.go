// Package redacttest finds secrets in what a program printed, for tests.
package redacttest

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Fragment is the number of characters from which a piece of a secret
// counts as shown.
const Fragment = 4

// Secrets are passwords made of every character with a meaning in a URL or
// in key=value settings, each between runs of letters that no message
// holds by chance, and one of non-ASCII letters.
var Secrets = func() []string {
	special := []string{"@", ":", "/", "?", "#", "%", "&", "=", "+", " ", "'", `"`, `\`, "%4", "%zz", "@[::1]:1/", "é"}
	var out []string
	for i, c := range special {
		out = append(out, "Qv"+strconv.Itoa(i)+"kZw"+c+"jXq"+c+"Pyf")
	}
	return append(out,
		`Kq@Wz:Jv/Xy?Fb#Gd%Hn&Lm=Tp+Rc Ys'Ue"Io\Zk`,
		"Ñœ漢字Жиз©ğ",
	)
}()

// ConnStrings are the ways password pw is written in the connection strings
// pgrelay takes, for user at hostPort (a loopback address: a piece of the
// password may become the host, never a name to look up) and database db:
// as it is (what a user pastes) and escaped as each form wants. The names
// of the MySQL forms start with "mysql".
func ConnStrings(user, pw, hostPort, db string) map[string]string {
	q := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw)
	host, port, _ := strings.Cut(hostPort, ":")
	return map[string]string{
		"url raw":             "postgres://" + user + ":" + pw + "@" + hostPort + "/" + db + "?sslmode=disable",
		"url escaped":         (&url.URL{Scheme: "postgres", User: url.UserPassword(user, pw), Host: hostPort, Path: "/" + db, RawQuery: "sslmode=disable"}).String(),
		"url query raw":       "postgres://" + user + "@" + hostPort + "/" + db + "?password=" + pw + "&sslmode=disable",
		"url query escaped":   "postgres://" + user + "@" + hostPort + "/" + db + "?password=" + percentEncode(pw) + "&sslmode=disable",
		"url sslpassword raw": "postgres://" + user + ":" + percentEncode(pw) + "@" + hostPort + "/" + db + "?sslpassword=" + pw + "&sslmode=disable",
		"kv raw":              fmt.Sprintf("host=%s port=%s user=%s password=%s dbname=%s sslmode=disable", host, port, user, pw, db),
		"kv quoted":           fmt.Sprintf("host=%s port=%s user=%s password='%s' dbname=%s sslmode=disable", host, port, user, q, db),
		"kv sslpassword":      fmt.Sprintf("host=%s port=%s user=%s password='%s' sslpassword='%s' dbname=%s sslmode=disable", host, port, user, q, q, db),
		"kv sslpassword raw":  fmt.Sprintf("host=%s sslpassword=%s port=abc", host, pw),
		"mysql url raw":       "mysql://" + user + ":" + pw + "@" + hostPort + "/" + db + "?tls=false",
		"mysql url escaped":   (&url.URL{Scheme: "mysql", User: url.UserPassword(user, pw), Host: hostPort, Path: "/" + db}).String(),
		"mysql dsn":           user + ":" + pw + "@tcp(" + hostPort + ")/" + db + "?parseTime=true",
	}
}

// percentEncode escapes every byte of s but letters, digits and -._~, as
// libpq reads a URL ('+' is a plus, not a space).
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

var uEscape = regexp.MustCompile(`\\u([0-9a-fA-F]{4})`)

// Leak returns the first piece of Fragment or more characters of secret
// that out shows, in any case, as printed or with the escapes of %q, JSON
// and URLs undone; "" when there is none.
func Leak(out, secret string) string {
	readings := []string{out}
	if u, err := url.PathUnescape(out); err == nil {
		readings = append(readings, u)
	}
	un := uEscape.ReplaceAllStringFunc(out, func(m string) string {
		n, _ := strconv.ParseUint(m[2:], 16, 32)
		return string(rune(n))
	})
	un = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\'`, `'`, `\t`, "\t", `\n`, "\n").Replace(un)
	readings = append(readings, un)
	r := []rune(secret)
	for i := 0; i+Fragment <= len(r); i++ {
		piece := strings.ToLower(string(r[i : i+Fragment]))
		for _, s := range readings {
			if strings.Contains(strings.ToLower(s), piece) {
				return string(r[i : i+Fragment])
			}
		}
	}
	return ""
}
