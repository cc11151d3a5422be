package postgres

import (
	"testing"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// TestLegacyChars: only a "char" column's \ooo above 127 becomes its byte; the
// change handed in is left as it is.
func TestLegacyChars(t *testing.T) {
	text := func(s string) source.Value { return source.Value{Kind: source.ValueText, Data: []byte(s)} }
	ts := &tableStatements{chars: []int{1, 2}}
	old := source.Tuple{text("1"), text(`\303`), text("a")}
	ch := &sink.Change{Kind: sink.Update, Old: old, New: source.Tuple{text(`\303`), text(`\377`), text(`\`)}}
	got := legacyChars(ts, ch)
	if got == ch {
		t.Fatal("no copy made")
	}
	if v := got.New[1]; v.Kind != source.ValueBinary || len(v.Data) != 1 || v.Data[0] != 0xff {
		t.Errorf("new \\377: %+v", v)
	}
	if v := got.Old[1]; v.Kind != source.ValueBinary || v.Data[0] != 0xc3 {
		t.Errorf("old \\303: %+v", v)
	}
	if got.New[0].Kind != source.ValueText || got.New[2].Kind != source.ValueText || got.Old[2].Kind != source.ValueText {
		t.Errorf("other values changed: %+v / %+v", got.New, got.Old)
	}
	if ch.New[1].Kind != source.ValueText || ch.Old[1].Kind != source.ValueText {
		t.Error("the change handed in was modified")
	}
	for _, s := range []string{`\177`, `\400`, `\30`, `\3038`, `a`, `\\`, `\28a`} {
		if _, ok := octalChar(text(s)); ok {
			t.Errorf("octalChar(%q) decoded", s)
		}
	}
	plain := &sink.Change{Kind: sink.Insert, New: source.Tuple{text("1"), text("x"), {Kind: source.ValueNull}}}
	if legacyChars(ts, plain) != plain {
		t.Error("a change without such values was copied")
	}
}
