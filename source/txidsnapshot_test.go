package source

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestTxidSnapshot(t *testing.T) {
	s, err := ParseTxidSnapshot("1000:1010:1003,1001")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "1000:1010:1001,1003" {
		t.Errorf("String() = %q", got)
	}
	for xid, want := range map[uint32]bool{999: true, 1000: true, 1001: false, 1002: true, 1003: false, 1009: true, 1010: false, 5000: false} {
		if got := s.Visible(xid); got != want {
			t.Errorf("Visible(%d) = %v, want %v", xid, got, want)
		}
	}
	// Epoch-qualified ids: 32-bit ids near the snapshot land in its epoch,
	// across a wraparound too.
	epoch := uint64(3) << 32
	s = TxidSnapshot{Xmin: epoch - 5, Xmax: epoch + 5, Xip: []uint64{epoch - 2, epoch + 1}}
	for xid, want := range map[uint32]bool{0xFFFFFFF0: true, 0xFFFFFFFD: true, 0xFFFFFFFE: false, 0: true, 1: false, 4: true, 5: false, 100: false} {
		if got := s.Visible(xid); got != want {
			t.Errorf("wrapped Visible(%#x) = %v, want %v", xid, got, want)
		}
	}
	for _, bad := range []string{"", "1:2", "5:4:4", "1:5:7", "a:b:", "1:5:2,x"} {
		if _, err := ParseTxidSnapshot(bad); err == nil {
			t.Errorf("ParseTxidSnapshot(%q) accepted", bad)
		}
	}
	if s, err := ParseTxidSnapshot("7:7:"); err != nil || len(s.Xip) != 0 || !s.Visible(6) || s.Visible(7) {
		t.Errorf("7:7: → %v, %v", s, err)
	}
}

// TestFullXid: a 32-bit xid goes to the epoch nearest the reference, on
// either side of it, and never before the first epoch: at epoch 0, an xid at
// or past the reference (a prepared transaction still in progress is not
// below a snapshot's xmax) is itself, not epoch -1's.
func TestFullXid(t *testing.T) {
	const epoch = 1 << 32
	for _, c := range []struct {
		ref  uint64
		xid  uint32
		want uint64
	}{
		{ref: 39331, xid: 39331, want: 39331},
		{ref: 39331, xid: 39340, want: 39340},
		{ref: 39331, xid: 39000, want: 39000},
		{ref: 3, xid: 4000000000, want: 4000000000}, // no epoch -1
		{ref: 5*epoch + 100, xid: 90, want: 5*epoch + 90},
		{ref: 5*epoch + 100, xid: 110, want: 5*epoch + 110},
		{ref: 5*epoch + 100, xid: 4294967000, want: 4*epoch + 4294967000}, // just before the wrap
		{ref: 5*epoch + 4294967000, xid: 50, want: 6*epoch + 50},          // just after it
	} {
		if got := FullXid(c.ref, c.xid); got != c.want {
			t.Errorf("FullXid(%d, %d) = %d, want %d", c.ref, c.xid, got, c.want)
		}
	}
}

// TestParseTxidSnapshotForms: the text forms the server prints, byte for
// byte, and what each is read as; then the malformed ones. A slot's exported
// snapshot may print xmin above xmax ("905:902:", seen on every major): the
// server takes every id below xmin as finished and every other as running,
// so it is read as xmin:xmin:.
func TestParseTxidSnapshotForms(t *testing.T) {
	for _, c := range []struct {
		in   string
		want TxidSnapshot
		text string // String() of the result
	}{
		{"905:902:", TxidSnapshot{Xmin: 905, Xmax: 905}, "905:905:"},
		{"906:905:", TxidSnapshot{Xmin: 906, Xmax: 906}, "906:906:"},
		{"4294967301:4294967290:", TxidSnapshot{Xmin: 4294967301, Xmax: 4294967301}, "4294967301:4294967301:"}, // across a wraparound
		{"905:905:", TxidSnapshot{Xmin: 905, Xmax: 905}, "905:905:"},
		{"1:1:", TxidSnapshot{Xmin: 1, Xmax: 1}, "1:1:"},
		{"905:910:", TxidSnapshot{Xmin: 905, Xmax: 910}, "905:910:"},
		{"905:910:905", TxidSnapshot{Xmin: 905, Xmax: 910, Xip: []uint64{905}}, "905:910:905"},
		{"905:910:909,905,907", TxidSnapshot{Xmin: 905, Xmax: 910, Xip: []uint64{905, 907, 909}}, "905:910:905,907,909"},
		{"905:910:907,907", TxidSnapshot{Xmin: 905, Xmax: 910, Xip: []uint64{907}}, "905:910:907"},
		{"0905:0910:0907", TxidSnapshot{Xmin: 905, Xmax: 910, Xip: []uint64{907}}, "905:910:907"},
		{"18446744073709551614:18446744073709551615:", TxidSnapshot{Xmin: 1<<64 - 2, Xmax: 1<<64 - 1}, "18446744073709551614:18446744073709551615:"},
	} {
		got, err := ParseTxidSnapshot(c.in)
		if err != nil {
			t.Errorf("ParseTxidSnapshot(%q): %v", c.in, err)
			continue
		}
		if got.Xmin != c.want.Xmin || got.Xmax != c.want.Xmax || !slices.Equal(got.Xip, c.want.Xip) {
			t.Errorf("ParseTxidSnapshot(%q) = %+v, want %+v", c.in, got, c.want)
		}
		if s := got.String(); s != c.text {
			t.Errorf("ParseTxidSnapshot(%q).String() = %q, want %q", c.in, s, c.text)
		}
		if again, err := ParseTxidSnapshot(got.String()); err != nil || again.String() != got.String() {
			t.Errorf("%q does not read back: %+v, %v", got.String(), again, err)
		}
	}
	for _, bad := range []string{
		"", ":", "::", ":1:", "1::", "1:2", "1:2:3:4", "905:902:903", "905:902:905", "905:902:901",
		"0:0:", "0:5:", "5:4:4", "1:5:5", "1:5:0", "1:5:7", "1:5:2,", "1:5:,2", "1:5:2,,3",
		" 1:5:", "1 :5:", "1: 5:", "1:5: 2", "1:5:2 ", "1:5:\n", "+1:5:", "-1:5:", "1:+5:", "1:5:+2",
		"1_0:20:", "0x10:20:", "1e3:2000:", "a:b:", "1:5:2,x", "１:5:", "1:5:2\x00",
		"18446744073709551616:18446744073709551617:", "1:18446744073709551616:",
	} {
		if s, err := ParseTxidSnapshot(bad); err == nil {
			t.Errorf("ParseTxidSnapshot(%q) accepted: %+v", bad, s)
		} else if !strings.Contains(err.Error(), "is not a snapshot of the form") {
			t.Errorf("ParseTxidSnapshot(%q): %v", bad, err)
		}
	}
}

// TestTxidSnapshotXminAboveXmax: a slot's snapshot printed with xmin above
// xmax sees what the server's XidInMVCCSnapshot sees: every id below xmin
// (those between xmax and xmin too, the finished ones it never tracked), and
// nothing from xmin on.
func TestTxidSnapshotXminAboveXmax(t *testing.T) {
	s, err := ParseTxidSnapshot("905:902:")
	if err != nil {
		t.Fatal(err)
	}
	for xid, want := range map[uint32]bool{3: true, 901: true, 902: true, 903: true, 904: true, 905: false, 906: false, 1 << 31: false} {
		if got := s.Visible(xid); got != want {
			t.Errorf("Visible(%d) = %v, want %v", xid, got, want)
		}
	}
	// The same across a wraparound: ids just before it are below xmin.
	epoch := uint64(1) << 32
	s, err = ParseTxidSnapshot(fmt.Sprintf("%d:%d:", epoch+5, epoch-6))
	if err != nil {
		t.Fatal(err)
	}
	for xid, want := range map[uint32]bool{0xFFFFFFF0: true, 0xFFFFFFFA: true, 0xFFFFFFFF: true, 3: true, 4: true, 5: false, 6: false} {
		if got := s.Visible(xid); got != want {
			t.Errorf("wrapped Visible(%#x) = %v, want %v", xid, got, want)
		}
	}
}

// FuzzParseTxidSnapshot: no input panics, and what is accepted has xmin <= xmax,
// its ids sorted, distinct and in [xmin, xmax), and reads back from String.
func FuzzParseTxidSnapshot(f *testing.F) {
	for _, s := range []string{"905:902:", "905:910:907,905", "1:1:", "0:0:", "5:4:4", "1:5:2,,3", "18446744073709551615:1:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseTxidSnapshot(in)
		if err != nil {
			return
		}
		if s.Xmin == 0 || s.Xmin > s.Xmax {
			t.Fatalf("%q → %+v", in, s)
		}
		for i, x := range s.Xip {
			if x < s.Xmin || x >= s.Xmax || i > 0 && x <= s.Xip[i-1] {
				t.Fatalf("%q → %+v", in, s)
			}
		}
		if again, err := ParseTxidSnapshot(s.String()); err != nil || again.String() != s.String() {
			t.Fatalf("%q → %q does not read back: %v", in, s.String(), err)
		}
	})
}
