package source

import (
	"errors"
	"strings"
	"testing"
)

func TestSlotReadSQLColumnsByVersion(t *testing.T) {
	tests := []struct {
		major       int
		has, hasNot []string
	}{
		{12, nil, []string{"wal_status", "two_phase", "conflicting", "invalidation_reason"}},
		{13, []string{"wal_status"}, []string{"two_phase", "conflicting", "invalidation_reason"}},
		{14, []string{"wal_status", "two_phase"}, []string{"conflicting", "invalidation_reason"}},
		{16, []string{"wal_status", "two_phase", "conflicting"}, []string{"invalidation_reason"}},
		{18, []string{"wal_status", "two_phase", "invalidation_reason"}, []string{"conflicting"}},
	}
	for _, tt := range tests {
		sql := readSlotSQL(tt.major)
		for _, c := range tt.has {
			if !strings.Contains(sql, c) {
				t.Errorf("%d: %s lacks %s", tt.major, sql, c)
			}
		}
		for _, c := range tt.hasNot {
			if strings.Contains(sql, c) {
				t.Errorf("%d: %s has %s", tt.major, sql, c)
			}
		}
		// Always twelve columns, matching ReadSlot's Scan.
		if n := topLevelCommas(strings.SplitN(sql, " FROM ", 2)[0]) + 1; n != 12 {
			t.Errorf("%d: %d columns in %s", tt.major, n, sql)
		}
	}
}

func TestSlotStateInvalidated(t *testing.T) {
	for _, tt := range []struct {
		s    SlotState
		want bool
	}{
		{SlotState{WALStatus: "reserved"}, false},
		{SlotState{WALStatus: "unreserved"}, false},
		{SlotState{WALStatus: "lost"}, true},
		{SlotState{InvalidationReason: "idle_timeout"}, true},
		{SlotState{}, false},
	} {
		if got := tt.s.Invalidated(); got != tt.want {
			t.Errorf("%+v.Invalidated() = %v", tt.s, got)
		}
	}
}

func TestSlotCreatePublicationSQL(t *testing.T) {
	got, err := CreatePublicationSQL("pgrelay", nil)
	if err != nil || got != `CREATE PUBLICATION "pgrelay" FOR ALL TABLES` {
		t.Fatalf("%q %v", got, err)
	}
	got, err = CreatePublicationSQL(`my"pub`, []string{"public.orders", `"Sales"."Q1"`})
	if err != nil || got != `CREATE PUBLICATION "my""pub" FOR TABLE "public"."orders", "Sales"."Q1"` {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := CreatePublicationSQL("p", []string{"orders"}); err == nil {
		t.Fatal("unqualified table accepted")
	}
	if _, err := CreatePublicationSQL("", nil); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestPreflightErrorUnwraps(t *testing.T) {
	e := &PreflightError{Problems: []error{
		errorsWrap(ErrWALLevel, "wal_level is replica"),
		errorsWrap(ErrNoFreeSlot, "all 2 slots taken"),
	}}
	if !errors.Is(e, ErrWALLevel) || !errors.Is(e, ErrNoFreeSlot) || errors.Is(e, ErrSlotPlugin) {
		t.Fatal("errors.Is does not see the problems")
	}
	if lines := strings.Split(e.Error(), "\n"); len(lines) != 2 {
		t.Fatalf("want one line per problem: %q", e.Error())
	}
}

func errorsWrap(sentinel error, msg string) error {
	return &wrapped{msg: msg, err: sentinel}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

func topLevelCommas(s string) int {
	depth, n := 0, 0
	for _, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return n
}
