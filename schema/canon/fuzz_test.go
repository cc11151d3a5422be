package canon

import "testing"

// The parsers read what a target returns: they never panic, and a form they
// produce is a fixed point (the form of a form is itself).

func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.50,1e2,-0]}`, `"\ud83d\udc18"`, `[[],{}]`, `1E+2`, `{"a":1,"a":2}`, `"\u0001"`} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, doc string, doubles bool) {
		out, err := JSON(doc, doubles)
		if err != nil {
			return
		}
		again, err := JSON(out, doubles)
		if err != nil || again != out {
			t.Errorf("JSON(%q) = %q, whose form is %q (%v)", doc, out, again, err)
		}
	})
}

func FuzzArray(f *testing.F) {
	for _, s := range []string{`{1.50,NaN}`, `{{1,2},{NULL,3}}`, `[0:1]={1,2}`, `{"a b","",NULL}`, `{}`} {
		f.Add(s, `[1.5, null, ["x"]]`)
	}
	f.Fuzz(func(t *testing.T, text, doc string) {
		for _, typ := range []Type{{Kind: KindArray, Elem: KindNumeric, DoubleNumbers: true}, {Kind: KindArray, Elem: KindText}, {Kind: KindArray, Elem: KindJSONB}} {
			_, _ = ArrayText(text, typ)
			_, _ = ArrayFromJSON(doc, typ)
		}
	})
}

func FuzzNumbers(f *testing.F) {
	for _, s := range []string{"1.50", "-0", "1e3", "NaN", "0.10000000000000001", "1.17549435e-38"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := NumericText(s); err == nil {
			if again, err := NumericText(n); err != nil || again != n {
				t.Errorf("NumericText(%q) = %q, whose form is %q (%v)", s, n, again, err)
			}
		}
		for _, bits := range []int{32, 64} {
			if v, err := FloatText(s, bits); err == nil {
				if again, err := FloatText(v, bits); err != nil || again != v {
					t.Errorf("FloatText(%q, %d) = %q, whose form is %q (%v)", s, bits, v, again, err)
				}
			}
		}
		_, _ = TimeText(s)
		_, _ = UUID(s)
	})
}
