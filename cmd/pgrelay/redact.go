package main

import (
	"net/url"
	"regexp"
	"strings"
)

// redacted replaces a password wherever pgrelay prints a connection string.
const redacted = "xxxxx"

var (
	// kvPassword matches password=... in a key=value connection string, quoted
	// (with backslash escapes) or not.
	kvPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s]*)`)
	// queryPassword matches password=... among URL query parameters.
	queryPassword = regexp.MustCompile(`(?i)([?&]password=)([^&#]*)`)
)

// redactURL returns the connection string s (URL or key=value form) with its
// password replaced. It never fails: when s is too malformed to tell, it errs on
// the side of hiding more.
func redactURL(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return kvPassword.ReplaceAllString(s, "${1}"+redacted)
	}
	head, rest := s[:i+3], s[i+3:]
	// The password runs from the first ':' of the userinfo to the '@' that ends
	// it: normally the last '@' of the authority. A password with an unescaped
	// '/', '?', '#' or '@' makes that ambiguous; then the last '@' anywhere is
	// taken, hiding too much rather than too little.
	if firstAt := strings.IndexByte(rest, '@'); firstAt >= 0 {
		if colon := strings.IndexByte(rest[:firstAt], ':'); colon >= 0 {
			end := len(rest)
			if j := strings.IndexAny(rest, "/?#"); j >= 0 {
				end = j
			}
			at := strings.LastIndexByte(rest[:end], '@')
			if at < 0 || strings.IndexByte(rest[end:], '@') >= 0 {
				at = strings.LastIndexByte(rest, '@')
			}
			if at > colon {
				rest = rest[:colon+1] + redacted + rest[at:]
			}
		}
	}
	return head + queryPassword.ReplaceAllString(rest, "${1}"+redacted)
}

// passwordOf extracts the password of a connection string (either form), or "".
// It feeds redactSecrets, the last line of defence for text pgrelay did not
// build itself (driver errors).
func passwordOf(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if u, err := url.Parse(s); err == nil {
			if p, ok := u.User.Password(); ok {
				return p
			}
			return u.Query().Get("password")
		}
		return ""
	}
	m := kvPassword.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	p := m[2]
	if strings.HasPrefix(p, "'") {
		p = strings.TrimSuffix(strings.TrimPrefix(p, "'"), "'")
		p = strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(p)
	}
	return p
}

// minSecretLen is the shortest password redactSecrets hides by substitution:
// replacing every "a" of a message would make it unreadable and tell the
// password anyway.
const minSecretLen = 4

// redactSecrets replaces every occurrence of each secret in text.
func redactSecrets(text string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			text = strings.ReplaceAll(text, s, redacted)
			if e := url.QueryEscape(s); e != s {
				text = strings.ReplaceAll(text, e, redacted)
			}
		}
	}
	return text
}
