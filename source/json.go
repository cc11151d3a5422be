package source

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// The JSON form of a decoded message, as `pgrelay tail` prints it one per
// line: written by hand so that the field order is fixed (type, lsn, then the
// message's fields in the manual's order) and one reused buffer serves every
// message.

// Relations resolves relation ids to the Relation messages seen so far.
type Relations map[uint32]*Relation

// AppendJSON appends the JSON object for msg, carried by the XLogData that
// started at lsn, to buf (without a newline). The columns of a row are named
// from the relation's message in rels.
func AppendJSON(buf []byte, lsn LSN, msg Message, rels Relations) ([]byte, error) {
	o := jsonObject{buf: append(buf, '{')}
	o.str("type", typeName(msg.Type()))
	o.lsn("lsn", lsn)
	switch m := msg.(type) {
	case *Begin:
		o.uint("xid", uint64(m.Xid))
		o.lsn("final_lsn", m.FinalLSN)
		o.time("commit_time", m.CommitTime)
	case *Commit:
		o.uint("flags", uint64(m.Flags))
		o.lsn("commit_lsn", m.CommitLSN)
		o.lsn("end_lsn", m.EndLSN)
		o.time("commit_time", m.CommitTime)
	case *Origin:
		o.lsn("commit_lsn", m.CommitLSN)
		o.str("name", m.Name)
	case *Relation:
		o.xid(m.Xid)
		o.uint("relation_id", uint64(m.RelationID))
		o.str("namespace", m.Namespace)
		o.str("name", m.Name)
		o.str("replica_identity", replicaIdentityName(m.ReplicaIdentity))
		o.key("columns")
		o.buf = append(o.buf, '[')
		for i, c := range m.Columns {
			if i > 0 {
				o.buf = append(o.buf, ',')
			}
			col := jsonObject{buf: append(o.buf, '{')}
			col.str("name", c.Name)
			col.bool("key", c.IsKey())
			col.uint("flags", uint64(c.Flags))
			col.uint("type_oid", uint64(c.TypeOID))
			col.int("type_mod", int64(c.TypeMod))
			o.buf = append(col.buf, '}')
		}
		o.buf = append(o.buf, ']')
	case *TypeMessage:
		o.xid(m.Xid)
		o.uint("type_oid", uint64(m.TypeOID))
		o.str("namespace", m.Namespace)
		o.str("name", m.Name)
	case *Insert:
		o.xid(m.Xid)
		rel, err := o.relation(m.RelationID, rels, "insert", lsn)
		if err != nil {
			return buf, err
		}
		if err := o.tuple("new", m.New, rel, lsn, false); err != nil {
			return buf, err
		}
	case *Update:
		o.xid(m.Xid)
		rel, err := o.relation(m.RelationID, rels, "update", lsn)
		if err != nil {
			return buf, err
		}
		if m.OldKind != OldNone {
			o.str("old_kind", oldKindName(m.OldKind))
			if err := o.tuple("old", m.Old, rel, lsn, m.OldKind == OldKey); err != nil {
				return buf, err
			}
		}
		if err := o.tuple("new", m.New, rel, lsn, false); err != nil {
			return buf, err
		}
	case *Delete:
		o.xid(m.Xid)
		rel, err := o.relation(m.RelationID, rels, "delete", lsn)
		if err != nil {
			return buf, err
		}
		o.str("old_kind", oldKindName(m.OldKind))
		if err := o.tuple("old", m.Old, rel, lsn, m.OldKind == OldKey); err != nil {
			return buf, err
		}
	case *Truncate:
		o.xid(m.Xid)
		o.key("relation_ids")
		o.buf = append(o.buf, '[')
		for i, id := range m.RelationIDs {
			if i > 0 {
				o.buf = append(o.buf, ',')
			}
			o.buf = strconv.AppendUint(o.buf, uint64(id), 10)
		}
		o.buf = append(o.buf, ']')
		o.key("relations")
		o.buf = append(o.buf, '[')
		for i, id := range m.RelationIDs {
			rel := rels[id]
			if rel == nil {
				return buf, fmt.Errorf("tail: truncate at %s names relation id %d, which no Relation message described", lsn, id)
			}
			if i > 0 {
				o.buf = append(o.buf, ',')
			}
			o.buf = appendJSONString(o.buf, rel.Namespace+"."+rel.Name)
		}
		o.buf = append(o.buf, ']')
		o.bool("cascade", m.Options&TruncateCascade != 0)
		o.bool("restart_identity", m.Options&TruncateRestartIdentity != 0)
	case *LogicalMessage:
		o.xid(m.Xid)
		o.bool("transactional", m.Transactional())
		o.uint("flags", uint64(m.Flags))
		o.lsn("message_lsn", m.LSN)
		o.str("prefix", m.Prefix)
		o.key("content")
		o.base64(m.Content)
	case *StreamStart:
		o.uint("xid", uint64(m.Xid))
		o.bool("first_segment", m.FirstSegment)
	case *StreamStop:
	case *StreamCommit:
		o.uint("xid", uint64(m.Xid))
		o.uint("flags", uint64(m.Flags))
		o.lsn("commit_lsn", m.CommitLSN)
		o.lsn("end_lsn", m.EndLSN)
		o.time("commit_time", m.CommitTime)
	case *StreamAbort:
		o.uint("xid", uint64(m.Xid))
		o.uint("sub_xid", uint64(m.SubXid))
		if m.HasAbortInfo {
			o.lsn("abort_lsn", m.AbortLSN)
			o.time("abort_time", m.AbortTime)
		}
	case *BeginPrepare:
		o.lsn("prepare_lsn", m.PrepareLSN)
		o.lsn("end_lsn", m.EndLSN)
		o.time("prepare_time", m.PrepareTime)
		o.uint("xid", uint64(m.Xid))
		o.str("gid", m.GID)
	case *Prepare:
		o.uint("flags", uint64(m.Flags))
		o.lsn("prepare_lsn", m.PrepareLSN)
		o.lsn("end_lsn", m.EndLSN)
		o.time("prepare_time", m.PrepareTime)
		o.uint("xid", uint64(m.Xid))
		o.str("gid", m.GID)
	case *CommitPrepared:
		o.uint("flags", uint64(m.Flags))
		o.lsn("commit_lsn", m.CommitLSN)
		o.lsn("end_lsn", m.EndLSN)
		o.time("commit_time", m.CommitTime)
		o.uint("xid", uint64(m.Xid))
		o.str("gid", m.GID)
	case *RollbackPrepared:
		o.uint("flags", uint64(m.Flags))
		o.lsn("prepare_end_lsn", m.PrepareEndLSN)
		o.lsn("rollback_end_lsn", m.RollbackEndLSN)
		o.time("prepare_time", m.PrepareTime)
		o.time("rollback_time", m.RollbackTime)
		o.uint("xid", uint64(m.Xid))
		o.str("gid", m.GID)
	case *StreamPrepare:
		o.uint("flags", uint64(m.Flags))
		o.lsn("prepare_lsn", m.PrepareLSN)
		o.lsn("end_lsn", m.EndLSN)
		o.time("prepare_time", m.PrepareTime)
		o.uint("xid", uint64(m.Xid))
		o.str("gid", m.GID)
	default:
		return buf, fmt.Errorf("tail: no JSON form for message type %s at %s", msg.Type(), lsn)
	}
	return append(o.buf, '}'), nil
}

// typeName is the snake_case name of a message type in tail's output.
func typeName(t MessageType) string {
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
		return "message"
	case MsgStreamStart:
		return "stream_start"
	case MsgStreamStop:
		return "stream_stop"
	case MsgStreamCommit:
		return "stream_commit"
	case MsgStreamAbort:
		return "stream_abort"
	case MsgBeginPrepare:
		return "begin_prepare"
	case MsgPrepare:
		return "prepare"
	case MsgCommitPrepared:
		return "commit_prepared"
	case MsgRollbackPrepared:
		return "rollback_prepared"
	case MsgStreamPrepare:
		return "stream_prepare"
	}
	return "unknown_" + strconv.Itoa(int(t))
}

func replicaIdentityName(b byte) string {
	switch b {
	case 'd':
		return "default"
	case 'n':
		return "nothing"
	case 'f':
		return "full"
	case 'i':
		return "index"
	}
	return string(rune(b))
}

func oldKindName(k byte) string {
	switch k {
	case OldKey:
		return "key"
	case OldFull:
		return "full"
	}
	return "none"
}

// jsonObject appends the members of one JSON object to buf.
type jsonObject struct {
	buf   []byte
	count int
}

func (o *jsonObject) key(k string) {
	if o.count > 0 {
		o.buf = append(o.buf, ',')
	}
	o.count++
	o.buf = appendJSONString(o.buf, k)
	o.buf = append(o.buf, ':')
}

func (o *jsonObject) str(k, v string) {
	o.key(k)
	o.buf = appendJSONString(o.buf, v)
}

func (o *jsonObject) uint(k string, v uint64) {
	o.key(k)
	o.buf = strconv.AppendUint(o.buf, v, 10)
}

func (o *jsonObject) int(k string, v int64) {
	o.key(k)
	o.buf = strconv.AppendInt(o.buf, v, 10)
}

func (o *jsonObject) bool(k string, v bool) {
	o.key(k)
	o.buf = strconv.AppendBool(o.buf, v)
}

// xid writes the xid of a change inside a streamed transaction; outside one it
// is 0 and left out.
func (o *jsonObject) xid(xid uint32) {
	if xid != 0 {
		o.uint("xid", uint64(xid))
	}
}

// lsn writes an LSN in PostgreSQL's %X/%X form (upper-case hex, as pg_lsn prints).
func (o *jsonObject) lsn(k string, v LSN) {
	o.key(k)
	o.buf = append(o.buf, '"')
	o.buf = appendUpperHex(o.buf, uint32(uint64(v)>>32))
	o.buf = append(o.buf, '/')
	o.buf = appendUpperHex(o.buf, uint32(v))
	o.buf = append(o.buf, '"')
}

func appendUpperHex(buf []byte, v uint32) []byte {
	const digits = "0123456789ABCDEF"
	var tmp [8]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = digits[v&0xf]
		v >>= 4
		if v == 0 {
			break
		}
	}
	return append(buf, tmp[i:]...)
}

// time writes an RFC 3339 UTC timestamp with nanoseconds.
func (o *jsonObject) time(k string, t time.Time) {
	o.key(k)
	o.buf = append(o.buf, '"')
	o.buf = t.UTC().AppendFormat(o.buf, time.RFC3339Nano)
	o.buf = append(o.buf, '"')
}

func (o *jsonObject) base64(b []byte) {
	o.buf = append(o.buf, '"')
	o.buf = base64.StdEncoding.AppendEncode(o.buf, b)
	o.buf = append(o.buf, '"')
}

// relation writes the namespace and name of the relation a change applies to.
func (o *jsonObject) relation(id uint32, rels Relations, what string, lsn LSN) (*Relation, error) {
	rel := rels[id]
	if rel == nil {
		return nil, fmt.Errorf("tail: %s at %s is for relation id %d, which no Relation message described", what, lsn, id)
	}
	o.uint("relation_id", uint64(id))
	o.str("namespace", rel.Namespace)
	o.str("relation", rel.Name)
	return rel, nil
}

// tuple writes a TupleData as an object from column name to value: a text
// value as a string, a binary one as {"binary": base64}, NULL as null and an
// unchanged TOASTed value as {"unchanged_toast": true}. keyOnly writes only the
// replica identity key columns (an old key tuple: the others are not sent,
// and their nulls would read as values).
func (o *jsonObject) tuple(k string, t Tuple, rel *Relation, lsn LSN, keyOnly bool) error {
	if len(t) != len(rel.Columns) {
		return fmt.Errorf("tail: tuple at %s has %d columns but relation %s.%s has %d", lsn, len(t), rel.Namespace, rel.Name, len(rel.Columns))
	}
	o.key(k)
	cols := jsonObject{buf: append(o.buf, '{')}
	for i, v := range t {
		if keyOnly && !rel.Columns[i].IsKey() {
			continue
		}
		cols.key(rel.Columns[i].Name)
		switch v.Kind {
		case ValueNull:
			cols.buf = append(cols.buf, "null"...)
		case ValueUnchanged:
			cols.buf = append(cols.buf, `{"unchanged_toast":true}`...)
		case ValueText:
			cols.buf = appendJSONBytes(cols.buf, v.Data)
		case ValueBinary:
			cols.buf = append(cols.buf, `{"binary":`...)
			cols.base64(v.Data)
			cols.buf = append(cols.buf, '}')
		default:
			return fmt.Errorf("tail: tuple at %s, column %q of %s.%s: unknown value kind 0x%02x", lsn, rel.Columns[i].Name, rel.Namespace, rel.Name, v.Kind)
		}
	}
	o.buf = append(cols.buf, '}')
	return nil
}

func appendJSONString(buf []byte, s string) []byte {
	return appendJSON(buf, s)
}

func appendJSONBytes(buf, s []byte) []byte {
	return appendJSON(buf, s)
}

const hexDigits = "0123456789abcdef"

// appendJSON appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does; U+2028 and U+2029 are escaped so the line is also valid
// JavaScript.
func appendJSON[T string | []byte](buf []byte, s T) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '"', '\\':
				buf = append(buf, '\\', b)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		var head [utf8.UTFMax]byte
		r, size := utf8.DecodeRune(head[:copy(head[:], s[i:])])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
