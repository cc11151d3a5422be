// Package source reads PostgreSQL's logical replication stream: the replication
// connection, slot and publication management, snapshot export, and the decoder of
// the pgoutput plugin's messages, protocol versions 1 to 4.
//
// It owns the protocol vocabulary the rest of pgrelay shares: LSNs, decoded
// messages, tuples and their values. The formats are those of the PostgreSQL
// manual, chapter "Logical Replication Message Formats"
// (https://www.postgresql.org/docs/current/protocol-logicalrep-message-formats.html).
//
// # Ownership of decoded data
//
// To keep the hot path free of per-column allocations, the Decoder reuses its
// message structs and hands out values that are sub-slices of the input buffer.
// A message returned by Decode, and every byte slice reachable from it, is valid
// only until the next call to Decode or until the input buffer is reused, whichever
// comes first. Callers that keep a message longer must copy it (see the Clone
// methods). Relation and Type messages are the exception: they are freshly allocated
// and may be kept.
package source

import (
	"time"

	"github.com/jackc/pglogrepl"
)

// LSN is a position in the source's write-ahead log.
type LSN = pglogrepl.LSN

// MessageType is the first byte of a pgoutput message.
type MessageType byte

// The pgoutput message types.
const (
	MsgBegin            MessageType = 'B'
	MsgCommit           MessageType = 'C'
	MsgOrigin           MessageType = 'O'
	MsgRelation         MessageType = 'R'
	MsgType             MessageType = 'Y'
	MsgInsert           MessageType = 'I'
	MsgUpdate           MessageType = 'U'
	MsgDelete           MessageType = 'D'
	MsgTruncate         MessageType = 'T'
	MsgMessage          MessageType = 'M'
	MsgStreamStart      MessageType = 'S'
	MsgStreamStop       MessageType = 'E'
	MsgStreamCommit     MessageType = 'c'
	MsgStreamAbort      MessageType = 'A'
	MsgBeginPrepare     MessageType = 'b'
	MsgPrepare          MessageType = 'P'
	MsgCommitPrepared   MessageType = 'K'
	MsgRollbackPrepared MessageType = 'r'
	MsgStreamPrepare    MessageType = 'p'
)

// Message is one decoded pgoutput message.
type Message interface {
	Type() MessageType
}

// Begin starts a (non-streamed) transaction.
type Begin struct {
	FinalLSN   LSN // the LSN of the commit record
	CommitTime time.Time
	Xid        uint32
}

// Commit ends a transaction started by Begin.
type Commit struct {
	Flags      uint8
	CommitLSN  LSN
	EndLSN     LSN // end of the commit record: the position to resume after
	CommitTime time.Time
}

// Origin names the replication origin a transaction came from.
type Origin struct {
	CommitLSN LSN
	Name      string
}

// Column flags in a Relation message.
const ColumnFlagKey uint8 = 1

// RelationColumn is one column of a Relation message.
type RelationColumn struct {
	Flags   uint8 // ColumnFlagKey when part of the replica identity key
	Name    string
	TypeOID uint32
	TypeMod int32
}

// IsKey reports whether the column is part of the replica identity key.
func (c RelationColumn) IsKey() bool { return c.Flags&ColumnFlagKey != 0 }

// Relation describes a published table. It is sent before the first change to the
// table in a session and again whenever its definition changed.
type Relation struct {
	Xid             uint32 // set inside streamed transactions (protocol 2+), else 0
	RelationID      uint32
	Namespace       string
	Name            string
	ReplicaIdentity byte // 'd' default, 'n' nothing, 'f' full, 'i' index
	Columns         []RelationColumn
}

// TypeMessage describes a data type (sent for non-built-in types).
type TypeMessage struct {
	Xid       uint32
	TypeOID   uint32
	Namespace string
	Name      string
}

// Kinds of TupleData values.
const (
	ValueNull      byte = 'n'
	ValueUnchanged byte = 'u' // unchanged TOASTed value: its bytes were not sent
	ValueText      byte = 't'
	ValueBinary    byte = 'b'
)

// Value is one column of a TupleData.
type Value struct {
	Kind byte   // ValueNull, ValueUnchanged, ValueText or ValueBinary
	Data []byte // the value in text or binary form; nil for null and unchanged
}

// Tuple is a TupleData: one value per column of the relation, in column order.
type Tuple []Value

// Kinds of old tuple in Update and Delete messages.
const (
	OldNone byte = 0   // no old tuple sent
	OldKey  byte = 'K' // replica identity key columns only (others null)
	OldFull byte = 'O' // the whole old row (REPLICA IDENTITY FULL)
)

// Insert adds a row.
type Insert struct {
	Xid        uint32
	RelationID uint32
	New        Tuple
}

// Update changes a row. Old is set when the key changed or the relation has
// REPLICA IDENTITY FULL (OldKind tells which).
type Update struct {
	Xid        uint32
	RelationID uint32
	OldKind    byte
	Old        Tuple
	New        Tuple
}

// Delete removes a row identified by Old.
type Delete struct {
	Xid        uint32
	RelationID uint32
	OldKind    byte
	Old        Tuple
}

// Truncate option bits.
const (
	TruncateCascade         uint8 = 1
	TruncateRestartIdentity uint8 = 2
)

// Truncate empties one or more relations.
type Truncate struct {
	Xid         uint32
	Options     uint8
	RelationIDs []uint32
}

// LogicalMessage is a message written with pg_logical_emit_message.
type LogicalMessage struct {
	Xid     uint32
	Flags   uint8 // bit 1: transactional
	LSN     LSN
	Prefix  string
	Content []byte
}

// Transactional reports whether the message was emitted as part of a transaction.
func (m *LogicalMessage) Transactional() bool { return m.Flags&1 != 0 }

// StreamStart opens a chunk of a streamed in-progress transaction (protocol 2+).
type StreamStart struct {
	Xid          uint32
	FirstSegment bool
}

// StreamStop closes the current chunk of a streamed transaction.
type StreamStop struct{}

// StreamCommit commits a streamed transaction.
type StreamCommit struct {
	Xid        uint32
	Flags      uint8
	CommitLSN  LSN
	EndLSN     LSN
	CommitTime time.Time
}

// StreamAbort aborts a streamed transaction (SubXid == Xid) or one of its
// subtransactions. AbortLSN and AbortTime are present from protocol 4 when
// streaming is parallel; HasAbortInfo tells.
type StreamAbort struct {
	Xid          uint32
	SubXid       uint32
	HasAbortInfo bool
	AbortLSN     LSN
	AbortTime    time.Time
}

// BeginPrepare starts a transaction that will be prepared (protocol 3+).
type BeginPrepare struct {
	PrepareLSN  LSN
	EndLSN      LSN
	PrepareTime time.Time
	Xid         uint32
	GID         string
}

// Prepare ends the transaction started by BeginPrepare: it is now prepared.
type Prepare struct {
	Flags       uint8
	PrepareLSN  LSN
	EndLSN      LSN
	PrepareTime time.Time
	Xid         uint32
	GID         string
}

// CommitPrepared commits a prepared transaction.
type CommitPrepared struct {
	Flags      uint8
	CommitLSN  LSN
	EndLSN     LSN
	CommitTime time.Time
	Xid        uint32
	GID        string
}

// RollbackPrepared rolls back a prepared transaction.
type RollbackPrepared struct {
	Flags          uint8
	PrepareEndLSN  LSN
	RollbackEndLSN LSN
	PrepareTime    time.Time
	RollbackTime   time.Time
	Xid            uint32
	GID            string
}

// StreamPrepare prepares a streamed transaction (protocol 3+).
type StreamPrepare struct {
	Flags       uint8
	PrepareLSN  LSN
	EndLSN      LSN
	PrepareTime time.Time
	Xid         uint32
	GID         string
}

func (*Begin) Type() MessageType            { return MsgBegin }
func (*Commit) Type() MessageType           { return MsgCommit }
func (*Origin) Type() MessageType           { return MsgOrigin }
func (*Relation) Type() MessageType         { return MsgRelation }
func (*TypeMessage) Type() MessageType      { return MsgType }
func (*Insert) Type() MessageType           { return MsgInsert }
func (*Update) Type() MessageType           { return MsgUpdate }
func (*Delete) Type() MessageType           { return MsgDelete }
func (*Truncate) Type() MessageType         { return MsgTruncate }
func (*LogicalMessage) Type() MessageType   { return MsgMessage }
func (*StreamStart) Type() MessageType      { return MsgStreamStart }
func (*StreamStop) Type() MessageType       { return MsgStreamStop }
func (*StreamCommit) Type() MessageType     { return MsgStreamCommit }
func (*StreamAbort) Type() MessageType      { return MsgStreamAbort }
func (*BeginPrepare) Type() MessageType     { return MsgBeginPrepare }
func (*Prepare) Type() MessageType          { return MsgPrepare }
func (*CommitPrepared) Type() MessageType   { return MsgCommitPrepared }
func (*RollbackPrepared) Type() MessageType { return MsgRollbackPrepared }
func (*StreamPrepare) Type() MessageType    { return MsgStreamPrepare }
