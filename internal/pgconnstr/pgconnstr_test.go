package pgconnstr

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestHostaddr(t *testing.T) {
	cfg, err := Parse("host=db.example hostaddr=127.0.0.1 port=5433 user=u dbname=d sslmode=verify-full")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.RuntimeParams["hostaddr"]; ok {
		t.Error("hostaddr is still sent to the server as a run-time parameter")
	}
	if cfg.Host != "db.example" || cfg.TLSConfig == nil || cfg.TLSConfig.ServerName != "db.example" {
		t.Errorf("host %q, TLS %v: want db.example kept for the TLS check", cfg.Host, cfg.TLSConfig)
	}
	addrs, err := cfg.LookupFunc(context.Background(), "db.example")
	if err != nil || !slices.Equal(addrs, []string{"127.0.0.1"}) {
		t.Errorf("lookup of db.example = %v, %v; want [127.0.0.1] without asking DNS", addrs, err)
	}
	hosts, err := Hosts("postgres://u@a.example,b.example/d?hostaddr=10.0.0.1,::1&sslmode=prefer")
	if err != nil || !slices.Equal(hosts, []string{"10.0.0.1", "::1"}) {
		t.Errorf("Hosts of two hosts with hostaddr = %v, %v; want [10.0.0.1 ::1]", hosts, err)
	}
	hosts, err = Hosts("host=db.example user=u")
	if err != nil || !slices.Equal(hosts, []string{"db.example"}) {
		t.Errorf("Hosts without hostaddr = %v, %v; want [db.example]", hosts, err)
	}
}

func TestRefused(t *testing.T) {
	for s, want := range map[string]string{
		"host=a,b hostaddr=10.0.0.1 user=u":        "1 addresses for 2 hosts",
		"host=a hostaddr=db.example user=u":        "not an IP address",
		"host=/tmp hostaddr=127.0.0.1 user=u":      "put the address in host",
		"host=a gssencmode=disable user=u":         "gssencmode is not supported",
		"host=a tcp_user_timeout=1000 user=u":      "tcp_user_timeout is not supported",
		"host=a keepalives_idle=soon user=u":       `keepalives_idle="soon"`,
		"postgres://u@a/d?sslcrl=/etc/crl.pem":     "sslcrl is not supported",
		"postgres://u@a/d?keepalives_count=-1":     "keepalives_count",
		"postgres://u@a,b/d?hostaddr=10.0.0.1,x.y": "not an IP address",
	} {
		_, err := Parse(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want an error saying %q", s, err, want)
		}
	}
}

func TestApplicationNameAndKeepalives(t *testing.T) {
	cfg, err := ParsePgx("host=a user=u fallback_application_name=fb keepalives=1 keepalives_idle=30 keepalives_interval=5 keepalives_count=3")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.RuntimeParams
	if p["application_name"] != "fb" {
		t.Errorf("application_name %q, want the fallback fb", p["application_name"])
	}
	for _, k := range []string{"fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count"} {
		if _, ok := p[k]; ok {
			t.Errorf("%s is still sent to the server as a run-time parameter", k)
		}
	}
	cfg, err = ParsePgx("host=a user=u application_name=app fallback_application_name=fb keepalives=0")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.RuntimeParams["application_name"]; got != "app" {
		t.Errorf("application_name %q, want app: the fallback is for when it is not set", got)
	}
	cfg, err = ParsePgx("postgres://u@a/d")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.RuntimeParams["application_name"]; got != "pgrelay" {
		t.Errorf("application_name %q without one in the URL, want pgrelay", got)
	}
}

func TestOnThisMachine(t *testing.T) {
	for url, want := range map[string]bool{
		"postgres://u@127.0.0.1:5432/db":                  true,
		"postgres://u@127.0.0.2/db":                       true,
		"postgres://u@[::1]:5433/db":                      true,
		"postgres://u@localhost/db":                       true,
		"postgres://u@LOCALHOST/db":                       true,
		"postgres:///db?host=/var/run/postgresql":         true,
		"host=/tmp port=5432 dbname=db":                   true,
		"postgres://u@127.0.0.1,localhost/db":             true,
		"postgres://u@db.example.com/db":                  false,
		"postgres://u@10.0.0.5/db":                        false,
		"postgres://u@127.0.0.1,db.example.com/db":        false,
		"mysql://u@127.0.0.1/db":                          false,
		"postgres://u@127.0.0.1/db?sslmode=nonsense-mode": false,
	} {
		if got := OnThisMachine(url); got != want {
			t.Errorf("OnThisMachine(%q) = %v, want %v", url, got, want)
		}
	}
}

func TestSocketHostURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:p@%2Ftmp%2Fpg:5433/db", "postgres://u:p@:5433/db?host=%2Ftmp%2Fpg"},
		{"postgresql://%2fvar%2frun%2fpostgresql/db?sslmode=disable", "postgresql:///db?host=%2Fvar%2Frun%2Fpostgresql&sslmode=disable"},
		{"postgres://u@host:5432/db", "postgres://u@host:5432/db"},
		{"host=/tmp dbname=db", "host=/tmp dbname=db"},
		{"mysql://u@%2Ftmp/db", "mysql://u@%2Ftmp/db"},
	} {
		if got := SocketHostURL(c.in); got != c.want {
			t.Errorf("SocketHostURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
