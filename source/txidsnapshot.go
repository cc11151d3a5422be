package source

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// TxidSnapshot is a snapshot as txid_current_snapshot() prints it,
// "xmin:xmax:xip,…", with epoch-qualified 64-bit transaction ids: the
// transactions whose effects it sees are those below Xmin and those below Xmax
// not listed in Xip.
type TxidSnapshot struct {
	Xmin, Xmax uint64
	Xip        []uint64
}

// ParseTxidSnapshot reads the text form of a txid_snapshot (or pg_snapshot).
func ParseTxidSnapshot(s string) (TxidSnapshot, error) {
	bad := func() (TxidSnapshot, error) {
		return TxidSnapshot{}, fmt.Errorf("source: %q is not a snapshot of the form xmin:xmax:xip,…", s)
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return bad()
	}
	var snap TxidSnapshot
	var err error
	if snap.Xmin, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return bad()
	}
	if snap.Xmax, err = strconv.ParseUint(parts[1], 10, 64); err != nil || snap.Xmax < snap.Xmin {
		return bad()
	}
	if parts[2] != "" {
		for _, x := range strings.Split(parts[2], ",") {
			v, err := strconv.ParseUint(x, 10, 64)
			if err != nil || v < snap.Xmin || v >= snap.Xmax {
				return bad()
			}
			snap.Xip = append(snap.Xip, v)
		}
	}
	slices.Sort(snap.Xip)
	return snap, nil
}

// String is the text form ParseTxidSnapshot reads.
func (s TxidSnapshot) String() string {
	xip := make([]string, len(s.Xip))
	for i, x := range s.Xip {
		xip[i] = strconv.FormatUint(x, 10)
	}
	return fmt.Sprintf("%d:%d:%s", s.Xmin, s.Xmax, strings.Join(xip, ","))
}

// Visible reports whether the snapshot sees the effects of the transaction
// whose 32-bit id (as the replication protocol sends it) is xid. The id is
// placed in the epoch that puts it nearest to Xmax: a transaction the stream
// carries is never two billion transactions away from a recent snapshot.
func (s TxidSnapshot) Visible(xid uint32) bool {
	full := s.Xmax&^0xFFFFFFFF | uint64(xid)
	switch {
	case full > s.Xmax && full-s.Xmax > 1<<31 && full >= 1<<32:
		full -= 1 << 32
	case full < s.Xmax && s.Xmax-full > 1<<31:
		full += 1 << 32
	}
	if full < s.Xmin {
		return true
	}
	if full >= s.Xmax {
		return false
	}
	_, found := slices.BinarySearch(s.Xip, full)
	return !found
}
