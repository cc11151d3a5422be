package sink

import (
	"fmt"
	"strconv"
	"strings"
)

// Target GIDs of prepared transactions: apply names them, a sink recognises
// its own among a target's prepared transactions, teardown removes them.

// MaxGIDLen is the longest target GID GID can return: "pgrelay_" (8), a slot name
// (at most 63), "_" and a 32-bit xid (at most 10 digits). PostgreSQL allows 200
// bytes; MySQL's XA gtrid allows only 64, so a MySQL sink must split or hash it.
const MaxGIDLen = 8 + 63 + 1 + 10

// GID is the target GID of the prepared source transaction xid streamed from
// slot (invariant 10): deterministic, so that a restart finds it, and never the
// source's GID, which another replica of the same source could use too.
func GID(slot string, xid uint32) string { return fmt.Sprintf("pgrelay_%s_%d", slot, xid) }

// GIDPrefix is the prefix of every target GID of slot.
func GIDPrefix(slot string) string { return "pgrelay_" + slot + "_" }

// OwnGID reports whether gid is one of slot's target GIDs: GIDPrefix then an
// xid. Another slot's prefix may extend ours ("a_" and "a_b_").
func OwnGID(slot, gid string) bool {
	xid, ok := strings.CutPrefix(gid, GIDPrefix(slot))
	if !ok {
		return false
	}
	_, err := strconv.ParseUint(xid, 10, 32)
	return err == nil
}
