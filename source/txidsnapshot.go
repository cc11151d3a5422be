package source

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// TxidSnapshot is a snapshot as txid_current_snapshot() prints it,
// "xmin:xmax:xip,…", with epoch-qualified 64-bit transaction ids: the
// transactions whose effects it sees are those below Xmin and those below Xmax
// not listed in Xip. Xmin <= Xmax in every TxidSnapshot ParseTxidSnapshot
// returns.
type TxidSnapshot struct {
	Xmin, Xmax uint64
	Xip        []uint64
}

// ParseTxidSnapshot reads the text form of a txid_snapshot (or pg_snapshot):
// decimal ids, no sign or space, xmin > 0, and each xip id in [xmin, xmax);
// they may come in any order, repeated.
//
// The snapshot a logical slot exports may read with xmin above xmax
// ("905:902:"): snapbuild.c moves xmin up to the oldest running transaction
// at each xl_running_xacts record, but xmax only past the transactions it saw
// commit, so those in between ended without a commit it tracked (they
// aborted). The server judges every snapshot as XidInMVCCSnapshot does, xmin
// first: an id below xmin is finished, seen if it committed; any other is at
// or past xmax, in progress, unseen. Such a snapshot is therefore read as
// xmin:xmin: (SnapBuildInitialSnapshot lists no id in it), which sees exactly
// the transactions the server's copy under it saw.
func ParseTxidSnapshot(s string) (TxidSnapshot, error) {
	bad := func() (TxidSnapshot, error) {
		return TxidSnapshot{}, fmt.Errorf("source: %q is not a snapshot of the form xmin:xmax:xip,…", s)
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return bad()
	}
	var snap TxidSnapshot
	var ok bool
	if snap.Xmin, ok = parseXid(parts[0]); !ok || snap.Xmin == 0 {
		return bad()
	}
	if snap.Xmax, ok = parseXid(parts[1]); !ok {
		return bad()
	}
	if parts[2] != "" {
		for _, x := range strings.Split(parts[2], ",") {
			v, ok := parseXid(x)
			if !ok || v < snap.Xmin || v >= snap.Xmax {
				return bad()
			}
			snap.Xip = append(snap.Xip, v)
		}
	}
	// Xip is empty here when xmax < xmin: no id is in [xmin, xmax).
	snap.Xmax = max(snap.Xmax, snap.Xmin)
	slices.Sort(snap.Xip)
	snap.Xip = slices.Compact(snap.Xip)
	return snap, nil
}

// parseXid reads one transaction id of a snapshot's text: decimal digits
// only (ParseUint takes no sign, space or underscore in base 10).
func parseXid(s string) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// String is the text form ParseTxidSnapshot reads.
func (s TxidSnapshot) String() string {
	xip := make([]string, len(s.Xip))
	for i, x := range s.Xip {
		xip[i] = strconv.FormatUint(x, 10)
	}
	return fmt.Sprintf("%d:%d:%s", s.Xmin, s.Xmax, strings.Join(xip, ","))
}

// FullXid widens xid, a 32-bit transaction id as the replication protocol
// sends it, to 64 bits (xid8): it is placed in the epoch that puts it nearest
// to ref, a recent full id (a snapshot's xmax). A transaction the stream
// carries is never two billion transactions away from a recent snapshot, on
// either side: one still in progress (a prepared one) may be at or past xmax.
// There is no epoch before the first.
func FullXid(ref uint64, xid uint32) uint64 {
	full := ref&^0xFFFFFFFF | uint64(xid)
	switch {
	case full > ref && full-ref > 1<<31 && full >= 1<<32:
		full -= 1 << 32
	case full < ref && ref-full > 1<<31:
		full += 1 << 32
	}
	return full
}

// Visible reports whether the snapshot sees the effects of the transaction
// whose 32-bit id (as the replication protocol sends it) is xid, widened
// with FullXid.
func (s TxidSnapshot) Visible(xid uint32) bool {
	full := FullXid(s.Xmax, xid)
	if full < s.Xmin {
		return true
	}
	if full >= s.Xmax {
		return false
	}
	_, found := slices.BinarySearch(s.Xip, full)
	return !found
}

// XactAborted tells whether source transaction xid (32 bits, as pgoutput
// sends it) was rolled back, widened to 64 bits near the current snapshot's
// xmax (FullXid). pg_xact_status needs PostgreSQL 13; two-phase decoding,
// which asks, needs 15.
func XactAborted(ctx context.Context, conn *pgx.Conn, xid uint32) (bool, error) {
	var text string
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text`).Scan(&text); err != nil {
		return false, err
	}
	xmax, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return false, fmt.Errorf("read the source's snapshot xmax %q: %w", text, err)
	}
	var status *string
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_xact_status($1::text::xid8)`,
		strconv.FormatUint(FullXid(xmax, xid), 10)).Scan(&status); err != nil {
		return false, err
	}
	return status != nil && *status == "aborted", nil
}
