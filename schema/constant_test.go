package schema

import "testing"

func TestConstantOf(t *testing.T) {
	for _, c := range []struct {
		expr string
		want *Value // TypeName is always the column's
	}{
		{`'x'::text`, &Value{Text: "x"}},
		{`'it''s \ here'::text`, &Value{Text: `it's \ here`}},
		{`''::text`, &Value{Text: ""}},
		{`42`, &Value{Text: "42"}},
		{`'-5'::integer`, &Value{Text: "-5"}},
		{`1.5`, &Value{Text: "1.5"}},
		{`1.50::numeric(10,2)`, &Value{Text: "1.50"}},
		{`1e10`, &Value{Text: "1e10"}},
		{`true`, &Value{Text: "true"}},
		{`false`, &Value{Text: "false"}},
		{`NULL::integer`, &Value{Null: true}},
		{`NULL`, &Value{Null: true}},
		{`'2026-01-01 00:00:00+00'::timestamp with time zone`, &Value{Text: "2026-01-01 00:00:00+00"}},
		{`'ok'::"My Schema"."mood ""x"""`, &Value{Text: "ok"}},
		{`'{1,2}'::integer[]`, &Value{Text: "{1,2}"}},
		{`'x'::character varying`, &Value{Text: "x"}},
		{`'a:b'::app.t`, &Value{Text: "a:b"}},
		// Expressions.
		{``, nil},
		{`now()`, nil},
		{`(1 + 2)`, nil},
		{`'a'::text || 'b'::text`, nil},
		{`'1'::integer + 1`, nil},
		{`('1.7'::numeric)::integer`, nil},
		{`'x'::text::integer`, nil},
		{`nextval('public.s'::regclass)`, nil},
		{`'unterminated`, nil},
		{`'x'`, nil},
		{`-1`, nil},
		{`CURRENT_TIMESTAMP`, nil},
		{`ARRAY['a'::text]`, nil},
		{`'x'::"unterminated`, nil},
		{`'x'::numeric(10`, nil},
		{`'x'::t[`, nil},
		{`'x'::t(a)`, nil},
	} {
		got := ConstantOf(SourceExpr(c.expr), "coltype")
		if c.want == nil {
			if got != nil {
				t.Errorf("ConstantOf(%s) = %+v, want an expression (nil)", c.expr, *got)
			}
			continue
		}
		want := *c.want
		want.TypeName = "coltype"
		if got == nil || *got != want {
			t.Errorf("ConstantOf(%s) = %+v, want %+v", c.expr, got, want)
		}
	}
}
