package postgres

import (
	"bytes"
	"encoding/binary"
	"io"
)

// blankTrimmer reads COPY binary data from r and passes it on with the
// trailing blanks of the fields marked in trim cut off. It serves char(n)
// columns: the target pads a char(n) value to n characters whatever its
// input's trailing blanks, so the stored value is the same; but its input
// function counts the characters of the whole input, which for a filled-out
// char(84) cost a third of the target's COPY (pgbench_accounts' filler: 1.4
// s against 0.9 s for 2 M rows), and the blanks are most of the bytes sent.
// The server's encodings are all ASCII-safe, so a 0x20 byte is a blank and
// never part of another character.
//
// Anything it does not expect (a header flag, a row of another field count,
// a value larger than maxTrimmed) turns it into a plain pass-through for the
// rest of the stream: trimming is an optimization, and the target judges the
// data itself.
type blankTrimmer struct {
	r    io.Reader
	trim []bool // by field

	in  []byte // read from r, not yet parsed: in[pos:]
	pos int
	out []byte // parsed, not yet returned: out[outPos:]

	outPos int
	state  trimState
	field  int   // field of the row at hand
	left   int64 // bytes of an untrimmed value still to pass (stValue)
	err    error // r's error, returned once in and out are drained
}

type trimState int

const (
	stHeader    trimState = iota // signature, flags, extension length
	stExtension                  // header extension bytes, left to pass
	stCount                      // a row's field count, or the trailer
	stLength                     // a field's length
	stValue                      // an untrimmed value's bytes
	stPass                       // pass everything on unchanged
)

// maxTrimmed is the largest value held whole to be trimmed; a larger one
// passes as it comes, so a huge char(n) value is not buffered.
const maxTrimmed = 64 << 10

// copySignature starts every COPY binary stream.
var copySignature = []byte("PGCOPY\n\xff\r\n\x00")

// newBlankTrimmer trims the fields marked in trim of the COPY binary data in
// r; with none marked it returns r itself.
func newBlankTrimmer(r io.Reader, trim []bool) io.Reader {
	for _, t := range trim {
		if t {
			return &blankTrimmer{r: r, trim: trim, in: make([]byte, 0, 64<<10)}
		}
	}
	return r
}

func (t *blankTrimmer) Read(p []byte) (int, error) {
	for {
		if t.outPos < len(t.out) {
			n := copy(p, t.out[t.outPos:])
			t.outPos += n
			return n, nil
		}
		t.out, t.outPos = t.out[:0], 0
		if t.pos < len(t.in) {
			if t.parse() {
				continue
			}
		}
		if t.err != nil {
			if t.pos < len(t.in) {
				// A stream that ends inside a header or value: pass the
				// rest as it is, the target says what is wrong with it.
				t.out = append(t.out, t.in[t.pos:]...)
				t.pos = len(t.in)
				continue
			}
			return 0, t.err
		}
		t.fill()
	}
}

// fill reads more of r after what is left unparsed.
func (t *blankTrimmer) fill() {
	rest := len(t.in) - t.pos
	if t.pos > 0 {
		copy(t.in, t.in[t.pos:])
		t.in, t.pos = t.in[:rest], 0
	}
	if cap(t.in)-rest < 32<<10 {
		grown := make([]byte, rest, 2*cap(t.in))
		copy(grown, t.in)
		t.in = grown
	}
	n, err := t.r.Read(t.in[rest:cap(t.in)])
	t.in = t.in[:rest+n]
	if err != nil {
		t.err = err
	}
}

// parse moves what it can of in[pos:] to out, and reports whether it moved
// anything; it stops at a header or value that is not all in yet.
func (t *blankTrimmer) parse() bool {
	start := t.pos
	for t.pos < len(t.in) {
		b := t.in[t.pos:]
		switch t.state {
		case stPass:
			t.out = append(t.out, b...)
			t.pos = len(t.in)
		case stHeader:
			if len(b) < 19 {
				return t.pos > start
			}
			flags := binary.BigEndian.Uint32(b[11:])
			if !bytes.Equal(b[:11], copySignature) || flags != 0 {
				t.state = stPass
				continue
			}
			t.left = int64(binary.BigEndian.Uint32(b[15:]))
			t.out = append(t.out, b[:19]...)
			t.pos += 19
			t.state = stExtension
		case stExtension:
			t.passValue(b, stCount)
		case stCount:
			if t.row(b) {
				continue
			}
			if len(b) < 2 {
				return t.pos > start
			}
			n := int16(binary.BigEndian.Uint16(b))
			if n != int16(len(t.trim)) {
				// The trailer (-1), or a row not of these columns.
				t.state = stPass
				continue
			}
			t.out = append(t.out, b[:2]...)
			t.pos += 2
			t.field = 0
			t.state = stLength
			if n == 0 {
				t.state = stCount
			}
		case stLength:
			if len(b) < 4 {
				return t.pos > start
			}
			n := int32(binary.BigEndian.Uint32(b))
			next := stLength
			if t.field == len(t.trim)-1 {
				next = stCount
			}
			switch {
			case n < 0: // NULL
				t.out = append(t.out, b[:4]...)
				t.pos += 4
				t.state = next
			case t.trim[t.field] && n <= maxTrimmed:
				if len(b) < 4+int(n) {
					return t.pos > start
				}
				v := trimBlanks(b[4 : 4+n])
				t.out = binary.BigEndian.AppendUint32(t.out, uint32(len(v)))
				t.out = append(t.out, v...)
				t.pos += 4 + int(n)
				t.state = next
			default:
				t.out = append(t.out, b[:4]...)
				t.pos += 4
				t.left = int64(n)
				t.state = stValue
				if n == 0 {
					t.state = next
				}
			}
			t.field++
		case stValue:
			next := stLength
			if t.field == len(t.trim) {
				next = stCount
			}
			t.passValue(b, next)
		}
	}
	return true
}

// row moves the row at b's start to out when all of it is there, and
// reports whether it did: the common case, in fewer and larger copies than
// field by field. A row of other columns or one not all in yet is left to
// parse's states, which also pass a large value on in parts.
func (t *blankTrimmer) row(b []byte) bool {
	if len(b) < 2 || int(int16(binary.BigEndian.Uint16(b))) != len(t.trim) {
		return false
	}
	mark := len(t.out)
	p, span := 2, 0 // span: start of the bytes not yet moved
	for _, trim := range t.trim {
		if len(b) < p+4 {
			t.out = t.out[:mark]
			return false
		}
		n := int(int32(binary.BigEndian.Uint32(b[p:])))
		if n < 0 {
			p += 4
			continue
		}
		if len(b) < p+4+n {
			t.out = t.out[:mark]
			return false
		}
		if trim && n <= maxTrimmed {
			if v := trimBlanks(b[p+4 : p+4+n]); len(v) < n {
				t.out = append(t.out, b[span:p]...)
				t.out = binary.BigEndian.AppendUint32(t.out, uint32(len(v)))
				t.out = append(t.out, v...)
				span = p + 4 + n
			}
		}
		p += 4 + n
	}
	t.out = append(t.out, b[span:p]...)
	t.pos += p
	return true
}

// passValue moves up to t.left bytes of b to out, and goes to state next
// when none is left.
func (t *blankTrimmer) passValue(b []byte, next trimState) {
	k := int64(len(b))
	if k > t.left {
		k = t.left
	}
	t.out = append(t.out, b[:k]...)
	t.pos += int(k)
	t.left -= k
	if t.left == 0 {
		t.state = next
	}
}

// trimBlanks cuts v's trailing blanks (0x20), eight bytes at a time while
// it can, four such words per step: a char(84) value is mostly blanks. (A
// string comparison of 32 bytes at a time, a call to memequal each, took half
// as long again for pgbench's blank char(84).)
func trimBlanks(v []byte) []byte {
	const blanks8 = 0x2020202020202020
	n := len(v)
	le := binary.LittleEndian
	for n >= 32 {
		w := v[n-32 : n]
		if le.Uint64(w[24:]) != blanks8 || le.Uint64(w[16:]) != blanks8 || le.Uint64(w[8:]) != blanks8 || le.Uint64(w) != blanks8 {
			break
		}
		n -= 32
	}
	for n >= 8 && le.Uint64(v[n-8:]) == blanks8 {
		n -= 8
	}
	for n > 0 && v[n-1] == ' ' {
		n--
	}
	return v[:n]
}
