package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestConnProtoVersionFor(t *testing.T) {
	for major, want := range map[int]int{10: 1, 11: 1, 12: 1, 13: 1, 14: 2, 15: 3, 16: 4, 17: 4, 18: 4, 19: 4} {
		if got := ProtoVersionFor(major); got != want {
			t.Errorf("ProtoVersionFor(%d) = %d, want %d", major, got, want)
		}
	}
}

func TestConnParseMajor(t *testing.T) {
	for v, want := range map[string]int{"15.4 (Debian 15.4-1.pgdg120+1)": 15, "16beta1": 16, "18devel": 18, "9.6.24": 9, "10.0": 10, "": 0, "abc": 0} {
		if got := parseMajor(v); got != want {
			t.Errorf("parseMajor(%q) = %d, want %d", v, got, want)
		}
	}
}

func TestConnConfigValidate(t *testing.T) {
	c := ConnConfig{URL: "postgres://x@h/db"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Slot != "pgrelay" || c.Publication != "pgrelay" || c.Streaming != "auto" || c.TwoPhase != "auto" || c.StatusInterval != 10*time.Second {
		t.Fatalf("defaults not applied: %+v", c)
	}
	bad := []struct {
		c    ConnConfig
		want string
	}{
		{ConnConfig{}, "PGRELAY_SOURCE_URL"},
		{ConnConfig{URL: "u", Slot: "My-Slot"}, "lower-case letters"},
		{ConnConfig{URL: "u", Slot: strings.Repeat("a", 64)}, "longer than 63"},
		{ConnConfig{URL: "u", Publication: strings.Repeat("p", 64)}, "longer than 63"},
		{ConnConfig{URL: "u", Streaming: "sometimes"}, "auto, on, off, parallel"},
		{ConnConfig{URL: "u", TwoPhase: "yes"}, "auto, on, off"},
		{ConnConfig{URL: "u", Tables: []string{"orders"}}, "schema.table"},
		{ConnConfig{URL: "u", StatusInterval: -time.Second}, "negative"},
	}
	for _, b := range bad {
		err := b.c.Validate()
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", b.c, err, b.want)
		}
	}
	ok := ConnConfig{URL: "u", Streaming: " Parallel ", TwoPhase: "ON", Tables: []string{`public.t`, `"My Schema"."T.x"`}}
	if err := ok.Validate(); err != nil || ok.Streaming != "parallel" || ok.TwoPhase != "on" {
		t.Fatalf("Validate = %v, %+v", err, ok)
	}
}

func TestConnConfigStreamOptions(t *testing.T) {
	c := ConnConfig{URL: "u"}
	_ = c.Validate()
	o, err := c.StreamOptions(13, true)
	if err != nil || o.Proto != 1 || o.Streaming != "" || o.TwoPhase {
		t.Fatalf("13 auto: %+v %v", o, err)
	}
	o, err = c.StreamOptions(15, true)
	if err != nil || o.Proto != 3 || o.Streaming != "on" || !o.TwoPhase || o.Publication != "pgrelay" {
		t.Fatalf("15 auto: %+v %v", o, err)
	}
	o, _ = c.StreamOptions(16, false)
	if o.TwoPhase {
		t.Fatal("auto two-phase chosen though the target cannot")
	}
	on := ConnConfig{URL: "u", TwoPhase: "on", Streaming: "parallel"}
	_ = on.Validate()
	if _, err := on.StreamOptions(14, true); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("parallel on 14: %v", err)
	}
	if o, err := on.StreamOptions(16, false); err != nil || o.Streaming != "parallel" || !o.TwoPhase {
		t.Fatalf("16 explicit: %+v %v", o, err)
	}
	tp := ConnConfig{URL: "u", TwoPhase: "on"}
	_ = tp.Validate()
	if _, err := tp.StreamOptions(14, true); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "PGRELAY_TWO_PHASE=off") {
		t.Fatalf("two-phase on 14: %v", err)
	}
	msg := ConnConfig{URL: "u", Messages: true}
	_ = msg.Validate()
	if _, err := msg.StreamOptions(13, false); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("messages on 13: %v", err)
	}
	// Every resolved option set is one pluginArgs accepts.
	for major := 10; major <= 18; major++ {
		for _, streaming := range []string{"auto", "on", "off", "parallel"} {
			for _, twoPhase := range []string{"auto", "on", "off"} {
				c := ConnConfig{URL: "u", Streaming: streaming, TwoPhase: twoPhase, Messages: major >= 14}
				_ = c.Validate()
				o, err := c.StreamOptions(major, true)
				if err != nil {
					continue
				}
				if _, err := pluginArgs(major, o); err != nil {
					t.Errorf("%d %s %s: resolved %+v rejected: %v", major, streaming, twoPhase, o, err)
				}
			}
		}
	}
}

func TestConnSplitTableName(t *testing.T) {
	good := map[string][2]string{
		"public.orders":           {"public", "orders"},
		"Public.Orders":           {"public", "orders"},
		` public . orders `:       {"public", "orders"},
		`"My Schema"."Order.s"`:   {"My Schema", "Order.s"},
		`s."we""ird"`:             {"s", `we"ird`},
		`"a".b`:                   {"a", "b"},
		`"Sales"."Q1 ""totals"""`: {"Sales", `Q1 "totals"`},
	}
	for in, want := range good {
		s, n, err := SplitTableName(in)
		if err != nil || s != want[0] || n != want[1] {
			t.Errorf("SplitTableName(%q) = %q, %q, %v; want %q", in, s, n, err, want)
		}
	}
	for _, in := range []string{"", "orders", "a.b.c", `"unterminated.x`, `a.""`, `.b`, `a.`, `"a"x.b`, strings.Repeat("x", 64) + ".t"} {
		if _, _, err := SplitTableName(in); err == nil {
			t.Errorf("SplitTableName(%q) did not fail", in)
		}
	}
}

func TestConnCreateSlotSQL(t *testing.T) {
	tests := []struct {
		major int
		o     SlotOptions
		want  string
		err   error
	}{
		{15, SlotOptions{TwoPhase: true, Snapshot: "export"}, "CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'export', TWO_PHASE true)", nil},
		{18, SlotOptions{Temporary: true}, "CREATE_REPLICATION_SLOT s TEMPORARY LOGICAL pgoutput (SNAPSHOT 'nothing')", nil},
		{16, SlotOptions{Snapshot: "use"}, "CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'use')", nil},
		{14, SlotOptions{Snapshot: "export"}, "CREATE_REPLICATION_SLOT s LOGICAL pgoutput EXPORT_SNAPSHOT", nil},
		{10, SlotOptions{Temporary: true}, "CREATE_REPLICATION_SLOT s TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT", nil},
		{13, SlotOptions{Snapshot: "use"}, "CREATE_REPLICATION_SLOT s LOGICAL pgoutput USE_SNAPSHOT", nil},
		{14, SlotOptions{TwoPhase: true}, "", ErrUnsupported},
		{15, SlotOptions{Snapshot: "bogus"}, "", nil},
		{12, SlotOptions{Snapshot: "bogus"}, "", nil},
	}
	for _, tt := range tests {
		got, err := createSlotSQL(tt.major, "s", tt.o)
		if tt.want == "" {
			if err == nil || (tt.err != nil && !errors.Is(err, tt.err)) {
				t.Errorf("%d %+v: err = %v, want failure (%v)", tt.major, tt.o, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%d %+v:\n got %q %v\nwant %q", tt.major, tt.o, got, err, tt.want)
		}
	}
}

func TestConnValidateSlotName(t *testing.T) {
	for _, ok := range []string{"pgrelay", "a_1", strings.Repeat("z", 63)} {
		if err := ValidateSlotName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A", "a-b", "a b", "a;DROP", "é", strings.Repeat("z", 64)} {
		if err := ValidateSlotName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConnConnectUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := fmt.Sprintf("postgres://alice:Sup3rSecretPw@127.0.0.1:%d/db?sslmode=disable&connect_timeout=5", port)
	_, err = Connect(ctx, url)
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	msg := err.Error()
	if !strings.Contains(msg, "cannot reach 127.0.0.1:") || !strings.Contains(msg, "connection refused") || strings.Contains(msg, "Sup3rSecretPw") || strings.Contains(msg, "\n") {
		t.Fatalf("unhelpful error: %q", msg)
	}
}

func TestConnConnectBadURLHidesPassword(t *testing.T) {
	for _, url := range []string{
		"postgres://alice:Sup3rSecretPw@127.0.0.1:notaport/db",
		"host=127.0.0.1 password=Sup3rSecretPw port=x",
		"postgres://alice:Sup3rSecretPw@[::1/db",
	} {
		_, err := Connect(context.Background(), url)
		if err == nil {
			t.Fatalf("%q parsed", url)
		}
		if strings.Contains(err.Error(), "Sup3rSecretPw") || !strings.Contains(err.Error(), "cannot parse the source URL") {
			t.Fatalf("error for a bad URL: %q", err)
		}
	}
}

func TestConnDescribeConnectError(t *testing.T) {
	cfg := &pgconn.Config{Host: "db.example", Port: 5433, User: "alice", Password: "pw123456", Database: "shop"}
	tests := []struct {
		err      error
		contains []string
		is       error
	}{
		{&pgconn.PgError{Code: "28P01", Message: `password authentication failed for user "alice"`},
			[]string{"password authentication failed", "db.example:5433", "check the user and password"}, nil},
		{&pgconn.PgError{Code: "28000", Message: `no pg_hba.conf entry for replication connection from host "10.0.0.1"`},
			[]string{"pg_hba.conf", "reload"}, nil},
		{&pgconn.PgError{Code: "42501", Message: "permission denied to start WAL sender"},
			[]string{`ALTER ROLE "alice" REPLICATION`}, ErrNoReplicationRole},
		{&pgconn.PgError{Code: "3D000", Message: `database "shop" does not exist`}, []string{`database "shop" does not exist`}, nil},
		{&pgconn.PgError{Code: "53300", Message: "number of requested standby connections exceeds max_wal_senders"}, []string{"max_wal_senders"}, nil},
		{fmt.Errorf("wrapped: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), []string{"cannot reach db.example:5433", "connection refused"}, nil},
		{errors.New("failed to connect to `user=alice database=shop`: weird pw123456 thing"), []string{"weird xxxxx thing"}, nil},
	}
	for _, tt := range tests {
		err := describeConnectError(cfg, tt.err, true)
		msg := err.Error()
		for _, c := range tt.contains {
			if !strings.Contains(msg, c) {
				t.Errorf("%v → %q lacks %q", tt.err, msg, c)
			}
		}
		if strings.Contains(msg, "pw123456") || strings.Contains(msg, "\n") {
			t.Errorf("%q leaks the password or spans lines", msg)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%q is not %v", msg, tt.is)
		}
		var pgErr *pgconn.PgError
		if errors.As(tt.err, &pgErr) && !errors.As(err, &pgErr) {
			t.Errorf("%q hides the PgError", msg)
		}
	}
}

func TestConnClassifyPgError(t *testing.T) {
	tests := []struct {
		e    *pgconn.PgError
		want error
	}{
		{&pgconn.PgError{Code: "55006", Message: `replication slot "s" is active for PID 7`}, ErrSlotInUse},
		{&pgconn.PgError{Code: "42704", Message: `replication slot "s" does not exist`}, ErrSlotNotFound},
		{&pgconn.PgError{Code: "42704", Message: `publication "p" does not exist`}, ErrPublicationMissing},
		{&pgconn.PgError{Code: "55000", Message: `cannot read from logical replication slot "s"`, Detail: "This slot has been invalidated because it exceeded the maximum reserved size."}, ErrSlotInvalidated},
		{&pgconn.PgError{Code: "55000", Message: `logical decoding requires "wal_level" >= "logical"`}, ErrWALLevel},
		{&pgconn.PgError{Code: "53400", Message: "all replication slots are in use"}, ErrNoFreeSlot},
	}
	for _, tt := range tests {
		err := classifyPgError(fmt.Errorf("ctx: %w", tt.e), "s")
		if !errors.Is(err, tt.want) {
			t.Errorf("%s %s: %v is not %v", tt.e.Code, tt.e.Message, err, tt.want)
		}
		var pgErr *pgconn.PgError
		if tt.want == ErrSlotInUse && !strings.Contains(err.Error(), "PID 7") {
			t.Errorf("slot in use error lost the PID: %v", err)
		}
		_ = pgErr
	}
	// A value over 1 GB in text form (a bytea over 512 MiB, as hex): the
	// cause and the way out, the server's error kept.
	huge := &pgconn.PgError{Code: "XX000", Message: "invalid memory alloc request size 1090519043"}
	if err := classifyPgError(huge, "s"); !errors.Is(err, huge) || !strings.Contains(err.Error(), "a bytea over 512 MiB") || !strings.Contains(err.Error(), "PGRELAY_SNAPSHOT=always") {
		t.Errorf("value too large for text form: %v", err)
	}
	other := &pgconn.PgError{Code: "XX000", Message: "boom"}
	if err := classifyPgError(other, "s"); err != other {
		t.Errorf("unclassified error changed: %v", err)
	}
	if err := classifySlotError("s", &pgconn.PgError{Code: "42710", Message: `replication slot "s" already exists`}); !errors.Is(err, ErrSlotExists) || !strings.Contains(err.Error(), "pg_drop_replication_slot('s')") {
		t.Errorf("duplicate slot: %v", err)
	}
	tooLarge := &pgconn.PgError{Code: "40001", Message: "initial slot snapshot too large"}
	if err := classifySlotError("s", tooLarge); !errors.Is(err, ErrSnapshotTooLarge) || !errors.Is(err, tooLarge) || !strings.Contains(err.Error(), "tries again") {
		t.Errorf("snapshot too large: %v", err)
	}
}

func TestConnCreateSlotOnFake(t *testing.T) {
	f := &fakeWalsender{version: "15.7"}
	rc := dialFake(t, f)
	if rc.ServerMajor() != 15 || rc.ProtoVersion() != 3 || rc.System().DBName != "db" || rc.System().XLogPos != 0x1000000 {
		t.Fatalf("connect: major %d proto %d system %+v", rc.ServerMajor(), rc.ProtoVersion(), rc.System())
	}
	<-f.queries
	if _, err := rc.CreateSlot(context.Background(), "Bad-Name", SlotOptions{}); err == nil {
		t.Fatal("bad slot name accepted")
	}
	info, err := rc.CreateSlot(context.Background(), "good", SlotOptions{TwoPhase: true, Snapshot: "export"})
	if err != nil {
		t.Fatal(err)
	}
	if q := <-f.queries; q != "CREATE_REPLICATION_SLOT good LOGICAL pgoutput (SNAPSHOT 'export', TWO_PHASE true)" {
		t.Fatalf("sent %q", q)
	}
	want := SlotInfo{Name: "good", ConsistentPoint: 0x1A2B3C, SnapshotName: "00000003-00000002-1", TwoPhase: true}
	if info != want {
		t.Fatalf("SlotInfo = %+v, want %+v", info, want)
	}
	// Unknown commands come back as errors and leave the connection usable.
	if _, err := rc.conn.Exec(context.Background(), "TIMELINE_HISTORY 1").ReadAll(); err == nil {
		t.Fatal("fake accepted TIMELINE_HISTORY")
	}
	<-f.queries
	if _, err := rc.CreateSlot(context.Background(), "again", SlotOptions{}); err != nil {
		t.Fatalf("connection unusable after an error: %v", err)
	}
}

// A connection string of several hosts: the failure names each of them and
// what each said (pgx joins one error per host it tried, twice for sslmode
// prefer), not the first alone.
func TestConnDescribeConnectErrorHosts(t *testing.T) {
	cfg := &pgconn.Config{Host: "db1.example", Port: 5433, User: "alice",
		Fallbacks: []*pgconn.FallbackConfig{{Host: "db1.example", Port: 5433}, {Host: "db2.example", Port: 5432}, {Host: "db2.example", Port: 5432}}}
	addr := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5433}
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: errors.New("connect: connection refused")}
	unknown := &net.DNSError{Name: "db2.example", Err: "no such host", IsNotFound: true}
	err := describeConnectErrorOf("source", cfg, fmt.Errorf("failed to connect: %w", errors.Join(refused, refused, unknown, unknown)), false)
	want := `source: cannot reach any of the hosts db1.example:5433, db2.example:5432 (10.0.0.1:5433: connect: connection refused; cannot resolve host "db2.example": no such host): check the hosts and ports in the source URL and that a server is running`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	// One host: its name, as before.
	cfg.Fallbacks = nil
	err = describeConnectErrorOf("source", cfg, fmt.Errorf("failed: %w", errors.Join(&net.DNSError{Name: "db1.example", Err: "no such host"})), false)
	if want := `source: cannot resolve host "db1.example": no such host: fix the host in the source URL`; err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestSplitTableList(t *testing.T) {
	for in, want := range map[string][]string{
		`public.a`:         {`public.a`},
		`public."a,b",s.c`: {`public."a,b"`, `s.c`},
		`"x""y,z".t, u.v`:  {`"x""y,z".t`, ` u.v`},
		``:                 {``},
	} {
		if got := SplitTableList(in); !slices.Equal(got, want) {
			t.Errorf("SplitTableList(%q) = %q, want %q", in, got, want)
		}
	}
}
