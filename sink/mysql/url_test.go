package mysql

import (
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url                       string
		net, addr, user, pass, db string
		tls                       string
		timeout                   time.Duration
	}{
		{"mysql://root:s3cr%40t@db.example:3307/shop", "tcp", "db.example:3307", "root", "s3cr@t", "shop", "false", 30 * time.Second},
		{"mysql://u@127.0.0.1/d?tls=true&timeout=5s", "tcp", "127.0.0.1:3306", "u", "", "d", "true", 5 * time.Second},
		{"mysql://u:p@[::1]:3306/d?tls=skip-verify", "tcp", "[::1]:3306", "u", "p", "d", "skip-verify", 30 * time.Second},
		{"mysql://u:p@%2Fvar%2Frun%2Fmysqld%2Fmysqld.sock/d", "unix", "/var/run/mysqld/mysqld.sock", "u", "p", "d", "false", 30 * time.Second},
		{"mysql://u@localhost/d?socket=/tmp/m.sock&tls=preferred", "unix", "/tmp/m.sock", "u", "", "d", "preferred", 30 * time.Second},
	} {
		cfg, err := ParseURL(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if cfg.Net != c.net || cfg.Addr != c.addr || cfg.User != c.user || cfg.Passwd != c.pass || cfg.DBName != c.db || cfg.TLSConfig != c.tls || cfg.Timeout != c.timeout {
			t.Errorf("%s: net %s addr %s user %s pass %s db %s tls %s timeout %v", c.url, cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName, cfg.TLSConfig, cfg.Timeout)
		}
		if !cfg.MultiStatements || !cfg.ClientFoundRows || !cfg.InterpolateParams || cfg.ParseTime {
			t.Errorf("%s: pgrelay's driver settings are not set: %+v", c.url, cfg)
		}
	}
	for _, c := range []struct{ url, want string }{
		{"postgres://u:secret@h/d", `scheme "postgres"`},
		{"mysql://u:secret@h", "names no database"},
		{"mysql://u:secret@h/", "names no database"},
		{"mysql://u:secret@/d", "names no host"},
		{"mysql://u:secret@h/d?tls=maybe", `tls="maybe"`},
		{"mysql://u:secret@h/d?parseTime=true&charset=latin1", "charset, parseTime is not one pgrelay takes"},
		{"mysql://u:secret@h/d?timeout=soon", `timeout="soon"`},
		{"mysql://u:secret@h/d?tls-ca=/nonexistent/ca.pem", "tls-ca"},
		{"mysql://u:secret@h/d?tls-cert=/x.pem", "tls-cert and tls-key go together"},
		{"mysql://u:secret@h:bad/d", "does not parse"},
	} {
		_, err := ParseURL(c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.url, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q shows the password or is not one line", c.url, err)
		}
	}
}

// TestServerChoices: the statements that differ between MySQL 8 and MariaDB.
func TestServerChoices(t *testing.T) {
	maria := &Sink{server: schema.MySQLServer{MariaDB: true, Version: 101100}}
	my := &Sink{server: schema.MySQLServer{Version: 80036}}
	my17 := &Sink{server: schema.MySQLServer{Version: 80017}}
	p := sink.Progress{LSN: 0x16B3748, CommitTime: time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)}
	if got := maria.progressSQL("s'1", p); !strings.Contains(got, "VALUES(lsn)") || strings.Contains(got, " AS new") ||
		!strings.Contains(got, `('s\'1', 23803720, '2024-05-06 07:08:09.123456', CURRENT_TIMESTAMP(6))`) {
		t.Errorf("MariaDB progress: %s", got)
	}
	if got := my.progressSQL("s", p); !strings.Contains(got, " AS new ON DUPLICATE KEY UPDATE") || !strings.Contains(got, "GREATEST(lsn, new.lsn)") || strings.Contains(got, "VALUES(") ||
		!strings.Contains(got, "IF(new.lsn >= lsn, COALESCE(new.commit_time, commit_time), commit_time)") {
		t.Errorf("MySQL 8.0.36 progress: %s", got)
	}
	if got := my17.progressSQL("s", sink.Progress{LSN: 1}); !strings.Contains(got, "VALUES(lsn)") || !strings.Contains(got, "NULL, CURRENT_TIMESTAMP(6)") {
		t.Errorf("MySQL 8.0.17 progress: %s", got)
	}
	if got := my.upsert("INSERT INTO t (a, b) VALUES (1, 2),(3, 4) ON DUPLICATE KEY UPDATE a = VALUES(a), b = COALESCE(VALUES(b), b)"); got !=
		"INSERT INTO t (a, b) VALUES (1, 2),(3, 4) AS new ON DUPLICATE KEY UPDATE a = new.a, b = COALESCE(new.b, b)" {
		t.Errorf("MySQL upsert: %s", got)
	}
	if got := maria.upsert("INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a)"); got != "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a)" {
		t.Errorf("MariaDB upsert: %s", got)
	}
	// commit_time is assigned before lsn moves, which it compares with.
	if got := maria.progressSQL("s", p); strings.Index(got, "commit_time = IF") > strings.Index(got, "lsn = GREATEST") {
		t.Errorf("progress assigns lsn before commit_time: %s", got)
	}
	if got := maria.sessionSettings(); !strings.Contains(got, "tx_isolation = 'READ-COMMITTED'") || !strings.Contains(got, "time_zone = '+00:00'") ||
		!strings.Contains(got, "foreign_key_checks = 0") || !strings.Contains(got, "NO_AUTO_VALUE_ON_ZERO") || !strings.Contains(got, "STRICT_ALL_TABLES") {
		t.Errorf("MariaDB session: %s", got)
	}
	if got := my.sessionSettings(); !strings.Contains(got, "transaction_isolation = 'READ-COMMITTED'") {
		t.Errorf("MySQL session: %s", got)
	}
}

func TestOnThisMachine(t *testing.T) {
	for url, want := range map[string]bool{
		"mysql://u@127.0.0.1:3306/d":               true,
		"mysql://u@localhost/d":                    true,
		"mysql://u@[::1]/d":                        true,
		"mysql://u@%2Ftmp%2Fm.sock/d":              true,
		"mysql://u@db.example/d?socket=/tmp/m.sck": true,
		"mysql://u@db.example:3306/d":              false,
		"mysql://u@10.0.0.7/d":                     false,
	} {
		got, err := OnThisMachine(url)
		if err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", url, got, err, want)
		}
	}
	if _, err := OnThisMachine("mysql://u:secret@h/d?parseTime=true"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a parameter the sink does not take: %v", err)
	}
}
