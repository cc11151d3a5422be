package source

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// Protocol versions that introduced messages (the proto_version option of
// START_REPLICATION; see logicalproto.h in the PostgreSQL sources).
const (
	protoMin           = 1
	protoStream        = 2 // Stream Start/Stop/Commit/Abort, xid prefix in streamed chunks
	protoTwoPhase      = 3 // Begin Prepare, Prepare, Commit/Rollback Prepared, Stream Prepare
	protoStreamAbortV4 = 4 // Stream Abort may carry abort LSN and time (streaming=parallel)
	protoMax           = 4
)

// pgEpochUnix is 2000-01-01 00:00:00 UTC, the epoch of PostgreSQL timestamps, in Unix seconds.
const pgEpochUnix = 946684800

// Sizes of the fixed parts used to reject impossible counts before allocating.
const (
	minColumnBytes   = 1 + 1 + 4 + 4 // Relation column: flags, empty name's NUL, type OID, typmod
	minValueBytes    = 1             // TupleData value: the kind byte alone ('n', 'u')
	relationIDBytes  = 4
	abortInfoBytesV4 = 8 + 8 // Stream Abort: abort LSN + abort timestamp
)

// Decoder decodes the pgoutput messages of one replication stream, in order. It
// tracks whether it is inside a streamed transaction chunk (between Stream Start and
// Stream Stop), because that decides whether change messages carry an xid.
//
// Ownership: to keep the hot path free of allocations, Decode reuses one Insert,
// Update, Delete, Truncate and LogicalMessage per Decoder, and their tuples, values
// and contents are sub-slices of the input buffer. Such a message, and every slice
// reachable from it, is valid only until the next call to Decode or until the caller
// reuses or modifies the input buffer, whichever comes first; use its Clone method
// to keep it longer. All other messages (Relation, TypeMessage, Begin, Commit,
// Origin, the Stream and two-phase messages) are freshly allocated, hold no
// reference to the input buffer, and may be kept.
//
// A Decoder is not safe for concurrent use.
type Decoder struct {
	protoVersion int
	inStream     bool

	// The reused messages and the backing arrays of their tuples (grow only).
	// The backing arrays are kept apart from the messages so that a caller who
	// changes a returned message (say, sets Old to nil) does not lose them.
	insert   Insert
	update   Update
	delete   Delete
	truncate Truncate
	message  LogicalMessage

	insertNew   []Value
	updateOld   []Value
	updateNew   []Value
	deleteOld   []Value
	truncateIDs []uint32
	lastPrefix  string // LogicalMessage.Prefix of the previous message, reused when equal
}

// NewDecoder returns a decoder for the given negotiated proto_version (1..4). With
// any other version, Decode returns an error for every message.
func NewDecoder(protoVersion int) *Decoder {
	return &Decoder{protoVersion: protoVersion}
}

// ProtoVersion returns the protocol version the decoder was created for.
func (d *Decoder) ProtoVersion() int { return d.protoVersion }

// InStream reports whether the decoder is inside a streamed transaction chunk:
// after a Stream Start and before the matching Stream Stop.
func (d *Decoder) InStream() bool { return d.inStream }

// DecodeError describes a pgoutput message that could not be decoded: truncated,
// malformed, of an unknown type, not valid for the negotiated protocol version, or
// out of place in the stream.
type DecodeError struct {
	Type   MessageType // the message's type byte (0 for an empty message)
	Offset int         // the byte offset in the message where the problem was found
	// Msg is "<problem>: <detail>", e.g. "truncated: need 4 bytes for relation id";
	// Error inserts the offset after the problem.
	Msg string
}

// Error formats the error as, e.g.,
// "pgoutput: insert message truncated at offset 17: need 4 bytes for relation id".
// For a type byte that is not a pgoutput message it is
// "pgoutput: unknown message type 'Z' (0x5a)".
func (e *DecodeError) Error() string {
	name := e.Type.name()
	if name == "" {
		return "pgoutput: " + e.Msg
	}
	problem, detail, found := strings.Cut(e.Msg, ": ")
	if !found {
		return fmt.Sprintf("pgoutput: %s message %s at offset %d", name, e.Msg, e.Offset)
	}
	return fmt.Sprintf("pgoutput: %s message %s at offset %d: %s", name, problem, e.Offset, detail)
}

// String returns the message type's name as the manual spells it, e.g. "Stream Commit",
// or its byte for a type that is not a pgoutput message.
func (t MessageType) String() string {
	switch t {
	case MsgBegin:
		return "Begin"
	case MsgCommit:
		return "Commit"
	case MsgOrigin:
		return "Origin"
	case MsgRelation:
		return "Relation"
	case MsgType:
		return "Type"
	case MsgInsert:
		return "Insert"
	case MsgUpdate:
		return "Update"
	case MsgDelete:
		return "Delete"
	case MsgTruncate:
		return "Truncate"
	case MsgMessage:
		return "Message"
	case MsgStreamStart:
		return "Stream Start"
	case MsgStreamStop:
		return "Stream Stop"
	case MsgStreamCommit:
		return "Stream Commit"
	case MsgStreamAbort:
		return "Stream Abort"
	case MsgBeginPrepare:
		return "Begin Prepare"
	case MsgPrepare:
		return "Prepare"
	case MsgCommitPrepared:
		return "Commit Prepared"
	case MsgRollbackPrepared:
		return "Rollback Prepared"
	case MsgStreamPrepare:
		return "Stream Prepare"
	}
	return "MessageType(" + quoteByte(byte(t)) + ")"
}

// name is the lower-case name used in error messages ("<name> message ..."), or ""
// for a type that is not a pgoutput message.
func (t MessageType) name() string {
	switch t {
	case MsgBegin:
		return "begin"
	case MsgCommit:
		return "commit"
	case MsgOrigin:
		return "origin"
	case MsgRelation:
		return "relation"
	case MsgType:
		return "type"
	case MsgInsert:
		return "insert"
	case MsgUpdate:
		return "update"
	case MsgDelete:
		return "delete"
	case MsgTruncate:
		return "truncate"
	case MsgMessage:
		return "logical decoding"
	case MsgStreamStart:
		return "stream start"
	case MsgStreamStop:
		return "stream stop"
	case MsgStreamCommit:
		return "stream commit"
	case MsgStreamAbort:
		return "stream abort"
	case MsgBeginPrepare:
		return "begin prepare"
	case MsgPrepare:
		return "prepare"
	case MsgCommitPrepared:
		return "commit prepared"
	case MsgRollbackPrepared:
		return "rollback prepared"
	case MsgStreamPrepare:
		return "stream prepare"
	}
	return ""
}

// quoteByte renders b as 'Z' (0x5a), or as 0x00 when it is not printable ASCII.
func quoteByte(b byte) string {
	if b >= 0x20 && b < 0x7f {
		return fmt.Sprintf("'%c' (0x%02x)", b, b)
	}
	return fmt.Sprintf("0x%02x", b)
}

// minProtoVersion returns the protocol version that introduced t.
func minProtoVersion(t MessageType) int {
	switch t {
	case MsgStreamStart, MsgStreamStop, MsgStreamCommit, MsgStreamAbort:
		return protoStream
	case MsgBeginPrepare, MsgPrepare, MsgCommitPrepared, MsgRollbackPrepared, MsgStreamPrepare:
		return protoTwoPhase
	}
	return protoMin
}

// allowedInStream reports whether t may appear inside a streamed chunk. Stream Start
// may be followed by an Origin message; the other control messages come outside.
func allowedInStream(t MessageType) bool {
	switch t {
	case MsgRelation, MsgType, MsgInsert, MsgUpdate, MsgDelete, MsgTruncate, MsgMessage,
		MsgOrigin, MsgStreamStop:
		return true
	}
	return false
}

// Decode decodes one pgoutput message: the payload of an XLogData message. See
// Decoder for how long the result stays valid. Input that is truncated, malformed,
// of an unknown type, not valid in the negotiated protocol version or out of place
// (e.g. Stream Stop outside a streamed chunk) gives a *DecodeError; Decode never
// reads outside buf and never panics. A failed Decode leaves the stream state as it was.
func (d *Decoder) Decode(buf []byte) (Message, error) {
	if len(buf) == 0 {
		return nil, &DecodeError{Msg: "empty message: an XLogData payload holds at least the type byte"}
	}
	typ := MessageType(buf[0])
	if typ.name() == "" {
		return nil, &DecodeError{Type: typ, Msg: "unknown message type " + quoteByte(buf[0])}
	}
	if d.protoVersion < protoMin || d.protoVersion > protoMax {
		return nil, &DecodeError{Type: typ, Msg: fmt.Sprintf(
			"not decodable: unsupported proto_version %d; use 1 to 4", d.protoVersion)}
	}
	if v := minProtoVersion(typ); d.protoVersion < v {
		return nil, &DecodeError{Type: typ, Msg: fmt.Sprintf(
			"not valid in protocol version %d: it needs proto_version %d or later; create the decoder with the proto_version sent in START_REPLICATION",
			d.protoVersion, v)}
	}
	if d.inStream && !allowedInStream(typ) {
		return nil, &DecodeError{Type: typ, Msg: "out of place: inside a streamed transaction chunk (after Stream Start, before Stream Stop)"}
	}

	r := reader{buf: buf, off: 1, typ: typ}
	var msg Message
	switch typ {
	case MsgInsert:
		msg = d.decodeInsert(&r)
	case MsgUpdate:
		msg = d.decodeUpdate(&r)
	case MsgDelete:
		msg = d.decodeDelete(&r)
	case MsgBegin:
		msg = decodeBegin(&r)
	case MsgCommit:
		msg = decodeCommit(&r)
	case MsgOrigin:
		msg = decodeOrigin(&r)
	case MsgRelation:
		msg = d.decodeRelation(&r)
	case MsgType:
		msg = d.decodeType(&r)
	case MsgTruncate:
		msg = d.decodeTruncate(&r)
	case MsgMessage:
		msg = d.decodeMessage(&r)
	case MsgStreamStart:
		msg = decodeStreamStart(&r)
	case MsgStreamStop:
		if !d.inStream {
			return nil, &DecodeError{Type: typ, Msg: "out of place: Stream Stop without a preceding Stream Start"}
		}
		msg = &StreamStop{}
	case MsgStreamCommit:
		msg = decodeStreamCommit(&r)
	case MsgStreamAbort:
		msg = d.decodeStreamAbort(&r)
	case MsgBeginPrepare:
		msg = decodeBeginPrepare(&r)
	case MsgPrepare:
		m := &Prepare{}
		m.Flags, m.PrepareLSN, m.EndLSN, m.PrepareTime, m.Xid, m.GID = decodePrepareBody(&r)
		msg = m
	case MsgStreamPrepare:
		m := &StreamPrepare{}
		m.Flags, m.PrepareLSN, m.EndLSN, m.PrepareTime, m.Xid, m.GID = decodePrepareBody(&r)
		msg = m
	case MsgCommitPrepared:
		m := &CommitPrepared{}
		m.Flags, m.CommitLSN, m.EndLSN, m.CommitTime, m.Xid, m.GID = decodePrepareBody(&r)
		msg = m
	case MsgRollbackPrepared:
		msg = decodeRollbackPrepared(&r)
	}
	if r.err == nil && r.off != len(buf) {
		r.fail(r.off, "malformed: %d unexpected trailing bytes after the last field", len(buf)-r.off)
	}
	if r.err != nil {
		return nil, r.err
	}
	switch typ {
	case MsgStreamStart:
		d.inStream = true
	case MsgStreamStop:
		d.inStream = false
	}
	return msg, nil
}

// reader reads big-endian fields from one message with explicit bounds checks. The
// first failure is kept in err; later reads then return zero values, so a decode
// function can read all fields and check err once.
type reader struct {
	buf []byte
	off int
	typ MessageType
	err *DecodeError
}

func (r *reader) fail(off int, format string, args ...any) {
	if r.err == nil {
		r.err = &DecodeError{Type: r.typ, Offset: off, Msg: fmt.Sprintf(format, args...)}
	}
}

// truncated records that n bytes were needed for what at the current offset. It is
// kept out of line so that the read helpers stay small enough to inline.
//
//go:noinline
func (r *reader) truncated(n int, what string) {
	r.fail(r.off, "truncated: need %d bytes for %s, %d left", n, what, len(r.buf)-r.off)
}

func (r *reader) u8(what string) uint8 {
	if b := r.buf[r.off:]; len(b) >= 1 {
		r.off++
		return b[0]
	}
	r.truncated(1, what)
	return 0
}

func (r *reader) u16(what string) uint16 {
	if b := r.buf[r.off:]; len(b) >= 2 {
		r.off += 2
		return binary.BigEndian.Uint16(b)
	}
	r.truncated(2, what)
	return 0
}

func (r *reader) u32(what string) uint32 {
	if b := r.buf[r.off:]; len(b) >= 4 {
		r.off += 4
		return binary.BigEndian.Uint32(b)
	}
	r.truncated(4, what)
	return 0
}

func (r *reader) u64(what string) uint64 {
	if b := r.buf[r.off:]; len(b) >= 8 {
		r.off += 8
		return binary.BigEndian.Uint64(b)
	}
	r.truncated(8, what)
	return 0
}

func (r *reader) lsn(what string) LSN { return LSN(r.u64(what)) }

// timestamp reads an Int64 TimestampTz: microseconds since 2000-01-01 UTC.
func (r *reader) timestamp(what string) time.Time {
	return pgTime(int64(r.u64(what)))
}

// pgTime converts PostgreSQL microseconds since 2000-01-01 UTC to a UTC time.Time.
func pgTime(micros int64) time.Time {
	sec, usec := micros/1e6, micros%1e6
	if usec < 0 {
		sec--
		usec += 1e6
	}
	return time.Unix(pgEpochUnix+sec, usec*1e3).UTC()
}

// cstring returns the bytes of a NUL-terminated String field, without the NUL.
func (r *reader) cstring(what string) []byte {
	if r.err != nil {
		return nil
	}
	rest := r.buf[r.off:]
	n := bytes.IndexByte(rest, 0)
	if n < 0 {
		r.fail(r.off, "truncated: no NUL terminator for %s in the %d bytes left", what, len(rest))
		return nil
	}
	r.off += n + 1
	return rest[:n:n]
}

func (r *reader) str(what string) string { return string(r.cstring(what)) }

// xid reads the transaction id that change messages carry inside streamed chunks.
func (d *Decoder) xid(r *reader) uint32 {
	if !d.inStream {
		return 0
	}
	return r.u32("streamed transaction xid")
}

// count reads an Int16 or Int32 element count and checks it against the bytes left,
// at minBytes per element, so that a corrupt count cannot make us allocate more
// than the message could hold.
func (r *reader) count(v int64, at int, what string, minBytes int) int {
	if r.err != nil {
		return 0
	}
	if v < 0 {
		r.fail(at, "malformed: negative %s %d", what, v)
		return 0
	}
	if left := len(r.buf) - r.off; v > int64(left/minBytes) {
		r.fail(at, "truncated: %s %d needs at least %d bytes, %d left", what, v, v*int64(minBytes), left)
		return 0
	}
	return int(v)
}

// tuple decodes a TupleData into the grow-only backing array *backing and returns it.
func (r *reader) tuple(backing *[]Value, what string) Tuple {
	at := r.off
	n := r.count(int64(int16(r.u16("column count"))), at, "column count", minValueBytes)
	if r.err != nil {
		return nil
	}
	t := *backing
	// A tuple of no columns (a table with no published column) is empty, not
	// nil: nil says that no tuple was sent.
	if cap(t) < n || t == nil {
		t = make([]Value, n)
		*backing = t
	}
	t = t[:n]
	buf, off := r.buf, r.off
	for i := range t {
		if off >= len(buf) {
			r.off = off
			r.fail(off, "truncated: need 1 byte for the kind of %s column %d", what, i+1)
			return nil
		}
		kind := buf[off]
		off++
		switch kind {
		case ValueNull, ValueUnchanged:
			t[i] = Value{Kind: kind}
		case ValueText, ValueBinary:
			if len(buf)-off < 4 {
				r.off = off
				r.fail(off, "truncated: need 4 bytes for the length of %s column %d", what, i+1)
				return nil
			}
			l := binary.BigEndian.Uint32(buf[off:])
			if uint64(l) > uint64(len(buf)-off-4) {
				r.fail(off, "truncated: %s column %d has length %d, %d bytes left",
					what, i+1, int32(l), len(buf)-off-4)
				return nil
			}
			off += 4
			end := off + int(l)
			// Capping the capacity keeps an append by the caller from
			// overwriting the next value in buf.
			t[i] = Value{Kind: kind, Data: buf[off:end:end]}
			off = end
		default:
			r.fail(off-1, "malformed: %s column %d has unknown value kind %s; want 'n', 'u', 't' or 'b'",
				what, i+1, quoteByte(kind))
			return nil
		}
	}
	r.off = off
	return t
}

func (d *Decoder) decodeInsert(r *reader) Message {
	xid := d.xid(r)
	relID := r.u32("relation id")
	at := r.off
	if m := r.u8("new tuple marker"); r.err == nil && m != 'N' {
		r.fail(at, "malformed: new tuple marker is %s, want 'N'", quoteByte(m))
	}
	t := r.tuple(&d.insertNew, "new tuple")
	d.insert = Insert{Xid: xid, RelationID: relID, New: t}
	return &d.insert
}

func (d *Decoder) decodeUpdate(r *reader) Message {
	xid := d.xid(r)
	relID := r.u32("relation id")
	at := r.off
	marker := r.u8("tuple marker")
	var oldKind byte
	var old Tuple
	switch {
	case r.err != nil:
	case marker == OldKey || marker == OldFull:
		oldKind = marker
		old = r.tuple(&d.updateOld, "old tuple")
		at = r.off
		if m := r.u8("new tuple marker"); r.err == nil && m != 'N' {
			r.fail(at, "malformed: new tuple marker is %s, want 'N'", quoteByte(m))
		}
	case marker != 'N':
		r.fail(at, "malformed: tuple marker is %s, want 'K', 'O' or 'N'", quoteByte(marker))
	}
	newTuple := r.tuple(&d.updateNew, "new tuple")
	d.update = Update{Xid: xid, RelationID: relID, OldKind: oldKind, Old: old, New: newTuple}
	return &d.update
}

func (d *Decoder) decodeDelete(r *reader) Message {
	xid := d.xid(r)
	relID := r.u32("relation id")
	at := r.off
	marker := r.u8("old tuple marker")
	if r.err == nil && marker != OldKey && marker != OldFull {
		r.fail(at, "malformed: old tuple marker is %s, want 'K' or 'O'", quoteByte(marker))
	}
	old := r.tuple(&d.deleteOld, "old tuple")
	d.delete = Delete{Xid: xid, RelationID: relID, OldKind: marker, Old: old}
	return &d.delete
}

func decodeBegin(r *reader) Message {
	m := &Begin{}
	m.FinalLSN = r.lsn("final LSN")
	m.CommitTime = r.timestamp("commit timestamp")
	m.Xid = r.u32("xid")
	return m
}

func decodeCommit(r *reader) Message {
	m := &Commit{}
	m.Flags = r.u8("flags")
	m.CommitLSN = r.lsn("commit LSN")
	m.EndLSN = r.lsn("end LSN")
	m.CommitTime = r.timestamp("commit timestamp")
	return m
}

func decodeOrigin(r *reader) Message {
	m := &Origin{}
	m.CommitLSN = r.lsn("origin commit LSN")
	m.Name = r.str("origin name")
	return m
}

func (d *Decoder) decodeRelation(r *reader) Message {
	m := &Relation{}
	m.Xid = d.xid(r)
	m.RelationID = r.u32("relation id")
	m.Namespace = r.str("namespace")
	m.Name = r.str("relation name")
	m.ReplicaIdentity = r.u8("replica identity")
	at := r.off
	n := r.count(int64(int16(r.u16("column count"))), at, "column count", minColumnBytes)
	if r.err != nil {
		return nil
	}
	m.Columns = make([]RelationColumn, n)
	for i := range m.Columns {
		c := &m.Columns[i]
		c.Flags = r.u8("column flags")
		c.Name = r.str("column name")
		c.TypeOID = r.u32("column type OID")
		c.TypeMod = int32(r.u32("column type modifier"))
		if r.err != nil {
			return nil
		}
	}
	return m
}

func (d *Decoder) decodeType(r *reader) Message {
	m := &TypeMessage{}
	m.Xid = d.xid(r)
	m.TypeOID = r.u32("type OID")
	m.Namespace = r.str("namespace")
	m.Name = r.str("type name")
	return m
}

func (d *Decoder) decodeTruncate(r *reader) Message {
	xid := d.xid(r)
	at := r.off
	n := int64(int32(r.u32("relation count")))
	options := r.u8("options")
	count := r.count(n, at, "relation count", relationIDBytes)
	if r.err != nil {
		return nil
	}
	ids := d.truncateIDs
	if cap(ids) < count {
		ids = make([]uint32, count)
		d.truncateIDs = ids
	}
	ids = ids[:count]
	for i := range ids {
		ids[i] = r.u32("relation id")
	}
	d.truncate = Truncate{Xid: xid, Options: options, RelationIDs: ids}
	return &d.truncate
}

func (d *Decoder) decodeMessage(r *reader) Message {
	xid := d.xid(r)
	flags := r.u8("flags")
	lsn := r.lsn("message LSN")
	prefix := r.cstring("prefix")
	at := r.off
	n := r.u32("content length")
	if r.err == nil && uint64(n) > uint64(len(r.buf)-r.off) {
		r.fail(at, "truncated: content length %d exceeds the %d bytes left", int32(n), len(r.buf)-r.off)
	}
	if r.err != nil {
		return nil
	}
	end := r.off + int(n)
	content := r.buf[r.off:end:end]
	r.off = end
	// Messages of one prefix usually come in runs; keep the string instead of
	// allocating it again.
	if string(prefix) != d.lastPrefix {
		d.lastPrefix = string(prefix)
	}
	d.message = LogicalMessage{Xid: xid, Flags: flags, LSN: lsn, Prefix: d.lastPrefix, Content: content}
	return &d.message
}

func decodeStreamStart(r *reader) Message {
	m := &StreamStart{}
	m.Xid = r.u32("xid")
	at := r.off
	first := r.u8("first segment flag")
	if r.err == nil && first > 1 {
		r.fail(at, "malformed: first segment flag is %d, want 0 or 1", first)
	}
	m.FirstSegment = first == 1
	return m
}

func decodeStreamCommit(r *reader) Message {
	m := &StreamCommit{}
	m.Xid = r.u32("xid")
	m.Flags = r.u8("flags")
	m.CommitLSN = r.lsn("commit LSN")
	m.EndLSN = r.lsn("end LSN")
	m.CommitTime = r.timestamp("commit timestamp")
	return m
}

// decodeStreamAbort reads a Stream Abort. From protocol 4 the abort LSN and time follow
// when streaming=parallel was requested; the decoder does not know the streaming
// option, so it tells by the length: exactly 16 more bytes, or none.
func (d *Decoder) decodeStreamAbort(r *reader) Message {
	m := &StreamAbort{}
	m.Xid = r.u32("xid")
	m.SubXid = r.u32("subtransaction xid")
	if r.err != nil {
		return nil
	}
	left := len(r.buf) - r.off
	switch {
	case left == 0:
	case d.protoVersion >= protoStreamAbortV4 && left == abortInfoBytesV4:
		m.HasAbortInfo = true
		m.AbortLSN = r.lsn("abort LSN")
		m.AbortTime = r.timestamp("abort timestamp")
	case d.protoVersion >= protoStreamAbortV4:
		r.fail(r.off, "malformed: %d bytes after the subtransaction xid, want 0 or %d (abort LSN and timestamp)",
			left, abortInfoBytesV4)
	default:
		r.fail(r.off, "malformed: %d unexpected trailing bytes after the subtransaction xid (abort info needs proto_version 4)", left)
	}
	return m
}

func decodeBeginPrepare(r *reader) Message {
	m := &BeginPrepare{}
	m.PrepareLSN = r.lsn("prepare LSN")
	m.EndLSN = r.lsn("end LSN")
	m.PrepareTime = r.timestamp("prepare timestamp")
	m.Xid = r.u32("xid")
	m.GID = r.str("GID")
	return m
}

// decodePrepareBody reads the layout shared by Prepare, Stream Prepare and Commit
// Prepared: flags, two LSNs, a timestamp, the xid and the GID.
func decodePrepareBody(r *reader) (flags uint8, lsn1, lsn2 LSN, ts time.Time, xid uint32, gid string) {
	flags = r.u8("flags")
	lsn1 = r.lsn(firstLSNName(r.typ))
	lsn2 = r.lsn("end LSN")
	ts = r.timestamp(timestampName(r.typ))
	xid = r.u32("xid")
	gid = r.str("GID")
	return
}

func firstLSNName(t MessageType) string {
	if t == MsgCommitPrepared {
		return "commit LSN"
	}
	return "prepare LSN"
}

func timestampName(t MessageType) string {
	if t == MsgCommitPrepared {
		return "commit timestamp"
	}
	return "prepare timestamp"
}

func decodeRollbackPrepared(r *reader) Message {
	m := &RollbackPrepared{}
	m.Flags = r.u8("flags")
	m.PrepareEndLSN = r.lsn("prepare end LSN")
	m.RollbackEndLSN = r.lsn("rollback end LSN")
	m.PrepareTime = r.timestamp("prepare timestamp")
	m.RollbackTime = r.timestamp("rollback timestamp")
	m.Xid = r.u32("xid")
	m.GID = r.str("GID")
	return m
}
