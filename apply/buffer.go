package apply

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/pgrelay/pgrelay/source"
)

// A txnBuffer holds the messages of one source transaction that cannot be applied
// as they arrive: a streamed transaction until its Stream Commit, a prepared
// transaction the target cannot prepare until its Commit Prepared, and every
// transaction for a sink whose DDL commits implicitly.
//
// Messages are kept encoded (see the record format below) rather than as Go
// values: the encoded size is what the memory bound counts, and spilling is then
// a plain write of the bytes already in hand. Past the spool's memory bound the
// largest buffers are appended to a file of their own and their memory released;
// replay reads the file, then what is still in memory, in arrival order.
//
// Record format (little endian), one per message:
//
//	u32 body length | u32 CRC-32C of body | body
//	body: kind u8 | subxid u32 | lsn u64 | kind-specific fields
//	  'I' insert:   relid u32 | tuple
//	  'U' update:   relid u32 | oldKind u8 | [tuple old, when oldKind != 0] | tuple new
//	  'D' delete:   relid u32 | oldKind u8 | tuple old
//	  'T' truncate: options u8 | uvarint n | n × relid u32
//	  'R' relation: uvarint index into relations (Relation messages stay in memory)
//	  'M' message:  flags u8 | lsn u64 | uvarint len | prefix | uvarint len | content
//	tuple: uvarint (columns+1, 0 for a nil tuple) | per column: kind u8 |
//	       for 't' and 'b' values: uvarint len | bytes
type txnBuffer struct {
	xid   uint32
	spool *spool

	mem       []byte
	file      *os.File
	path      string
	fileBytes int64

	// relations are the Relation messages of the transaction, referred to by
	// index from 'R' records. They are few and small, so they stay in memory.
	relations []*source.Relation
	// aborted are the subtransactions rolled back by Stream Abort: their changes
	// are skipped on replay (they may already be on disk).
	aborted map[uint32]bool
	// changes counts change records, aborted ones included: an upper bound of
	// the rows replay applies, used to keep a large transaction out of a group.
	changes int
}

// Record kinds.
const (
	recInsert   byte = 'I'
	recUpdate   byte = 'U'
	recDelete   byte = 'D'
	recTruncate byte = 'T'
	recRelation byte = 'R'
	recMessage  byte = 'M'
)

const (
	recHeaderLen = 8
	recFixedLen  = 1 + 4 + 8 // kind, subxid, lsn
	// maxRecordLen bounds a record read back from a spill file, so that a corrupt
	// length cannot make replay allocate without limit. A pgoutput message is at
	// most 1 GiB.
	maxRecordLen = 1<<30 + 1<<20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// record is one decoded buffer record. Its tuples and bytes are owned by the
// record (they point into memory nothing else writes).
type record struct {
	kind     byte
	subxid   uint32
	lsn      source.LSN
	relid    uint32
	oldKind  byte
	old, new source.Tuple
	options  uint8
	relids   []uint32
	relation *source.Relation
	msg      *source.LogicalMessage
}

// begin starts a record in b.mem and returns the offset of its header.
func (b *txnBuffer) begin(kind byte, subxid uint32, lsn source.LSN) int {
	at := len(b.mem)
	b.mem = append(b.mem, 0, 0, 0, 0, 0, 0, 0, 0, kind)
	b.mem = binary.LittleEndian.AppendUint32(b.mem, subxid)
	b.mem = binary.LittleEndian.AppendUint64(b.mem, uint64(lsn))
	return at
}

// end fills in the header of the record started at at and enforces the memory bound.
func (b *txnBuffer) end(at int) error {
	body := b.mem[at+recHeaderLen:]
	binary.LittleEndian.PutUint32(b.mem[at:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b.mem[at+4:], crc32.Checksum(body, crcTable))
	if err := b.spool.grew(b, int64(len(b.mem)-at)); err != nil {
		return err
	}
	// Once spilled, a transaction goes on to its file in small steps instead
	// of growing in memory again (and leaving the garbage of each growth).
	if b.file != nil && len(b.mem) >= spillChunk {
		return b.spill()
	}
	return nil
}

// spillChunk is how much of a spilled transaction is gathered in memory before
// it is appended to the file.
const spillChunk = 1 << 20

func appendTuple(dst []byte, t source.Tuple) []byte {
	if t == nil {
		return binary.AppendUvarint(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(t))+1)
	for _, v := range t {
		dst = append(dst, v.Kind)
		if v.Kind == source.ValueText || v.Kind == source.ValueBinary {
			dst = binary.AppendUvarint(dst, uint64(len(v.Data)))
			dst = append(dst, v.Data...)
		}
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func (b *txnBuffer) addInsert(m *source.Insert, subxid uint32, lsn source.LSN) error {
	at := b.begin(recInsert, subxid, lsn)
	b.mem = binary.LittleEndian.AppendUint32(b.mem, m.RelationID)
	b.mem = appendTuple(b.mem, m.New)
	b.changes++
	return b.end(at)
}

func (b *txnBuffer) addUpdate(m *source.Update, subxid uint32, lsn source.LSN) error {
	at := b.begin(recUpdate, subxid, lsn)
	b.mem = binary.LittleEndian.AppendUint32(b.mem, m.RelationID)
	b.mem = append(b.mem, m.OldKind)
	if m.OldKind != source.OldNone {
		b.mem = appendTuple(b.mem, m.Old)
	}
	b.mem = appendTuple(b.mem, m.New)
	b.changes++
	return b.end(at)
}

func (b *txnBuffer) addDelete(m *source.Delete, subxid uint32, lsn source.LSN) error {
	at := b.begin(recDelete, subxid, lsn)
	b.mem = binary.LittleEndian.AppendUint32(b.mem, m.RelationID)
	b.mem = append(b.mem, m.OldKind)
	b.mem = appendTuple(b.mem, m.Old)
	b.changes++
	return b.end(at)
}

func (b *txnBuffer) addTruncate(m *source.Truncate, subxid uint32, lsn source.LSN) error {
	at := b.begin(recTruncate, subxid, lsn)
	b.mem = append(b.mem, m.Options)
	b.mem = binary.AppendUvarint(b.mem, uint64(len(m.RelationIDs)))
	for _, id := range m.RelationIDs {
		b.mem = binary.LittleEndian.AppendUint32(b.mem, id)
	}
	b.changes++
	return b.end(at)
}

// addRelation keeps rel (Relation messages are freshly allocated by the decoder
// and may be kept). Relation records carry no subtransaction: pgoutput sends a
// relation once per streamed top-level transaction, so later changes of other
// subtransactions rely on it even when the one that carried it aborts.
func (b *txnBuffer) addRelation(rel *source.Relation, lsn source.LSN) error {
	at := b.begin(recRelation, b.xid, lsn)
	b.mem = binary.AppendUvarint(b.mem, uint64(len(b.relations)))
	b.relations = append(b.relations, rel)
	return b.end(at)
}

func (b *txnBuffer) addMessage(m *source.LogicalMessage, subxid uint32, lsn source.LSN) error {
	at := b.begin(recMessage, subxid, lsn)
	b.mem = append(b.mem, m.Flags)
	b.mem = binary.LittleEndian.AppendUint64(b.mem, uint64(m.LSN))
	b.mem = appendBytes(b.mem, []byte(m.Prefix))
	b.mem = appendBytes(b.mem, m.Content)
	return b.end(at)
}

// abortSub drops the changes of subtransaction subxid.
func (b *txnBuffer) abortSub(subxid uint32) {
	if b.aborted == nil {
		b.aborted = make(map[uint32]bool)
	}
	b.aborted[subxid] = true
}

// spill appends the in-memory records to the buffer's file and releases the memory.
func (b *txnBuffer) spill() error {
	if len(b.mem) == 0 {
		return nil
	}
	if b.file == nil {
		dir, err := b.spool.directory()
		if err != nil {
			return err
		}
		b.spool.seq++
		b.path = filepath.Join(dir, fmt.Sprintf("xid-%d-%d.spill", b.xid, b.spool.seq))
		f, err := os.OpenFile(b.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("apply: spill transaction %d: %w (set PGRELAY_SPILL_DIR to a writable directory)", b.xid, err)
		}
		b.file = f
	}
	if _, err := b.file.Write(b.mem); err != nil {
		return fmt.Errorf("apply: spill transaction %d to %s: %w (free space there, or set PGRELAY_SPILL_DIR to a directory with room for the largest transaction)", b.xid, b.path, err)
	}
	b.fileBytes += int64(len(b.mem))
	b.spool.used -= int64(len(b.mem))
	if cap(b.mem) > 2*spillChunk {
		b.mem = make([]byte, 0, spillChunk+spillChunk/4)
	} else {
		b.mem = b.mem[:0]
	}
	return nil
}

// each calls fn for every record in arrival order, skipping those of aborted
// subtransactions. fn may keep what the record references.
func (b *txnBuffer) each(fn func(*record) error) error {
	if b.file != nil {
		if _, err := b.file.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("apply: read spilled transaction %d: %w", b.xid, err)
		}
		r := bufio.NewReaderSize(io.LimitReader(b.file, b.fileBytes), 256<<10)
		var off int64
		var hdr [recHeaderLen]byte
		for off < b.fileBytes {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return b.corrupt(off, fmt.Errorf("record header: %w", err))
			}
			n := binary.LittleEndian.Uint32(hdr[:])
			if n < recFixedLen || n > maxRecordLen || int64(n) > b.fileBytes-off-recHeaderLen {
				return b.corrupt(off, fmt.Errorf("record length %d out of range", n))
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(r, body); err != nil {
				return b.corrupt(off, fmt.Errorf("record body: %w", err))
			}
			if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(hdr[4:]) {
				return b.corrupt(off, errors.New("checksum mismatch"))
			}
			if err := b.visit(body, off, fn); err != nil {
				return err
			}
			off += recHeaderLen + int64(n)
		}
	}
	mem := b.mem
	for off := 0; off < len(mem); {
		if len(mem)-off < recHeaderLen {
			return b.corrupt(int64(off), errors.New("truncated record header in memory"))
		}
		n := int(binary.LittleEndian.Uint32(mem[off:]))
		if n < recFixedLen || n > len(mem)-off-recHeaderLen {
			return b.corrupt(int64(off), fmt.Errorf("record length %d out of range in memory", n))
		}
		body := mem[off+recHeaderLen : off+recHeaderLen+n : off+recHeaderLen+n]
		if err := b.visit(body, b.fileBytes+int64(off), fn); err != nil {
			return err
		}
		off += recHeaderLen + n
	}
	return nil
}

func (b *txnBuffer) corrupt(off int64, err error) error {
	where := "memory"
	if b.path != "" {
		where = b.path
	}
	return fmt.Errorf("apply: buffered transaction %d (%s) corrupt at offset %d: %w", b.xid, where, off, err)
}

func (b *txnBuffer) visit(body []byte, off int64, fn func(*record) error) error {
	rec, err := b.decode(body)
	if err != nil {
		return b.corrupt(off, err)
	}
	if rec.kind != recRelation && b.aborted[rec.subxid] {
		return nil
	}
	return fn(rec)
}

// bodyReader decodes a record body; the first error sticks.
type bodyReader struct {
	buf []byte
	off int
	err error
}

func (r *bodyReader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.buf)-r.off < n {
		r.err = fmt.Errorf("truncated %s", what)
		return false
	}
	return true
}

func (r *bodyReader) u8(what string) byte {
	if !r.need(1, what) {
		return 0
	}
	r.off++
	return r.buf[r.off-1]
}

func (r *bodyReader) u32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	r.off += 4
	return binary.LittleEndian.Uint32(r.buf[r.off-4:])
}

func (r *bodyReader) u64(what string) uint64 {
	if !r.need(8, what) {
		return 0
	}
	r.off += 8
	return binary.LittleEndian.Uint64(r.buf[r.off-8:])
}

func (r *bodyReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf[r.off:])
	if n <= 0 {
		r.err = fmt.Errorf("bad varint for %s", what)
		return 0
	}
	r.off += n
	return v
}

func (r *bodyReader) bytes(what string) []byte {
	n := r.uvarint(what)
	if n > uint64(len(r.buf)-r.off) {
		r.need(len(r.buf)+1, what)
		return nil
	}
	if !r.need(int(n), what) {
		return nil
	}
	b := r.buf[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return b
}

func (r *bodyReader) tuple(what string) source.Tuple {
	n := r.uvarint(what)
	if n == 0 || r.err != nil {
		return nil
	}
	n--
	// Every column takes at least one byte: a corrupt count cannot over-allocate.
	if n > uint64(len(r.buf)-r.off) {
		r.need(len(r.buf)+1, what)
		return nil
	}
	t := make(source.Tuple, n)
	for i := range t {
		t[i].Kind = r.u8(what)
		if t[i].Kind == source.ValueText || t[i].Kind == source.ValueBinary {
			t[i].Data = r.bytes(what)
		}
	}
	return t
}

func (b *txnBuffer) decode(body []byte) (*record, error) {
	r := &bodyReader{buf: body}
	rec := &record{kind: r.u8("kind"), subxid: r.u32("subxid"), lsn: source.LSN(r.u64("lsn"))}
	switch rec.kind {
	case recInsert:
		rec.relid = r.u32("relation id")
		rec.new = r.tuple("new tuple")
	case recUpdate:
		rec.relid = r.u32("relation id")
		rec.oldKind = r.u8("old kind")
		if rec.oldKind != source.OldNone {
			rec.old = r.tuple("old tuple")
		}
		rec.new = r.tuple("new tuple")
	case recDelete:
		rec.relid = r.u32("relation id")
		rec.oldKind = r.u8("old kind")
		rec.old = r.tuple("old tuple")
	case recTruncate:
		rec.options = r.u8("options")
		n := r.uvarint("relation count")
		if n > uint64(len(body)) {
			return nil, fmt.Errorf("relation count %d out of range", n)
		}
		rec.relids = make([]uint32, n)
		for i := range rec.relids {
			rec.relids[i] = r.u32("relation id")
		}
	case recRelation:
		i := r.uvarint("relation index")
		if r.err == nil && i >= uint64(len(b.relations)) {
			return nil, fmt.Errorf("relation index %d out of range", i)
		}
		if r.err == nil {
			rec.relation = b.relations[i]
		}
	case recMessage:
		m := &source.LogicalMessage{Xid: rec.subxid}
		m.Flags = r.u8("message flags")
		m.LSN = source.LSN(r.u64("message lsn"))
		m.Prefix = string(r.bytes("message prefix"))
		m.Content = r.bytes("message content")
		rec.msg = m
	default:
		return nil, fmt.Errorf("unknown record kind %q", rec.kind)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(body) {
		return nil, fmt.Errorf("%d trailing bytes in %q record", len(body)-r.off, rec.kind)
	}
	return rec, nil
}

// release drops the buffer: its memory and its spill file.
func (b *txnBuffer) release() error {
	if b.spool != nil {
		b.spool.drop(b)
	}
	b.mem = nil
	b.relations = nil
	if b.file == nil {
		return nil
	}
	err := b.file.Close()
	if rmErr := os.Remove(b.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	b.file = nil
	if err != nil {
		return fmt.Errorf("apply: remove spill file of transaction %d: %w", b.xid, err)
	}
	return nil
}

// spool tracks the memory of all buffers against one bound and owns the spill
// directory of this applier.
type spool struct {
	parent string // Config.SpillDir
	slot   string
	limit  int64
	used   int64
	seq    int

	buffers map[*txnBuffer]struct{}
	dir     *spillDir // created on first spill
}

func newSpool(parent, slot string, limit int64) *spool {
	return &spool{parent: parent, slot: slot, limit: limit, buffers: make(map[*txnBuffer]struct{})}
}

func (s *spool) newBuffer(xid uint32) *txnBuffer {
	b := &txnBuffer{xid: xid, spool: s}
	s.buffers[b] = struct{}{}
	return b
}

// grew accounts n more bytes of b and spills the largest buffers while the total
// is past the bound.
func (s *spool) grew(b *txnBuffer, n int64) error {
	s.used += n
	for s.used > s.limit {
		var largest *txnBuffer
		for c := range s.buffers {
			if largest == nil || len(c.mem) > len(largest.mem) {
				largest = c
			}
		}
		if largest == nil || len(largest.mem) == 0 {
			return nil
		}
		if err := largest.spill(); err != nil {
			return err
		}
	}
	return nil
}

func (s *spool) drop(b *txnBuffer) {
	if _, ok := s.buffers[b]; ok {
		s.used -= int64(len(b.mem))
		delete(s.buffers, b)
	}
}

// directory returns this applier's private spill directory, creating it.
func (s *spool) directory() (string, error) {
	if s.dir == nil {
		d, err := createSpillDir(s.parent, s.slot)
		if err != nil {
			return "", err
		}
		s.dir = d
	}
	return s.dir.path, nil
}

// close releases every buffer and removes the spill directory.
func (s *spool) close() error {
	var errs []error
	for b := range s.buffers {
		errs = append(errs, b.release())
	}
	if s.dir != nil {
		errs = append(errs, s.dir.remove())
		s.dir = nil
	}
	return errors.Join(errs...)
}
