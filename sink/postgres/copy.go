package postgres

import (
	"unsafe"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// valueRef locates one value of a buffered row in insertRun.arena.
type valueRef struct {
	off, end int
	null     bool
}

// insertRun buffers consecutive inserts into one table version. Values are
// copied (the decoder reuses its buffers); when the run ends it is sent as one
// COPY if it reached Options.CopyThreshold rows, else as INSERT statements.
type insertRun struct {
	ts    *tableStatements
	rows  int
	arena []byte
	vals  []valueRef
	lsns  []source.LSN
}

// add appends ch to the run, which must be empty or for ts. It reports false
// when ch has a binary value (COPY text cannot carry it): the caller then
// flushes the run and queues ch as a statement.
func (r *insertRun) add(ts *tableStatements, ch *sink.Change) bool {
	if r.ts != nil && r.ts != ts {
		return false
	}
	for _, v := range ch.New {
		if v.Kind != source.ValueText && v.Kind != source.ValueNull {
			return false
		}
	}
	r.ts = ts
	for _, v := range ch.New {
		if v.Kind == source.ValueNull {
			r.vals = append(r.vals, valueRef{null: true})
			continue
		}
		off := len(r.arena)
		r.arena = append(r.arena, v.Data...)
		r.vals = append(r.vals, valueRef{off: off, end: len(r.arena)})
	}
	r.lsns = append(r.lsns, ch.LSN)
	r.rows++
	return true
}

// full reports whether the run should be sent now, to bound memory.
func (r *insertRun) full(o Options) bool {
	return r.rows >= o.CopyThreshold && len(r.arena)+len(r.vals)*int(unsafe.Sizeof(valueRef{}))+len(r.lsns)*8 >= o.CopyBytes
}

func (r *insertRun) reset() {
	r.ts = nil
	r.rows = 0
	r.arena = r.arena[:0]
	r.vals = r.vals[:0]
	r.lsns = r.lsns[:0]
}

// encode writes the run in COPY text format.
func (r *insertRun) encode(dst []byte) []byte {
	ncol := len(r.ts.columns)
	for i := 0; i < r.rows; i++ {
		for c := range ncol {
			if c > 0 {
				dst = append(dst, '\t')
			}
			ref := r.vals[i*ncol+c]
			if ref.null {
				dst = append(dst, '\\', 'N')
				continue
			}
			dst = appendCopyText(dst, r.arena[ref.off:ref.end])
		}
		dst = append(dst, '\n')
	}
	return dst
}

// appendCopyText appends v escaped for COPY's text format: backslash, tab,
// newline and carriage return are the characters the format gives meaning to.
// Everything else, multi-byte UTF-8 included, passes through.
func appendCopyText(dst, v []byte) []byte {
	start := 0
	for i, c := range v {
		var esc byte
		switch c {
		case '\\':
			esc = '\\'
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		default:
			continue
		}
		dst = append(dst, v[start:i]...)
		dst = append(dst, '\\', esc)
		start = i + 1
	}
	return append(dst, v[start:]...)
}
