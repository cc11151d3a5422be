package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/postgres"
)

// TestSinkPostgresCarryObjects: objects given out of order (a view before
// the function it calls, which pg_depend did not tell) are created in a
// later pass; pre-data defers what still fails, post-data leaves it out
// with the target's error; an object the target has is kept; one on a
// table a prepared transaction holds is left out at once.
func TestSinkPostgresCarryObjects(t *testing.T) {
	pg := harness.Postgres(t, e2eTargetMajor)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := postgres.New(ctx, pg.URL(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	pg.Exec(t, "CREATE TABLE public.held (id int PRIMARY KEY); CREATE FUNCTION public.kept() RETURNS int LANGUAGE sql AS 'SELECT 7'")
	objs := []*schema.Object{
		{Kind: schema.KindView, Name: "public.v", Phase: schema.PreData, Create: []string{"CREATE VIEW public.v AS SELECT public.f() AS x"},
			Present: "SELECT pg_catalog.to_regclass('public.v') IS NOT NULL"},
		{Kind: schema.KindFunction, Name: "public.f()", Phase: schema.PreData, Create: []string{"CREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 1'"},
			Present: "SELECT pg_catalog.to_regprocedure('public.f()') IS NOT NULL"},
		{Kind: schema.KindFunction, Name: "public.kept()", Phase: schema.PreData, Create: []string{"CREATE OR REPLACE FUNCTION public.kept() RETURNS int LANGUAGE sql AS 'SELECT 1'"},
			Present: "SELECT pg_catalog.to_regprocedure('public.kept()') IS NOT NULL"},
		{Kind: schema.KindView, Name: "public.w", Phase: schema.PreData, Create: []string{"CREATE VIEW public.w AS SELECT * FROM public.nowhere"},
			Present: "SELECT pg_catalog.to_regclass('public.w') IS NOT NULL"},
		{Kind: schema.KindView, Name: "public.later", Phase: schema.PostData, Create: []string{"CREATE VIEW public.later AS SELECT 1"}},
		{Kind: schema.KindView, Name: "public.not", Phase: schema.PreData, LeftOut: "reads public.x, which the publication does not publish"},
	}
	results, err := s.CarryObjects(ctx, schema.PreData, objs)
	if err != nil {
		t.Fatal(err)
	}
	want := []sink.ObjectState{sink.ObjectCreated, sink.ObjectCreated, sink.ObjectPresent, sink.ObjectDeferred, sink.ObjectDeferred, sink.ObjectLeftOut}
	for i, r := range results {
		if r.State != want[i] {
			t.Errorf("pre-data: %s %s: %s (%s), want %s", r.Kind, r.Name, r.State, r.Reason, want[i])
		}
	}
	if !strings.Contains(results[3].Reason, `relation "public.nowhere" does not exist`) {
		t.Errorf("pre-data: the deferred view's reason %q", results[3].Reason)
	}
	if got := pg.QueryString(t, "SELECT public.kept()"); got != "7" {
		t.Errorf("the target's own function was replaced: kept() = %s", got)
	}

	// A prepared transaction holds public.held.
	conn := pg.Conn(t)
	e2eExec(t, ctx, conn, "BEGIN", "INSERT INTO public.held VALUES (1)", "PREPARE TRANSACTION 'carry_held'")
	t.Cleanup(func() { pg.Exec(t, "ROLLBACK PREPARED 'carry_held'") })
	objs = append(objs, &schema.Object{Kind: schema.KindCheck, Name: "c on public.held", Phase: schema.PostData, Table: schema.QualifiedName{Schema: "public", Name: "held"},
		Create: []string{"ALTER TABLE public.held ADD CONSTRAINT c CHECK (id > 0)"}})
	start := time.Now()
	results, err = s.CarryObjects(ctx, schema.PostData, objs)
	if err != nil {
		t.Fatal(err)
	}
	want = []sink.ObjectState{sink.ObjectPresent, sink.ObjectPresent, sink.ObjectPresent, sink.ObjectLeftOut, sink.ObjectCreated, sink.ObjectLeftOut, sink.ObjectLeftOut}
	for i, r := range results {
		if r.State != want[i] {
			t.Errorf("post-data: %s %s: %s (%s), want %s", r.Kind, r.Name, r.State, r.Reason, want[i])
		}
	}
	if r := results[6]; !strings.Contains(r.Reason, "a prepared transaction holds its table on the target") {
		t.Errorf("post-data: the check on the held table: %q", r.Reason)
	}
	t.Logf("post-data took %v", time.Since(start))
}
