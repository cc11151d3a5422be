package pgquote

import "testing"

func TestIdent(t *testing.T) {
	for in, want := range map[string]string{
		"t":           `"t"`,
		"Mixed Case":  `"Mixed Case"`,
		`a"b`:         `"a""b"`,
		"a\x00b":      `"ab"`,
		`back\slash`:  `"back\slash"`,
		"":            `""`,
		"überschrift": `"überschrift"`,
	} {
		if got := Ident(in); got != want {
			t.Errorf("Ident(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"plain":     `'plain'`,
		"it's":      `'it''s'`,
		`a\b`:       `E'a\\b'`,
		`it's a\b`:  `E'it''s a\\b'`,
		"nul\x00in": `'nulin'`,
		"":          `''`,
	} {
		if got := Literal(in); got != want {
			t.Errorf("Literal(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCommandLiteral(t *testing.T) {
	for in, want := range map[string]string{
		`"pub"`:     `'"pub"'`,
		`"it's"`:    `'"it''s"'`,
		`"a\b"`:     `'"a\b"'`,
		"nul\x00in": `'nulin'`,
	} {
		if got := CommandLiteral(in); got != want {
			t.Errorf("CommandLiteral(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestName(t *testing.T) {
	for want, parts := range map[string][]string{
		`public.orders`:        {"public", "orders"},
		`public."a.b,c"`:       {"public", "a.b,c"},
		`"My Schema"."Orders"`: {"My Schema", "Orders"},
		`s."say ""hi"""`:       {"s", `say "hi"`},
		`public."1st"`:         {"public", "1st"},
		`"t2_$x"`:              {"t2_$x"},
		`"é"`:                  {"é"},
		`""`:                   {""},
	} {
		if got := Name(parts...); got != want {
			t.Errorf("Name(%q) = %s, want %s", parts, got, want)
		}
	}
}
