package postgres

import (
	"slices"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// charOID is the OID of "char", PostgreSQL's one-byte type.
const charOID = 18

// legacyChars returns ch with every "char" value above 127 in the text form a
// PostgreSQL 15+ source gives it (\ooo) turned into its byte, a binary value:
// a target before 15 reads \ooo as a backslash, and the byte itself is no
// valid text. ch is left as it is; a changed copy is returned.
func legacyChars(ts *tableStatements, ch *sink.Change) *sink.Change {
	conv := func(t source.Tuple) (source.Tuple, bool) {
		out, changed := t, false
		for _, i := range ts.chars {
			if i >= len(t) {
				continue
			}
			if b, ok := octalChar(t[i]); ok {
				if !changed {
					out, changed = slices.Clone(t), true
				}
				out[i] = source.Value{Kind: source.ValueBinary, Data: []byte{b}}
			}
		}
		return out, changed
	}
	n, newChanged := conv(ch.New)
	o, oldChanged := conv(ch.Old)
	if !newChanged && !oldChanged {
		return ch
	}
	c := *ch
	c.New, c.Old = n, o
	return &c
}

// octalChar decodes a "char" value's text form \ooo (a byte above 127, as
// PostgreSQL 15+ prints it).
func octalChar(v source.Value) (byte, bool) {
	d := v.Data
	if v.Kind != source.ValueText || len(d) != 4 || d[0] != '\\' || d[1] < '2' || d[1] > '3' ||
		d[2] < '0' || d[2] > '7' || d[3] < '0' || d[3] > '7' {
		return 0, false
	}
	return (d[1]-'0')<<6 | (d[2]-'0')<<3 | (d[3] - '0'), true
}
