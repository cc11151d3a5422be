package schema

import (
	"strings"
	"testing"
)

func objectNames(objs []*Object) string {
	var names []string
	for _, o := range objs {
		names = append(names, o.Key())
	}
	return strings.Join(names, "; ")
}

// ObjectOrder: kinds in creation order, and within a kind each object after
// what it needs, whatever the OIDs say (a view created before the view it
// now reads, after CREATE OR REPLACE).
func TestObjectOrder(t *testing.T) {
	objs := []*Object{
		{Kind: KindTrigger, Name: "t on public.a", OID: 1},
		{Kind: KindView, Name: "public.v2", OID: 10, Needs: []string{"view public.v3"}},
		{Kind: KindView, Name: "public.v3", OID: 30, Needs: []string{"materialized view public.m"}},
		{Kind: KindMatView, Name: "public.m", OID: 40},
		{Kind: KindFunction, Name: "public.f()", OID: 50},
		{Kind: KindForeignKey, Name: "fk on public.a", OID: 2},
		{Kind: KindSchema, Name: "public"},
		{Kind: KindView, Name: "public.v1", OID: 5},
	}
	ObjectOrder(objs)
	want := "schema public; function public.f(); view public.v1; materialized view public.m; view public.v3; view public.v2; foreign key fk on public.a; trigger t on public.a"
	if got := objectNames(objs); got != want {
		t.Errorf("order\n got %s\nwant %s", got, want)
	}
}

// A cycle of needs (which PostgreSQL does not allow, but a stale read might
// show) keeps every object, in OID order.
func TestObjectOrderCycle(t *testing.T) {
	objs := []*Object{
		{Kind: KindView, Name: "b", OID: 2, Needs: []string{"view a"}},
		{Kind: KindView, Name: "a", OID: 1, Needs: []string{"view b"}},
	}
	ObjectOrder(objs)
	if got := objectNames(objs); got != "view b; view a" && got != "view a; view b" {
		t.Errorf("order %s", got)
	}
	if len(objs) != 2 {
		t.Fatalf("lost objects: %s", objectNames(objs))
	}
}

func TestLeftOutNeeds(t *testing.T) {
	objs := []*Object{
		{Kind: KindView, Name: "public.base", LeftOut: "reads public.x, which the publication does not publish"},
		{Kind: KindView, Name: "public.mid", Needs: []string{"view public.base"}},
		{Kind: KindTrigger, Name: "t on public.a", Needs: []string{"function public.f()"}},
		{Kind: KindComment, Name: "on view public.mid", Needs: []string{"view public.mid"}},
		{Kind: KindView, Name: "public.fine"},
	}
	marked := LeftOutNeeds(objs, map[string]bool{"function public.f()": true})
	if len(marked) != 3 {
		t.Errorf("marked %s, want mid, the trigger and the comment", objectNames(marked))
	}
	for _, c := range []struct {
		i    int
		want string
	}{
		{1, "needs view public.base, which is left out"},
		{2, "needs function public.f(), which is left out"},
		{3, "needs view public.mid, which is left out"},
		{4, ""},
	} {
		if objs[c.i].LeftOut != c.want {
			t.Errorf("%s: LeftOut %q, want %q", objs[c.i].Key(), objs[c.i].LeftOut, c.want)
		}
	}
}

func TestCommentTarget(t *testing.T) {
	for _, c := range []struct{ typ, identity, want string }{
		{"table", "public.film", "TABLE public.film"},
		{"table column", "public.film.fulltext", "COLUMN public.film.fulltext"},
		{"materialized view", `"My".m`, `MATERIALIZED VIEW "My".m`},
		{"table constraint", "c on public.t", "CONSTRAINT c on public.t"},
		{"trigger", "t on public.t", "TRIGGER t on public.t"},
		{"composite type", "public.pair", "TYPE public.pair"},
		{"aggregate", "public.group_concat(text)", "AGGREGATE public.group_concat(text)"},
		{"policy", "p on public.t", ""},
		{"domain constraint", "c on public.d", ""},
	} {
		if got := commentTarget(c.typ, c.identity); got != c.want {
			t.Errorf("commentTarget(%q, %q) = %q, want %q", c.typ, c.identity, got, c.want)
		}
	}
}

func TestDisplayIdentAndPresent(t *testing.T) {
	for in, want := range map[string]string{"film": "film", "Billing": `"Billing"`, "Invoice No": `"Invoice No"`, `a"b`: `"a""b"`, "_x1": "_x1", "1x": `"1x"`} {
		if got := displayIdent(in); got != want {
			t.Errorf("displayIdent(%q) = %q, want %q", in, got, want)
		}
	}
	got := presentByAddress("sequence", []string{"Billing", "it's"}, nil)
	want := `SELECT true FROM pg_catalog.pg_get_object_address('sequence', ARRAY['Billing', 'it''s']::pg_catalog.text[], ARRAY[]::pg_catalog.text[])`
	if got != want {
		t.Errorf("presentByAddress\n got %s\nwant %s", got, want)
	}
	if got := ifNotExistsIndex("CREATE UNIQUE INDEX i ON public.t USING btree (a)"); got != "CREATE UNIQUE INDEX IF NOT EXISTS i ON public.t USING btree (a)" {
		t.Errorf("ifNotExistsIndex: %s", got)
	}
}
