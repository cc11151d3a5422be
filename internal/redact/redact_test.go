package redact_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/internal/redact"
	"github.com/pgrelay/pgrelay/internal/redact/redacttest"
)

func TestConnString(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://user:secret@host:5432/db", "postgres://user:xxxxx@host:5432/db"},
		{"postgresql://user:secret@host/db?sslmode=disable", "postgresql://user:xxxxx@host/db?sslmode=disable"},
		{"postgres://user@host/db", "postgres://user@host/db"},
		{"postgres://host/db?user=u&password=secret&sslmode=disable", "postgres://host/db?user=u&password=xxxxx&sslmode=disable"},
		{"postgres://host/db?sslpassword=secret&sslkey=/k", "postgres://host/db?sslpassword=xxxxx&sslkey=/k"},
		{"postgres://host/db?pass%77ord=secret&sslmode=disable", "postgres://host/db?pass%77ord=xxxxx&sslmode=disable"},
		{"postgres://host/db?SSLPassword=se&cret", "postgres://host/db?SSLPassword=xxxxx"},
		{"postgres://host/db?password=se&Cr=et&sslmode=disable", "postgres://host/db?password=xxxxx&sslmode=disable"},
		// Every parser reads a lower-case key after an unescaped '&' as a
		// setting of its own.
		{"postgres://host/db?password=se&cr=et", "postgres://host/db?password=xxxxx&cr=et"},
		{"postgres://user:p@ss/w?rd@host/db", "postgres://user:xxxxx@host/db"},
		{"postgres://relay:p@ssSECRETpart@127.0.0.1:55501/app", "postgres://relay:xxxxx@127.0.0.1:55501/app"},
		{"postgres://relay:abSECRET/x@127.0.0.1:55501/app", "postgres://relay:xxxxx@127.0.0.1:55501/app"},
		{"mysql://root:secret@127.0.0.1:3306/db?tls=false", "mysql://root:xxxxx@127.0.0.1:3306/db?tls=false"},
		{"root:se@cr/et@tcp(127.0.0.1:3306)/db?parseTime=true", "root:xxxxx@tcp(127.0.0.1:3306)/db?parseTime=true"},
		{"root@tcp(127.0.0.1:3306)/db", "root@tcp(127.0.0.1:3306)/db"},
		{"host=h user=u password=secret dbname=d", "host=h user=u password=xxxxx dbname=d"},
		{"host=h password = 'se cr\\'et' dbname=d", "host=h password = xxxxx dbname=d"},
		{"host=h password=se cret dbname=d", "host=h password=xxxxx dbname=d"},
		{"host=h password='unterminated dbname=d", "host=h password=xxxxx"},
		{"host=127.0.0.1 sslpassword=SSLSECRET8 port=abc", "host=127.0.0.1 sslpassword=xxxxx port=abc"},
		{"host=h PASSWORD=secret", "host=h PASSWORD=xxxxx"},
		{"host=h dbname=d", "host=h dbname=d"},
		{"host=h oauth_client_secret=s3cr3t", "host=h oauth_client_secret=xxxxx"},
		{"postgres://user@host:5432/db?application_name=a@b", "postgres://user@host:5432/db?application_name=a@b"},
		{"postgres://user:pw@host/db?application_name=a@b", "postgres://user:xxxxx@b"},
		{"postgres://user:hunter22@host/db?application_name=hunter22", "postgres://user:xxxxx@host/db?application_name=xxxxx"},
	}
	for _, tc := range cases {
		if got := redact.ConnString(tc.in); got != tc.want {
			t.Errorf("ConnString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	r := redact.New("postgres://relay:p@ssSECRETpart@127.0.0.1:55501/app")
	for in, want := range map[string]string{
		`cannot resolve host "ssSECRETpart@127.0.0.1"`: `cannot resolve host "xxxxx@127.0.0.1"`,
		`nothing to hide`: `nothing to hide`,
		`SSSECRETPART`:    `xxxxx`, // any case
		`p@ss`:            `xxxxx`,
		`p@s`:             `p@s`, // shorter than MinFragment
		`a p%40ssSECRET`:  `a xxxxx`,
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	// Pieces that overlap and pieces apart.
	r = (*redact.Redactor)(nil).With("abcd@fgh")
	if got := r.String("xabcdy d@fgh ab"); got != "xxxxxxy xxxxx ab" {
		t.Errorf("got %q", got)
	}
	// A password no parser splits is hidden whole only: an LSN sharing four
	// hex digits with it stays.
	r = (*redact.Redactor)(nil).With("ab1d6aef99")
	if got := r.String("LSN 0/1D6AE98, password AB1D6AEF99, pid 1d6a"); got != "LSN 0/1D6AE98, password xxxxx, pid 1d6a" {
		t.Errorf("got %q", got)
	}
	// Whole characters.
	r = (*redact.Redactor)(nil).With("ééé")
	if got := r.String("aéééb"); got != "axxxxxb" {
		t.Errorf("got %q", got)
	}
	if got := (*redact.Redactor)(nil).String("p@ssword"); got != "p@ssword" {
		t.Errorf("nil Redactor changed the text: %q", got)
	}
}

// What the parsers say of every way of writing every password, and what
// messages quote of what they parsed, holds no piece of it once redacted.
func TestParserMessages(t *testing.T) {
	for _, pw := range redacttest.Secrets {
		for form, s := range redacttest.ConnStrings("relay", pw, "127.0.0.1:55501", "app") {
			r := redact.New(s)
			var msgs []string
			if _, err := url.Parse(s); err != nil {
				msgs = append(msgs, err.Error())
			}
			if cfg, err := pgconn.ParseConfig(s); err != nil {
				msgs = append(msgs, err.Error())
				if u := errorsUnwrap(err); u != nil {
					msgs = append(msgs, u.Error())
				}
			} else {
				// What a message may quote of a parsed configuration.
				msgs = append(msgs, fmt.Sprintf("%q %d %q %q %v", cfg.Host, cfg.Port, cfg.Database, cfg.User, cfg.RuntimeParams))
				for _, f := range cfg.Fallbacks {
					msgs = append(msgs, fmt.Sprintf("%q %d", f.Host, f.Port))
				}
			}
			if _, err := pgconnstr.Parse(s); err != nil {
				msgs = append(msgs, err.Error())
			}
			if cfg, err := mysql.ParseDSN(s); err != nil {
				msgs = append(msgs, err.Error())
			} else {
				msgs = append(msgs, fmt.Sprintf("%q %q %q %q %v", cfg.Addr, cfg.DBName, cfg.User, cfg.Net, cfg.Params))
			}
			msgs = append(msgs, redact.ConnString(s), fmt.Sprintf("%q", redact.ConnString(s)))
			for _, m := range msgs {
				if leak := redacttest.Leak(r.String(m), pw); leak != "" {
					t.Errorf("password %q, %s %q: %q shows %q", pw, form, s, r.String(m), leak)
				}
			}
			if leak := redacttest.Leak(redact.ConnString(s), pw); leak != "" {
				t.Errorf("password %q, %s: ConnString %q shows %q", pw, form, redact.ConnString(s), leak)
			}
		}
	}
}

func errorsUnwrap(err error) error {
	u, ok := err.(interface{ Unwrap() error })
	if !ok {
		return nil
	}
	return u.Unwrap()
}
