package mysql

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/pgrelay/pgrelay/schema"
)

// PostgreSQL's COPY text format (what the snapshot copy reads from the
// source) and MySQL's LOAD DATA format (what it writes to the target) are
// both a line per row, fields separated by tabs and escaped with a
// backslash, \N for NULL; they differ in the escapes they know and in what
// a value is (bytea's hex text, t/f, timestamptz with an offset, arrays).
// The transcoder reads one and writes the other, converting each value as
// the MySQL dialect maps it.

// copyRow is one row of COPY text: each field unescaped, nil for NULL.
type copyRow [][]byte

// copyReader reads rows of COPY text.
type copyReader struct {
	in    *bufio.Reader
	ncols int
	line  int64 // rows read
	buf   []byte
	row   copyRow
}

func newCopyReader(r io.Reader, ncols int) *copyReader {
	return &copyReader{in: bufio.NewReaderSize(r, 64<<10), ncols: ncols}
}

// next returns the next row, io.EOF after the last. The row's fields are
// valid until the next call.
func (c *copyReader) next() (copyRow, error) {
	c.buf = c.buf[:0]
	for {
		chunk, err := c.in.ReadSlice('\n')
		c.buf = append(c.buf, chunk...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(c.buf) == 0 {
				return nil, io.EOF
			}
			break // a last line without its newline
		}
		return nil, err
	}
	line := bytes.TrimSuffix(c.buf, []byte("\n"))
	if string(line) == `\.` {
		return nil, io.EOF // the end-of-data marker of COPY FROM STDIN text
	}
	c.line++
	c.row = c.row[:0]
	for field := range bytes.SplitSeq(line, []byte("\t")) {
		if string(field) == `\N` {
			c.row = append(c.row, nil)
			continue
		}
		v, err := unescapeCopy(field)
		if err != nil {
			return nil, fmt.Errorf("row %d of the copy: %w", c.line, err)
		}
		c.row = append(c.row, v)
	}
	if len(c.row) != c.ncols {
		return nil, fmt.Errorf("row %d of the copy has %d fields, the table %d columns", c.line, len(c.row), c.ncols)
	}
	return c.row, nil
}

// unescapeCopy undoes COPY text's escapes: \b \f \n \r \t \v, \\, octal
// \ooo, hex \xhh; a backslash before any other character stands for that
// character. The result never aliases field when it holds a backslash.
func unescapeCopy(field []byte) ([]byte, error) {
	if bytes.IndexByte(field, '\\') < 0 {
		return field, nil
	}
	out := make([]byte, 0, len(field))
	for i := 0; i < len(field); i++ {
		b := field[i]
		if b != '\\' {
			out = append(out, b)
			continue
		}
		i++
		if i >= len(field) {
			return nil, errors.New("a field ends with a lone backslash")
		}
		switch c := field[i]; c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, '\v')
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(field) && isHex(field[i+1]) {
				i++
				v = v*16 + hexVal(field[i])
				n++
			}
			if n == 0 {
				out = append(out, 'x')
			} else {
				out = append(out, byte(v))
			}
		default:
			if c >= '0' && c <= '7' {
				v := int(c - '0')
				for n := 1; n < 3 && i+1 < len(field) && field[i+1] >= '0' && field[i+1] <= '7'; n++ {
					i++
					v = v*8 + int(field[i]-'0')
				}
				out = append(out, byte(v))
			} else {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

func hexVal(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	}
	return int(b-'A') + 10
}

// appendLoadField appends v as a LOAD DATA field (FIELDS TERMINATED BY '\t'
// ESCAPED BY '\\', LINES TERMINATED BY '\n'): NULL as \N, bytes in hex (the
// statement UNHEXes them: the file is read as utf8mb4, which raw bytes need
// not be), text with backslash, tab, newline, carriage return and NUL escaped.
func appendLoadField(dst []byte, v schema.MySQLValue) []byte {
	switch v.Kind {
	case schema.MySQLNull:
		return append(dst, `\N`...)
	case schema.MySQLBytes:
		const digits = "0123456789abcdef"
		for _, b := range v.Data {
			dst = append(dst, digits[b>>4], digits[b&15])
		}
		return dst
	}
	for _, b := range v.Data {
		switch b {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case 0:
			dst = append(dst, '\\', '0')
		default:
			dst = append(dst, b)
		}
	}
	return dst
}

// loadTranscoder is the io.Reader LOAD DATA LOCAL INFILE reads: the COPY
// rows of in, each value converted for its MySQL column.
type loadTranscoder struct {
	in      *copyReader
	convert func(row int64, col int, text []byte) (schema.MySQLValue, error)
	out     []byte
	off     int
	err     error
}

func (t *loadTranscoder) Read(p []byte) (int, error) {
	for t.off >= len(t.out) && t.err == nil {
		t.out, t.off = t.out[:0], 0
		for len(t.out) < 64<<10 {
			row, err := t.in.next()
			if err != nil {
				t.err = err
				break
			}
			for i, f := range row {
				if i > 0 {
					t.out = append(t.out, '\t')
				}
				if f == nil {
					t.out = append(t.out, `\N`...)
					continue
				}
				v, err := t.convert(t.in.line, i, f)
				if err != nil {
					t.err = err
					t.out = t.out[:0]
					return 0, err
				}
				t.out = appendLoadField(t.out, v)
			}
			t.out = append(t.out, '\n')
		}
	}
	if t.off < len(t.out) {
		n := copy(p, t.out[t.off:])
		t.off += n
		return n, nil
	}
	return 0, t.err
}
