package postgres

import (
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/schema"
)

// Each object is made again in a block of its own, its failure listed in
// the slot's report; a definition holding the block's quote tag gets
// another tag.
func TestDependentsBlock(t *testing.T) {
	w := &inTheWay{restore: []madeAgain{
		{kind: schema.KindView, name: "public.v", stmts: []string{"CREATE VIEW public.v AS SELECT '$pgrelay$'::text AS x", "COMMENT ON VIEW public.v IS 'it''s'"}},
		{kind: schema.KindForeignKey, name: "fk on public.c", stmts: []string{`ALTER TABLE public.c ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES public.p(id)`}},
	}}
	got := w.block("s1", "public.t")
	want := `DO $pgrelay1$
BEGIN
	BEGIN
		EXECUTE 'CREATE VIEW public.v AS SELECT ''$pgrelay$''::text AS x';
		EXECUTE 'COMMENT ON VIEW public.v IS ''it''''s''';
	EXCEPTION WHEN OTHERS THEN
		UPDATE pgrelay.cutover SET objects = objects || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('kind', 'view', 'name', 'public.v', 'state', 'left out', 'reason', 'the source''s change of public.t needed it out of the way on the target; made again from the target''s definition, it failed: ' || SQLERRM || '; the next pgrelay migrate makes it as the source has it')) WHERE slot = 's1';
	END;
	BEGIN
		EXECUTE 'ALTER TABLE public.c ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES public.p(id)';
	EXCEPTION WHEN OTHERS THEN
		UPDATE pgrelay.cutover SET objects = objects || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('kind', 'foreign key', 'name', 'fk on public.c', 'state', 'left out', 'reason', 'the source''s change of public.t needed it out of the way on the target; made again from the target''s definition, it failed: ' || SQLERRM || '; the next pgrelay migrate makes it as the source has it')) WHERE slot = 's1';
	END;
END
$pgrelay1$`
	if got != want {
		t.Errorf("block:\n%s\nwant\n%s", got, want)
	}
	if noSlot := w.block("", "public.t"); strings.Contains(noSlot, "UPDATE") || !strings.Contains(noSlot, "\t\tNULL;\n") {
		t.Errorf("block without a slot:\n%s", noSlot)
	}
}
