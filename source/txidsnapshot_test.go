package source

import "testing"

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
	for _, bad := range []string{"", "1:2", "5:4:", "1:5:7", "a:b:", "1:5:2,x"} {
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
