package schemacopy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// fakeCarrier refuses the objects named in refuse and creates the others.
type fakeCarrier struct {
	refuse map[string]string
	phases []schema.Phase
}

func (f *fakeCarrier) CarryObjects(_ context.Context, phase schema.Phase, objs []*schema.Object) ([]sink.ObjectResult, error) {
	f.phases = append(f.phases, phase)
	out := make([]sink.ObjectResult, len(objs))
	for i, o := range objs {
		out[i] = sink.ObjectResult{Kind: o.Kind, Name: o.Name, State: sink.ObjectCreated}
		switch {
		case o.LeftOut != "":
			out[i].State, out[i].Reason = sink.ObjectLeftOut, o.LeftOut
		case f.refuse[o.Key()] != "":
			out[i].State, out[i].Reason = sink.ObjectLeftOut, f.refuse[o.Key()]
		}
	}
	return out, nil
}

// What needs an object the target refused is reported as needing it,
// ahead of the target's own complaint about it.
func TestCarryAllNamesWhatIsNeeded(t *testing.T) {
	objs := []*schema.Object{
		{Kind: schema.KindFunction, Name: "public.f()"},
		{Kind: schema.KindView, Name: "public.v", Needs: []string{"function public.f()"}},
		{Kind: schema.KindView, Name: "public.w"},
	}
	fc := &fakeCarrier{refuse: map[string]string{
		"function public.f()": "the target refused it: language \"plperlu\" does not exist",
		"view public.v":       "the target refused it: function public.f() does not exist",
	}}
	results, err := carryAll(context.Background(), fc, objs)
	if err != nil {
		t.Fatal(err)
	}
	if got := results[1].Reason; !strings.HasPrefix(got, "needs function public.f(), which is left out; the target refused it") {
		t.Errorf("view's reason %q", got)
	}
	if results[2].State != sink.ObjectCreated {
		t.Errorf("view w: %+v", results[2])
	}
	if len(fc.phases) != 1 || fc.phases[0] != schema.PostData {
		t.Errorf("phases %v, want post-data once", fc.phases)
	}
}

// A target that carries no schema objects reports each left out.
func TestCarryAllWithoutCarrier(t *testing.T) {
	results, err := carryAll(context.Background(), struct{}{}, []*schema.Object{{Kind: schema.KindView, Name: "public.v"}})
	if err != nil || len(results) != 1 || results[0].State != sink.ObjectLeftOut || results[0].Reason == "" {
		t.Fatalf("results %+v, %v", results, err)
	}
}

func TestReady(t *testing.T) {
	zero, some := int64(0), int64(4096)
	rep := &sink.CutoverReport{Schema: ModeAll, CaughtUpLSN: 100, FinishedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Objects: []sink.ObjectResult{{Kind: schema.KindView, Name: "public.v", State: sink.ObjectCreated}}}
	for _, c := range []struct {
		name     string
		rep      *sink.CutoverReport
		applied  source.LSN
		lag      *int64
		behind   []string
		ready    bool
		notReady string
	}{
		{"right after migrate", rep, 100, &some, []string{}, true, ""},
		{"replicate caught up since", rep, 200, &zero, []string{}, true, ""},
		{"behind the source", rep, 200, &some, []string{}, false, "not caught up (4096 bytes"},
		{"sequences behind", rep, 100, &some, []string{"public.s (next 3 on the target, 9 on the source)"}, false, "1 sequences behind the source's values (run pgrelay sequences)"},
		{"no migration yet", nil, 100, &zero, nil, false, "no pgrelay migrate has caught up into this target yet"},
		{"an object left out", &sink.CutoverReport{CaughtUpLSN: 100, Objects: []sink.ObjectResult{
			{Kind: schema.KindView, Name: "public.v", State: sink.ObjectLeftOut, Reason: "reads public.x"},
			{Kind: schema.KindTrigger, Name: "t on public.a", State: sink.ObjectCreated, Incomplete: true, Reason: "created DISABLED"}}},
			100, &zero, []string{}, false, "1 schema objects left out (listed); 1 schema objects need a hand at the switch (listed)"},
		// What the target cannot hold is listed, and the target is ready.
		{"objects not carried", &sink.CutoverReport{CaughtUpLSN: 100, Objects: []sink.ObjectResult{
			{Kind: schema.KindView, Name: "public.v", State: sink.ObjectNotCarried, Reason: "not carried to MySQL"},
			{Kind: schema.KindForeignKey, Name: "fk on public.a", State: sink.ObjectCreated}}},
			100, &zero, []string{}, true, ""},
	} {
		rd := Ready(c.rep, c.applied, c.lag, c.behind)
		if rd.Ready != c.ready || !strings.Contains(strings.Join(rd.NotReady, "; "), c.notReady) {
			t.Errorf("%s: ready %v (%q), want %v (%q)", c.name, rd.Ready, rd.NotReady, c.ready, c.notReady)
		}
		if c.rep != nil && len(rd.NotCarried)+len(rd.LeftOut) != func() (n int) {
			for _, o := range c.rep.Objects {
				if o.Missing() || o.Incomplete || o.State == sink.ObjectNotCarried {
					n++
				}
			}
			return n
		}() {
			t.Errorf("%s: listed %+v and %+v", c.name, rd.LeftOut, rd.NotCarried)
		}
	}
}

// A MySQL-like report: what the target cannot hold is listed as not
// carried, a foreign key made otherwise than on the source has a note, and
// the target is ready, saying what to port.
func TestRenderNotCarried(t *testing.T) {
	rep := &sink.CutoverReport{Schema: ModeAll, CaughtUpLSN: 100, Tables: 2, Rows: 10, Objects: []sink.ObjectResult{
		{Kind: schema.KindForeignKey, Name: "fk on public.a", State: sink.ObjectCreated, Reason: "DEFERRABLE on the source: …"},
		{Kind: schema.KindSequence, Name: "public.a_id_seq", State: sink.ObjectPresent, Reason: "as the AUTO_INCREMENT of public.a.id"},
		{Kind: schema.KindView, Name: "public.v", State: sink.ObjectNotCarried, Reason: "not carried to MySQL: …"},
	}}
	var b strings.Builder
	if err := Render(&b, rep); err != nil {
		t.Fatal(err)
	}
	want := `tables: 2 (10 rows copied by the snapshot)
sequences: 0 set to the source's values
schema objects: 1 created, 1 already there, 0 left out, 1 not carried (the target cannot hold them)
  note: foreign key fk on public.a: DEFERRABLE on the source: …
  not carried: view public.v: not carried to MySQL: …
ready to switch: yes (stop the application's writes on the source first, then run pgrelay migrate once more, or pgrelay sequences while replicate runs); 1 schema objects are not carried (listed): port those the application needs yourself
`
	if b.String() != want {
		t.Errorf("Render:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	zero := int64(0)
	rd := Ready(rep, 100, &zero, []string{})
	if err := RenderStatus(&b, &rd, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "cut-over\tREADY: caught up, sequences at the source's values, nothing left out; 1 schema objects the target cannot hold are not carried (listed)") ||
		!strings.Contains(b.String(), "not carried\tview public.v: not carried to MySQL: …\n") {
		t.Errorf("RenderStatus:\n%s", b.String())
	}
}

func TestRender(t *testing.T) {
	var b strings.Builder
	rep := &sink.CutoverReport{Schema: ModeAll, CaughtUpLSN: 100, Tables: 3, Rows: 42, Sequences: 2, Objects: []sink.ObjectResult{
		{Kind: schema.KindView, Name: "public.v", State: sink.ObjectCreated},
		{Kind: schema.KindFunction, Name: "public.f()", State: sink.ObjectPresent},
		{Kind: schema.KindForeignKey, Name: "fk on public.a", State: sink.ObjectLeftOut, Reason: "references public.x, which the publication does not publish"},
		{Kind: schema.KindTrigger, Name: "t on public.a", State: sink.ObjectCreated, Incomplete: true, Reason: "created DISABLED: …"},
	}}
	if err := Render(&b, rep); err != nil {
		t.Fatal(err)
	}
	want := `tables: 3 (42 rows copied by the snapshot)
sequences: 2 set to the source's values
schema objects: 2 created, 1 already there, 1 left out
  left out: foreign key fk on public.a: references public.x, which the publication does not publish
  at the switch: trigger t on public.a: created DISABLED: …
ready to switch: no: 1 schema objects left out (listed); 1 schema objects need a hand at the switch (listed)
`
	if b.String() != want {
		t.Errorf("Render:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := Render(&b, &sink.CutoverReport{Schema: ModeTables, CaughtUpLSN: 1, Tables: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "schema objects: not carried (PGRELAY_SCHEMA=tables") || !strings.Contains(b.String(), "ready to switch: yes") {
		t.Errorf("Render, tables only:\n%s", b.String())
	}
}

// With PGRELAY_SCHEMA=tables the pre-data step reads nothing (a nil
// connection would fail).
func TestPreDataTablesOnly(t *testing.T) {
	results, err := PreData(context.Background(), Config{Schema: ModeTables}, nil, &fakeCarrier{})
	if err != nil || results != nil {
		t.Fatalf("PreData with tables only: %v, %v", results, err)
	}
	if err := (&Config{Schema: "everything"}).Validate(); err == nil {
		t.Error("Validate took schema everything")
	}
}
