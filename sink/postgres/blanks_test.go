package postgres

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// copyStream builds COPY binary data of rows (nil is NULL) with a header
// extension of ext bytes and the trailer.
func copyStream(ext int, rows [][][]byte) []byte {
	b := append([]byte(nil), copySignature...)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(ext))
	b = append(b, bytes.Repeat([]byte{'x'}, ext)...)
	for _, row := range rows {
		b = binary.BigEndian.AppendUint16(b, uint16(len(row)))
		for _, v := range row {
			if v == nil {
				b = binary.BigEndian.AppendUint32(b, 0xffffffff)
				continue
			}
			b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
			b = append(b, v...)
		}
	}
	return binary.BigEndian.AppendUint16(b, 0xffff)
}

// chunky returns reads of random sizes, some of them empty-handed.
type chunky struct {
	r   *rand.Rand
	src []byte
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.src) == 0 {
		return 0, io.EOF
	}
	n := 1 + c.r.IntN(min(len(p), 300))
	n = copy(p[:n], c.src)
	c.src = c.src[n:]
	return n, nil
}

// TestBlankTrimmer: trimmed fields lose their trailing blanks and nothing
// else; other fields, NULLs, the header's extension and the trailer pass
// unchanged, however the stream is cut into reads.
func TestBlankTrimmer(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	trim := []bool{false, true, true, false}
	value := func(trimmed bool) (in, want []byte) {
		switch r.IntN(8) {
		case 0:
			return nil, nil
		case 1:
			return []byte{}, []byte{}
		case 2: // all blanks
			v := bytes.Repeat([]byte{' '}, r.IntN(100))
			if trimmed {
				return v, []byte{}
			}
			return v, v
		case 3: // larger than maxTrimmed: passes whole
			v := []byte(strings.Repeat("é", maxTrimmed) + "  ")
			return v, v
		}
		body := []byte(strings.Repeat("ab c€", r.IntN(5)) + "z")
		v := append(append([]byte(nil), body...), bytes.Repeat([]byte{' '}, r.IntN(90))...)
		if trimmed {
			return v, body
		}
		return v, v
	}
	for round := 0; round < 200; round++ {
		var in, want [][][]byte
		for range r.IntN(30) {
			var ri, rw [][]byte
			for _, tr := range trim {
				a, b := value(tr)
				ri, rw = append(ri, a), append(rw, b)
			}
			in, want = append(in, ri), append(want, rw)
		}
		ext := r.IntN(3) * 7
		src, exp := copyStream(ext, in), copyStream(ext, want)
		var got []byte
		var err error
		if round%50 == 0 {
			got, err = io.ReadAll(newBlankTrimmer(iotest.OneByteReader(bytes.NewReader(src)), trim))
		} else {
			got, err = io.ReadAll(newBlankTrimmer(&chunky{r: r, src: src}, trim))
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, exp) {
			t.Fatalf("round %d: %d bytes in, %d out, want %d", round, len(src), len(got), len(exp))
		}
	}
}

// TestBlankTrimmerPassThrough: a stream it does not expect passes unchanged
// from where it stops making sense, and an error of the reader comes through
// after the data before it.
func TestBlankTrimmerPassThrough(t *testing.T) {
	row := [][]byte{[]byte("a  "), []byte("b  ")}
	trim := []bool{true, true}
	cases := map[string]struct{ in, want []byte }{
		"flags set": func() struct{ in, want []byte } {
			s := copyStream(0, [][][]byte{row})
			s[11] = 1
			return struct{ in, want []byte }{s, s}
		}(),
		"other field count": func() struct{ in, want []byte } {
			s := copyStream(0, [][][]byte{row, {[]byte("c  ")}, row})
			w := copyStream(0, [][][]byte{{[]byte("a"), []byte("b")}, {[]byte("c  ")}, row})
			return struct{ in, want []byte }{s, w}
		}(),
		"cut inside a value": func() struct{ in, want []byte } {
			s := copyStream(0, [][][]byte{row, row})
			s = s[:len(s)-6] // the second row's second length is half there
			w := copyStream(0, [][][]byte{{[]byte("a"), []byte("b")}})
			w = append(w[:len(w)-2], 0, 2, 0, 0, 0, 1, 'a')
			w = append(w, s[len(s)-3:]...)
			return struct{ in, want []byte }{s, w}
		}(),
		"not COPY binary": {[]byte("1\tabc  \n"), []byte("1\tabc  \n")},
	}
	for name, c := range cases {
		got, err := io.ReadAll(newBlankTrimmer(iotest.OneByteReader(bytes.NewReader(c.in)), trim))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, c.want)
		}
	}
	boom := io.ErrClosedPipe
	src := copyStream(0, [][][]byte{row})
	got, err := io.ReadAll(newBlankTrimmer(io.MultiReader(bytes.NewReader(src[:30]), iotest.ErrReader(boom)), trim))
	if err != boom {
		t.Fatalf("error %v, want %v", err, boom)
	}
	want := append(append([]byte(nil), src[:19+2]...), 0, 0, 0, 1, 'a')
	want = append(want, src[28:30]...)
	if !bytes.Equal(got, want) {
		t.Errorf("before the error:\n got %q\nwant %q", got, want)
	}
	if r := newBlankTrimmer(bytes.NewReader(src), []bool{false, false}); r == io.Reader(nil) {
		t.Fatal("nil reader")
	} else if _, ok := r.(*blankTrimmer); ok {
		t.Error("nothing to trim, yet a trimmer")
	}
}

// TestTrimBlanks: only trailing 0x20 bytes go, on both sides of the
// 32- and eight-byte steps.
func TestTrimBlanks(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""}, {" ", ""}, {"a", "a"}, {" a ", " a"}, {"a\t ", "a\t"},
		{"abcdefgh" + strings.Repeat(" ", 17), "abcdefgh"},
		{"x" + strings.Repeat(" ", 7) + "y" + strings.Repeat(" ", 8), "x" + strings.Repeat(" ", 7) + "y"},
		{strings.Repeat(" ", 64), ""}, {"x" + strings.Repeat(" ", 71), "x"}, {"y " + strings.Repeat("z", 40) + strings.Repeat(" ", 33), "y " + strings.Repeat("z", 40)},
	} {
		if got := string(trimBlanks([]byte(c.in))); got != c.want {
			t.Errorf("trimBlanks(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Every length to 100, blank but for one byte at every place (or none),
	// which a step of 32 or 8 bytes must not pass over; and a tab, which is
	// not a blank.
	for n := 0; n <= 100; n++ {
		for at := -1; at < n; at++ {
			for _, c := range []byte{'x', '\t', 0x80} {
				v := bytes.Repeat([]byte{' '}, n)
				if at >= 0 {
					v[at] = c
				}
				if got, want := trimBlanks(v), bytes.TrimRight(v, " "); !bytes.Equal(got, want) {
					t.Fatalf("trimBlanks of %d bytes with %q at %d: %d bytes, want %d", n, c, at, len(got), len(want))
				}
			}
		}
	}
}
