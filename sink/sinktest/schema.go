package sinktest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// The cases of the capabilities of a migration's schema steps
// (sink/schema.go, apply/schemacopy).

// testSchemaCarrier: one result per object, in order; what is left out says
// why, what belongs to a later phase is deferred, what is made is there the
// next time (present), never made twice. An object's Create is PostgreSQL's;
// a target of another kind makes the foreign key from its facts, or leaves
// it out (or does not carry it) saying why.
func testSchemaCarrier(t *testing.T, tgt Target) {
	parent, child := ItemsTable("public", "carry_parent"), ItemsTable("public", "carry_child")
	s, _ := open(t, tgt, parent, child)
	carrier, ok := s.(sink.SchemaCarrier)
	if !ok {
		t.Skip("the sink has no sink.SchemaCarrier: migrate lists every schema object as left out")
	}
	ctx := ctxFor(t)
	fk := &schema.Object{Kind: schema.KindForeignKey, Name: "carry_fk on public.carry_child", Phase: schema.PostData, Schema: "public",
		Table:   schema.QualifiedName{Schema: "public", Name: "carry_child"},
		Create:  []string{`ALTER TABLE public.carry_child ADD CONSTRAINT carry_fk FOREIGN KEY (id) REFERENCES public.carry_parent (id)`},
		Present: `SELECT true FROM pg_catalog.pg_constraint WHERE conname = 'carry_fk' AND conrelid = 'public.carry_child'::pg_catalog.regclass`,
		ForeignKey: &schema.ForeignKey{Name: "carry_fk", Table: schema.QualifiedName{Schema: "public", Name: "carry_child"}, Columns: []string{"id"},
			RefTable: schema.QualifiedName{Schema: "public", Name: "carry_parent"}, RefColumns: []string{"id"}, OnUpdate: "NO ACTION", OnDelete: "NO ACTION"}}
	leftOut := &schema.Object{Kind: schema.KindView, Name: "public.carry_gone", Phase: schema.PreData, Schema: "public",
		LeftOut: "reads public.elsewhere, which the publication does not publish"}
	objs := []*schema.Object{leftOut, fk}

	pre, err := carrier.CarryObjects(ctx, schema.PreData, objs)
	if err != nil {
		t.Fatal(err)
	}
	wantResults(t, "pre-data", objs, pre)
	if !(pre[0].State == sink.ObjectLeftOut && pre[0].Reason == leftOut.LeftOut || pre[0].State == sink.ObjectNotCarried && pre[0].Reason != "") {
		t.Errorf("pre-data: the left-out view: %+v, want left out saying why (or not carried, by a target that holds no views)", pre[0])
	}
	if pre[1].State != sink.ObjectDeferred {
		t.Errorf("pre-data: the post-data foreign key: %+v, want deferred", pre[1])
	}
	post, err := carrier.CarryObjects(ctx, schema.PostData, objs)
	if err != nil {
		t.Fatal(err)
	}
	wantResults(t, "post-data", objs, post)
	made := post[1].State == sink.ObjectCreated
	if !made && !((post[1].State == sink.ObjectLeftOut || post[1].State == sink.ObjectNotCarried) && post[1].Reason != "") {
		t.Fatalf("post-data: the foreign key: %+v, want created, or left out saying why", post[1])
	}
	again, err := carrier.CarryObjects(ctx, schema.PostData, objs)
	if err != nil {
		t.Fatal(err)
	}
	wantResults(t, "post-data again", objs, again)
	if made && again[1].State != sink.ObjectPresent {
		t.Errorf("post-data again: the foreign key made before: %+v, want present", again[1])
	}
}

// wantResults checks that results are one per object, in objs' order.
func wantResults(t *testing.T, phase string, objs []*schema.Object, results []sink.ObjectResult) {
	t.Helper()
	if len(results) != len(objs) {
		t.Fatalf("%s: %d results for %d objects", phase, len(results), len(objs))
	}
	for i, r := range results {
		if r.Kind != objs[i].Kind || r.Name != objs[i].Name {
			t.Errorf("%s: result %d is %s %s, want %s", phase, i, r.Kind, r.Name, objs[i].Key())
		}
	}
}

// testCutoverRecorder: no report before a migration; the last one per slot
// after, as recorded.
func testCutoverRecorder(t *testing.T, tgt Target) {
	s, _ := open(t, tgt)
	rec, ok := s.(sink.CutoverRecorder)
	if !ok {
		t.Skip("the sink has no sink.CutoverRecorder: status never calls the target ready to switch to")
	}
	ctx := ctxFor(t)
	if _, found, err := rec.Cutover(ctx, Slot); err != nil || found {
		t.Fatalf("before any migration: found %v, %v", found, err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	first := sink.CutoverReport{Slot: Slot, Schema: "all", CaughtUpLSN: lsn(10), FinishedAt: at, Tables: 3, Rows: 1000, Sequences: 2,
		Objects: []sink.ObjectResult{
			{Kind: schema.KindView, Name: "public.v", State: sink.ObjectLeftOut, Reason: "reads public.x, which the publication does not publish"},
			{Kind: schema.KindTrigger, Name: "t on public.items", State: sink.ObjectCreated, Reason: "created disabled", Incomplete: true},
		}}
	second := first
	second.CaughtUpLSN, second.FinishedAt, second.Objects = lsn(20), at.Add(time.Hour), []sink.ObjectResult{}
	for _, want := range []sink.CutoverReport{first, second} {
		if err := rec.RecordCutover(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, found, err := rec.Cutover(ctx, Slot)
		if err != nil || !found {
			t.Fatalf("after a migration: found %v, %v", found, err)
		}
		if got.Slot != want.Slot || got.Schema != want.Schema || got.CaughtUpLSN != want.CaughtUpLSN || !got.FinishedAt.Equal(want.FinishedAt) ||
			got.Tables != want.Tables || got.Rows != want.Rows || got.Sequences != want.Sequences || !slices.Equal(got.Objects, want.Objects) {
			t.Errorf("read back\n %+v\nwant\n %+v", got, want)
		}
	}
	if _, found, err := rec.Cutover(ctx, "another_slot"); err != nil || found {
		t.Errorf("another slot: found %v, %v", found, err)
	}
}

// testSequenceChecker: a sequence set to the source's value is not behind;
// one the source moved past since, or one of a column the target lacks, is
// named. (A sequence of no column is the target's to judge: MySQL, which
// cannot hold one, lists it as not carried in the migration's report.)
func testSequenceChecker(t *testing.T, tgt Target) {
	table := ItemsTable("public", "seqcheck")
	s, _ := open(t, tgt, table)
	checker, ok := s.(sink.SequenceChecker)
	if !ok {
		t.Skip("the sink has no sink.SequenceChecker: status does not compare the sequences")
	}
	setter, ok := s.(sink.SequenceSetter)
	if !ok {
		t.Skip("the sink has no sink.SequenceSetter: there is no sequence of the target's to compare")
	}
	ctx := ctxFor(t)
	q := source.Sequence{Schema: "public", Name: "seqcheck_id_seq", TableSchema: "public", Table: "seqcheck", Column: "id",
		Nextval: true, TypeName: "bigint", Start: 1, Increment: 1, Min: 1, Max: 1 << 62, Cache: 1, Readable: true, Called: true, LastValue: 41}
	if err := setter.SetSequences(ctx, []source.Sequence{q}); err != nil {
		t.Fatal(err)
	}
	if behind, err := checker.SequencesBehind(ctx, []source.Sequence{q}); err != nil || len(behind) != 0 {
		t.Fatalf("at the source's value: behind %q, %v", behind, err)
	}
	moved := q
	moved.LastValue = 50
	missing := q
	missing.Name, missing.Column = "seqcheck_gone", "gone"
	behind, err := checker.SequencesBehind(ctx, []source.Sequence{moved, missing})
	if err != nil {
		t.Fatal(err)
	}
	if len(behind) != 2 || !slices.ContainsFunc(behind, func(b string) bool { return strings.HasPrefix(b, "public.seqcheck_id_seq") }) ||
		!slices.ContainsFunc(behind, func(b string) bool { return strings.HasPrefix(b, "public.seqcheck_gone") }) {
		t.Errorf("the source moved on, and one the target lacks: behind %q, want both named", behind)
	}
}
