package mysql

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pgrelay/pgrelay/schema"
)

// decodeLoad reads LOAD DATA text as MySQL does with FIELDS TERMINATED BY
// '\t' ESCAPED BY '\\' LINES TERMINATED BY '\n': \N alone is NULL, and \0
// \b \n \r \t \Z \\ are escapes; a backslash before another character
// stands for it. Independent of the sink's encoder.
func decodeLoad(t *testing.T, data []byte) [][][]byte {
	t.Helper()
	var rows [][][]byte
	for len(data) > 0 {
		var row [][]byte
		var field []byte
		raw := []byte{}
		i := 0
		for ; i < len(data) && data[i] != '\n'; i++ {
			switch c := data[i]; {
			case c == '\\' && i+1 < len(data):
				i++
				raw = append(raw, '\\', data[i])
				field = append(field, map[byte]byte{'0': 0, 'b': '\b', 'n': '\n', 'r': '\r', 't': '\t', 'Z': 0x1a}[data[i]])
				if _, ok := map[byte]bool{'0': true, 'b': true, 'n': true, 'r': true, 't': true, 'Z': true}[data[i]]; !ok {
					field[len(field)-1] = data[i]
				}
			case c == '\t':
				row = append(row, nullOr(raw, field))
				field, raw = nil, []byte{}
			default:
				field = append(field, c)
				raw = append(raw, c)
			}
		}
		row = append(row, nullOr(raw, field))
		rows = append(rows, row)
		if i >= len(data) {
			t.Fatalf("LOAD DATA text does not end with a newline: %q", data)
		}
		data = data[i+1:]
	}
	return rows
}

func nullOr(raw, field []byte) []byte {
	if string(raw) == `\N` {
		return nil
	}
	if field == nil {
		return []byte{}
	}
	return field
}

// copyEscape writes a value in COPY text, choosing among the escapes
// PostgreSQL's COPY FROM accepts.
func copyEscape(r *rand.Rand, v []byte) []byte {
	var out []byte
	for _, b := range v {
		switch {
		case b == '\\':
			out = append(out, '\\', '\\')
		case b == '\t' || b == '\n' || b == '\r' || b == '\b' || b == '\f' || b == '\v':
			out = append(out, '\\', map[byte]byte{'\t': 't', '\n': 'n', '\r': 'r', '\b': 'b', '\f': 'f', '\v': 'v'}[b])
		case b < 0x20 && r.IntN(2) == 0:
			out = append(out, fmt.Sprintf(`\x%02x`, b)...)
		case b < 0x20:
			out = append(out, fmt.Sprintf(`\%03o`, b)...)
		default:
			out = append(out, b)
		}
	}
	return out
}

func textConverter(row int64, col int, text []byte) (schema.MySQLValue, error) {
	return schema.MySQLValue{Kind: schema.MySQLString, Data: text}, nil
}

// TestLoadTranscoderRoundTrip: values written as COPY text come out of the
// transcoder as LOAD DATA reads them back, byte for byte, NULLs and empty
// strings apart.
func TestLoadTranscoderRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	special := []byte{'\\', '\t', '\n', '\r', 0, 'N', '.', 0x1a, '\b', '\f', '\v', 'x', '0', 'Z', 0xc3, 0xa4, ' '}
	const ncols = 4
	var in bytes.Buffer
	var want [][][]byte
	for range 3000 {
		var row [][]byte
		for c := range ncols {
			if c > 0 {
				in.WriteByte('\t')
			}
			if r.IntN(8) == 0 {
				in.WriteString(`\N`)
				row = append(row, nil)
				continue
			}
			v := make([]byte, r.IntN(12))
			for i := range v {
				v[i] = special[r.IntN(len(special))]
			}
			if r.IntN(20) == 0 {
				v = []byte(`\N`) // the text \N, not NULL
			}
			in.Write(copyEscape(r, v))
			row = append(row, v)
		}
		in.WriteByte('\n')
		want = append(want, row)
	}
	tr := &loadTranscoder{in: newCopyReader(&in, ncols), convert: textConverter}
	out, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeLoad(t, out)
	if len(got) != len(want) {
		t.Fatalf("%d rows out, %d in", len(got), len(want))
	}
	for i := range want {
		if !slices.EqualFunc(got[i], want[i], func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }) {
			t.Fatalf("row %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if tr.in.line != int64(len(want)) {
		t.Fatalf("counted %d rows, want %d", tr.in.line, len(want))
	}
}

func TestLoadTranscoderValues(t *testing.T) {
	tb := &schema.Table{Schema: "public", Name: "t", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{
		{Name: "id", TypeName: "integer", TypeOID: 23, TypeMod: -1, Key: true, NotNull: true},
		{Name: "b", TypeName: "bytea", TypeOID: 17, TypeMod: -1},
		{Name: "ok", TypeName: "boolean", TypeOID: 16, TypeMod: -1},
		{Name: "at", TypeName: "timestamp with time zone", TypeOID: 1184, TypeMod: -1},
	}}
	m, err := schema.NewMySQL(schema.MySQLServer{MariaDB: true, Version: 101100}, "db").Table(tb)
	if err != nil {
		t.Fatal(err)
	}
	in := "1\t\\\\x00ff0a\tt\t2024-05-06 07:08:09+02\n2\t\\N\tf\t\\N\n"
	tr := &loadTranscoder{in: newCopyReader(bytes.NewBufferString(in), 4), convert: func(_ int64, col int, text []byte) (schema.MySQLValue, error) { return m.Convert(col, text) }}
	out, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1\t00ff0a\t1\t2024-05-06 05:08:09\n2\t\\N\t0\t\\N\n"; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	tr = &loadTranscoder{in: newCopyReader(bytes.NewBufferString("1\t\\N\tt\tinfinity\n"), 4), convert: func(_ int64, col int, text []byte) (schema.MySQLValue, error) { return m.Convert(col, text) }}
	if _, err := io.ReadAll(tr); !errors.Is(err, schema.ErrUnfit) {
		t.Fatalf("infinity: %v, want ErrUnfit", err)
	}
	tr = &loadTranscoder{in: newCopyReader(bytes.NewBufferString("1\t2\n"), 4), convert: textConverter}
	if _, err := io.ReadAll(tr); err == nil {
		t.Fatal("a row with too few fields: no error")
	}
}

// FuzzLoadTranscoder: whatever the input, the transcoder does not panic,
// and for input it reads, LOAD DATA reads back exactly what COPY meant.
func FuzzLoadTranscoder(f *testing.F) {
	for _, s := range []string{"a\tb\n", `\N` + "\t\\\\N\n", "\\x41\\101\\n\t\\\n", "\\.\n", "a\tb", "\t\n\t\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := &loadTranscoder{in: newCopyReader(bytes.NewReader(data), 2), convert: textConverter}
		out, err := io.ReadAll(tr)
		if err != nil {
			return
		}
		// What COPY means by each row.
		var want [][][]byte
		cr := newCopyReader(bytes.NewReader(data), 2)
		for {
			row, err := cr.next()
			if err != nil {
				break
			}
			cp := make([][]byte, len(row))
			for i, v := range row {
				if v != nil {
					cp[i] = append([]byte{}, v...)
				}
			}
			want = append(want, cp)
		}
		got := [][][]byte{}
		if len(out) > 0 {
			got = decodeLoad(t, out)
		}
		if len(got) != len(want) {
			t.Fatalf("%d rows out, %d in", len(got), len(want))
		}
		for i := range want {
			if !slices.EqualFunc(got[i], want[i], func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }) {
				t.Fatalf("row %d: got %q, want %q", i, got[i], want[i])
			}
		}
	})
}
