package snapshot

import (
	"context"
	"io"
	"testing"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// textTarget is a target without the binary capability; binaryTarget has it
// and answers TakesBinary with ok, counting the calls. Nothing else of Target
// may be called.
type textTarget struct{ Target }

type binaryTarget struct {
	Target
	ok    bool
	asked int
}

func (b *binaryTarget) TakesBinary(context.Context, *schema.Table, int) (bool, string, error) {
	b.asked++
	return b.ok, "target says no", nil
}

func (b *binaryTarget) CopyFromBinary(context.Context, *schema.Table, io.Reader) (int64, error) {
	panic("not called")
}

func formatRun(cols ...schema.Column) *tableRun {
	t := &schema.Table{Schema: "app", Name: "t", Columns: cols}
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	return &tableRun{Table: Table{Table: t, Published: source.PublishedTable{Columns: names}}}
}

func TestChooseFormat(t *testing.T) {
	ctx := t.Context()
	cfg := Config{Slot: "s"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	builtin := []schema.Column{
		{Name: "aid", TypeOID: 23, TypeName: "integer"},
		{Name: "filler", TypeOID: 1042, TypeMod: 88, TypeName: "character(84)"},
		{Name: "Tags", TypeOID: 1009, TypeName: "text[]"},
		{Name: "flag", TypeOID: 18, TypeName: `"char"`},
	}
	src := Source{Major: 17}

	r := formatRun(builtin...)
	yes := &binaryTarget{ok: true}
	if err := chooseFormats(ctx, cfg, src, []*tableRun{r}, yes); err != nil {
		t.Fatal(err)
	}
	j := job{table: r, whereRange: true, fromPage: 10, toPage: 20}
	const want = `COPY (SELECT "aid"::"pg_catalog"."int4", "filler"::"pg_catalog"."bpchar", "Tags"::"pg_catalog"."_text", "flag"::"pg_catalog"."char" FROM ONLY "app"."t" WHERE ctid >= '(10,0)'::tid AND ctid < '(20,0)'::tid) TO STDOUT (FORMAT binary)`
	if got := copyOutSQL(j); got != want {
		t.Errorf("binary copy:\n got %s\nwant %s", got, want)
	}

	// The target says no: text, as before.
	r = formatRun(builtin...)
	no := &binaryTarget{ok: false}
	if err := chooseFormats(ctx, cfg, src, []*tableRun{r}, no); err != nil {
		t.Fatal(err)
	}
	if r.casts != nil || no.asked != 1 {
		t.Errorf("target said no: casts %v, asked %d times", r.casts, no.asked)
	}
	if got, want := copyOutSQL(job{table: r}), `COPY (SELECT "aid", "filler", "Tags", "flag" FROM ONLY "app"."t") TO STDOUT`; got != want {
		t.Errorf("text copy:\n got %s\nwant %s", got, want)
	}

	// A column of a type off the list: text, without asking the target.
	for name, col := range map[string]schema.Column{
		"enum":     {Name: "mood", TypeOID: 50000, TypeName: "public.mood", Type: &schema.Type{Category: schema.CategoryEnum}},
		"domain":   {Name: "pos", TypeOID: 50001, TypeName: "public.posint", Type: &schema.Type{Category: schema.CategoryDomain, BaseOID: 23}},
		"regclass": {Name: "rel", TypeOID: 2205, TypeName: "regclass"},
		"xml":      {Name: "doc", TypeOID: 142, TypeName: "xml"},
	} {
		r = formatRun(append(builtin[:2:2], col)...)
		yes = &binaryTarget{ok: true}
		if err := chooseFormats(ctx, cfg, src, []*tableRun{r}, yes); err != nil {
			t.Fatal(err)
		}
		if r.casts != nil || yes.asked != 0 {
			t.Errorf("%s column: casts %v, target asked %d times", name, r.casts, yes.asked)
		}
	}

	// Published columns that are not the table's, in its order: text.
	r = formatRun(builtin...)
	r.Published.Columns = []string{"filler", "aid", "Tags", "flag"}
	yes = &binaryTarget{ok: true}
	if err := chooseFormats(ctx, cfg, src, []*tableRun{r}, yes); err != nil || r.casts != nil {
		t.Errorf("reordered columns: casts %v, %v", r.casts, err)
	}

	// A target without the capability: text.
	r = formatRun(builtin...)
	if err := chooseFormats(ctx, cfg, src, []*tableRun{r}, textTarget{}); err != nil || r.casts != nil {
		t.Errorf("text-only target: casts %v, %v", r.casts, err)
	}

	// A target that answers for many tables at once is asked once, about
	// the tables whose types may go in binary, and each answer goes to its
	// table.
	runs := []*tableRun{formatRun(builtin...), formatRun(builtin[0], schema.Column{Name: "doc", TypeOID: 142, TypeName: "xml"}), formatRun(builtin...), formatRun(builtin[:1]...)}
	runs[2].Table.Table.Name = "no"
	batch := &batchTarget{}
	if err := chooseFormats(ctx, cfg, src, runs, batch); err != nil {
		t.Fatal(err)
	}
	if batch.calls != 1 || batch.asked != 3 || runs[0].casts == nil || runs[1].casts != nil || runs[2].casts != nil || runs[3].casts == nil {
		t.Errorf("batch: %d calls about %d tables; casts %v / %v / %v / %v", batch.calls, batch.asked, runs[0].casts, runs[1].casts, runs[2].casts, runs[3].casts)
	}
}

// batchTarget answers TakesBinaryOf: yes for every table not named "no".
type batchTarget struct {
	binaryTarget
	calls, asked int
}

func (b *batchTarget) TakesBinaryOf(_ context.Context, tables []*schema.Table, _ int) ([]bool, []string, error) {
	b.calls++
	b.asked += len(tables)
	ok, why := make([]bool, len(tables)), make([]string, len(tables))
	for i, t := range tables {
		ok[i] = t.Name != "no"
	}
	return ok, why, nil
}
