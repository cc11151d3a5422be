// Package redact keeps the secrets of connection strings out of everything
// pgrelay prints. It knows every secret-bearing setting of the connection
// strings pgrelay takes (libpq URLs and key=value settings, mysql:// URLs,
// go-sql-driver DSNs), and reads them as loosely as any parser might: a
// password with an unescaped '@', '/', '?', '#' or '&' is split by the
// parsers into a host, a port, a database or a key, whose error messages then
// quote a piece of it. So a secret is everything any reading could take for
// one, and a Redactor hides every fragment of MinFragment or more bytes of it,
// wherever it appears in a text.
package redact

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mask replaces a secret, or a fragment of one, in what pgrelay prints.
const Mask = "xxxxx"

// MinFragment is the length in bytes from which a piece of a secret is hidden
// wherever it appears in a text. Shorter pieces ("a", "ab1") are hidden only
// where a connection string is quoted: replacing them everywhere would make
// every message unreadable and tell the secret anyway.
const MinFragment = 4

// SecretKeys are the connection settings whose values are secrets, as
// key=value settings or URL query parameters (case does not matter). A
// URL's or a DSN's userinfo password is a secret too.
var SecretKeys = []string{"password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"}

// kvKey finds a secret key=value setting's key and its '='.
var kvKey = regexp.MustCompile(`(?i)(?:^|[\s?&])(` + strings.Join(SecretKeys, "|") + `)\s*=\s*`)

// nextKey is a key= that starts another setting: libpq's keys and the
// server's parameters are lower case, so "&Ab=" or " Ab=" is taken for part
// of a secret value (an unescaped "&ab=" in a query parameter's value, or
// " ab=" in an unquoted key=value one, is read as a setting by every parser).
var nextKey = regexp.MustCompile(`^[a-z_][a-z0-9_.]*\s*=`)

// span is a byte range [start, end) of a connection string.
type span struct{ start, end int }

// ConnString returns the connection string s (postgres:// or mysql:// URL,
// key=value settings, go-sql-driver DSN, or a malformed mix) with every
// secret replaced by Mask, for quoting in a message. It never fails: where s
// is too malformed to tell, it hides more.
func ConnString(s string) string {
	spans := secretSpans(s)
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		b.WriteString(Mask)
		last = sp.end
	}
	b.WriteString(s[last:])
	// A secret also written elsewhere in s (a password copied into
	// application_name) goes too.
	return New(s).String(b.String())
}

// Secrets lists the secrets of the connection string s as written in it,
// and as the parsers decode them (percent-decoded, unquoted).
func Secrets(s string) []string {
	var out []string
	for _, sp := range secretSpans(s) {
		raw := s[sp.start:sp.end]
		out = append(out, raw)
		if d, err := url.PathUnescape(raw); err == nil {
			out = append(out, d)
		}
		if d, err := url.QueryUnescape(raw); err == nil {
			out = append(out, d)
		}
		out = append(out, lenientUnescape(raw), unquoteKV(raw))
	}
	return dedupe(out)
}

// secretSpans finds the secret values of s, in order, not overlapping.
func secretSpans(s string) []span {
	var spans []span
	urls := 0
	for i := 0; ; {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		urls++
		start := i + j + 3
		spans = append(spans, urlSpans(s, start)...)
		i = start
	}
	if urls == 0 {
		if sp, ok := dsnSpan(s); ok {
			spans = append(spans, sp)
		}
	}
	spans = append(spans, kvSpans(s)...)
	return merge(spans)
}

// urlSpans finds the secrets of the URL whose authority starts at s[start:]:
// the userinfo's password by every reading of where it ends, and the secret
// query parameters.
func urlSpans(s string, start int) []span {
	rest := s[start:]
	var spans []span
	firstAt := strings.IndexByte(rest, '@')
	end := -1 // where the password ends, by the widest reading
	if firstAt >= 0 {
		colon := strings.IndexByte(rest, ':')
		authEnd := strings.IndexAny(rest, "/?#")
		if authEnd < 0 {
			authEnd = len(rest)
		}
		// libpq and pgx: the userinfo ends at the first '@', unless a '/'
		// comes first.
		if i := strings.IndexAny(rest, "@/"); rest[i] == '@' {
			end = i
		}
		// net/url: the last '@' of the authority.
		if i := strings.LastIndexByte(rest[:authEnd], '@'); i > end {
			end = i
		}
		// A password with an unescaped '/', '?' or '#' (go-sql-driver
		// takes one): up to the last '@' of all, when the userinfo's ':'
		// comes before any of them.
		if last := strings.LastIndexByte(rest, '@'); colon >= 0 && colon < firstAt && colon < authEnd && last > end {
			end = last
		}
		if colon >= 0 && colon < end {
			spans = append(spans, span{start + colon + 1, start + end})
		}
	}
	// Secret query parameters of what follows the userinfo, their keys
	// percent-decoded as the parsers do (pass%77ord is password).
	for i := end + 1; i < len(rest); i++ {
		if rest[i] != '?' && rest[i] != '&' {
			continue
		}
		eq := strings.IndexAny(rest[i+1:], "=&")
		if eq < 0 || rest[i+1+eq] != '=' {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(lenientUnescape(rest[i+1 : i+1+eq])))
		if slices.Contains(SecretKeys, key) {
			vs := i + 1 + eq + 1
			spans = append(spans, span{start + vs, start + vs + queryValueLen(rest[vs:])})
		}
	}
	return spans
}

// queryValueLen is the length of a query parameter's value at the start of
// v: up to the '&' that starts another key=value. An '&' followed by no
// key= is taken for part of the value.
func queryValueLen(v string) int {
	for i := 0; ; {
		j := strings.IndexByte(v[i:], '&')
		if j < 0 {
			return len(v)
		}
		if nextKey.MatchString(v[i+j+1:]) {
			return i + j
		}
		i += j + 1
	}
}

// dsnSpan finds the password of a go-sql-driver DSN,
// user:password@tcp(host:port)/db?params: from the first ':' to the last
// '@'. A string whose text before the first ':' holds a '=' or a space is
// key=value settings, not a DSN.
func dsnSpan(s string) (span, bool) {
	colon := strings.IndexByte(s, ':')
	at := strings.LastIndexByte(s, '@')
	if colon < 0 || at < colon || strings.ContainsAny(s[:colon], "= \t\n\r'") {
		return span{}, false
	}
	return span{colon + 1, at}, true
}

// kvSpans finds the values of secret key=value settings. An unquoted value
// ends at the whitespace before the next key=, so that a password with an
// unescaped space is hidden whole; a quoted one at its closing quote, or the
// end of s when there is none.
func kvSpans(s string) []span {
	var spans []span
	for _, m := range kvKey.FindAllStringIndex(s, -1) {
		if m[0] > 0 && (s[m[0]] == '?' || s[m[0]] == '&') {
			continue // a URL's query parameter: urlSpans has it
		}
		v := m[1]
		if v < len(s) && s[v] == '\'' {
			end := v + 1
			for end < len(s) && s[end] != '\'' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			spans = append(spans, span{v, min(end+1, len(s))})
			continue
		}
		end := v
		for end < len(s) {
			if isSpace(s[end]) {
				k := end
				for k < len(s) && isSpace(s[k]) {
					k++
				}
				if k == len(s) || nextKey.MatchString(s[k:]) {
					break
				}
				end = k
				continue
			}
			if s[end] == '\\' {
				end++
			}
			end++
		}
		spans = append(spans, span{v, min(end, len(s))})
	}
	return spans
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// merge sorts spans and joins those that overlap or touch; empty ones go.
func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var out []span
	for _, sp := range spans {
		if sp.end <= sp.start {
			continue
		}
		if n := len(out); n > 0 && sp.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// lenientUnescape decodes the %XX escapes of s that are well formed and keeps
// the rest, as pgx does with a malformed URL.
func lenientUnescape(s string) string {
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

// unquoteKV reads a key=value setting's value: without its single quotes,
// with backslash escapes undone.
func unquoteKV(s string) string {
	s = strings.TrimPrefix(s, "'")
	if strings.HasSuffix(s, "'") && !strings.HasSuffix(s, `\'`) {
		s = s[:len(s)-1]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func dedupe(ss []string) []string {
	slices.Sort(ss)
	return slices.Compact(ss)
}

// Redactor hides secrets in texts, in any of the forms a message may quote
// them in (as written, decoded, escaped by %q, JSON or a URL), letters in
// any case. A secret of letters, digits and -._~ alone, which no parser
// splits, is hidden where it appears whole; any other is hidden piece by
// piece: every run of MinFragment or more bytes of it, wherever it appears
// (a parser may have put a piece of it in a host name, a port, a database
// name, a key). Pieces of the former would hide an LSN or a count that
// happens to share four hex digits with a password. A nil Redactor hides
// nothing.
type Redactor struct {
	// grams holds every MinFragment-byte piece of every form of the
	// secrets that may be split, lower-cased: a text's piece is hidden when
	// it is among them, so that every longer piece is hidden whole.
	grams map[uint32]struct{}
	// wholes are the secrets that cannot be split, lower-cased.
	wholes []string
}

// New returns a Redactor of the secrets of the connection strings conns
// (Secrets).
func New(conns ...string) *Redactor {
	var secrets []string
	for _, c := range conns {
		secrets = append(secrets, Secrets(c)...)
	}
	return (&Redactor{}).With(secrets...)
}

// With returns a Redactor that also hides the given secrets (a password
// from PGPASSWORD, say), as they are.
func (r *Redactor) With(secrets ...string) *Redactor {
	out := &Redactor{grams: map[uint32]struct{}{}}
	if r != nil {
		for g := range r.grams {
			out.grams[g] = struct{}{}
		}
		out.wholes = slices.Clone(r.wholes)
	}
	for _, s := range secrets {
		if len(s) < MinFragment {
			continue
		}
		if unsplittable(s) {
			if w := asciiLower(s); !slices.Contains(out.wholes, w) {
				out.wholes = append(out.wholes, w)
			}
			continue
		}
		for _, f := range forms(s) {
			for i := 0; i+MinFragment <= len(f); i++ {
				out.grams[gram(f[i:])] = struct{}{}
			}
		}
	}
	return out
}

// unsplittable tells a secret made of the characters no parser splits a
// value at, and every form writes as they are: letters, digits and -._~.
func unsplittable(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0) {
			return false
		}
	}
	return true
}

// asciiLower lower-cases the ASCII letters of s alone, so that byte offsets
// stay those of s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// forms are the ways a message may spell secret s.
func forms(s string) []string {
	out := []string{s, url.QueryEscape(s), url.PathEscape(s)}
	for _, q := range []string{strconv.Quote(s), strconv.QuoteToASCII(s)} {
		out = append(out, q[1:len(q)-1])
	}
	if j, err := json.Marshal(s); err == nil {
		out = append(out, string(j[1:len(j)-1]))
	}
	return out
}

// gram packs the first MinFragment bytes of s, ASCII letters lower-cased.
func gram(s string) uint32 {
	var g uint32
	for i := range MinFragment {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		g = g<<8 | uint32(c)
	}
	return g
}

// String returns text with every secret, and every piece of one that may
// be split, replaced by Mask (one Mask for a run of adjoining pieces).
func (r *Redactor) String(text string) string {
	if r == nil || len(r.grams) == 0 && len(r.wholes) == 0 || len(text) < MinFragment {
		return text
	}
	var hits []span
	if len(r.wholes) > 0 {
		lower := asciiLower(text)
		for _, w := range r.wholes {
			for i := 0; ; {
				j := strings.Index(lower[i:], w)
				if j < 0 {
					break
				}
				hits = append(hits, span{i + j, i + j + len(w)})
				i += j + len(w)
			}
		}
	}
	for i := 0; len(r.grams) > 0 && i+MinFragment <= len(text); i++ {
		if _, ok := r.grams[gram(text[i:])]; !ok {
			continue
		}
		// Whole characters only.
		start, end := i, i+MinFragment
		for start > 0 && !utf8.RuneStart(text[start]) {
			start--
		}
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++
		}
		hits = append(hits, span{start, end})
	}
	hits = merge(hits)
	if len(hits) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, h := range hits {
		b.WriteString(text[last:h.start])
		b.WriteString(Mask)
		last = h.end
	}
	b.WriteString(text[last:])
	return b.String()
}

// Err returns err with its message redacted by r (nil for nil); errors.Is
// and errors.As still see err and what it wraps.
func (r *Redactor) Err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
