package postgres

import "testing"

func TestIfNotExists(t *testing.T) {
	for in, want := range map[string]string{
		`CREATE INDEX t_a ON public.t USING btree (a)`:                       `CREATE INDEX IF NOT EXISTS t_a ON public.t USING btree (a)`,
		`CREATE UNIQUE INDEX "T u" ON "S"."T" USING btree (b) WHERE (b > 0)`: `CREATE UNIQUE INDEX IF NOT EXISTS "T u" ON "S"."T" USING btree (b) WHERE (b > 0)`,
		`CREATE INDEX IF NOT EXISTS t_a ON public.t USING btree (a)`:         `CREATE INDEX IF NOT EXISTS t_a ON public.t USING btree (a)`,
	} {
		if got := ifNotExists(in); got != want {
			t.Errorf("ifNotExists(%q) = %q, want %q", in, got, want)
		}
	}
}
