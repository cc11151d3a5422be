package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestMySQLIndexFromPostgres(t *testing.T) {
	tb := table("public", "orders", IdentityDefault,
		col("id", "bigint", key), col("customer", "integer"), col("note", "text"), col("code", "character varying(20)"),
		col("Mixed Name", "text"), col("doc", "jsonb"), col("raw", "bytea"), col("at", "timestamp with time zone"))
	d := NewMySQL(mariaDB1011, "shop")
	for _, c := range []struct{ def, want, leftOut string }{
		{`CREATE INDEX orders_customer_idx ON public.orders USING btree (customer)`,
			"CREATE INDEX `orders_customer_idx` ON `shop`.`orders` (`customer`)", ""},
		{`CREATE UNIQUE INDEX orders_code_key ON public.orders USING btree (code, customer DESC NULLS LAST) INCLUDE (note) WITH (fillfactor='90')`,
			"CREATE UNIQUE INDEX `orders_code_key` ON `shop`.`orders` (`code`, `customer` DESC)", ""},
		{`CREATE INDEX "Weird ""idx""" ON ONLY public.orders USING btree ("Mixed Name" COLLATE "C" text_pattern_ops, at)`,
			"CREATE INDEX `Weird \"idx\"` ON `shop`.`orders` (`Mixed Name`(766), `at`)", ""},
		{`CREATE INDEX orders_note_raw ON public.orders USING hash (note, raw)`,
			"CREATE INDEX `orders_note_raw` ON `shop`.`orders` (`note`(384), `raw`(1536))", ""},
		{`CREATE UNIQUE INDEX orders_note_key ON public.orders USING btree (note)`, "", "too long for a unique"},
		{`CREATE INDEX orders_lower ON public.orders USING btree (lower(note))`, "", "expression"},
		{`CREATE INDEX orders_part ON public.orders USING btree (customer) WHERE (customer > 0)`, "", "partial"},
		{`CREATE INDEX orders_doc ON public.orders USING gin (doc)`, "", "gin index"},
		{`CREATE INDEX orders_doc2 ON public.orders USING btree (doc)`, "", "JSON"},
		{`CREATE UNIQUE INDEX orders_nnd ON public.orders USING btree (customer) NULLS NOT DISTINCT`, "", "NULLS NOT DISTINCT"},
		{`CREATE INDEX orders_gone ON public.orders USING btree (dropped)`, "", "not replicated"},
		{`ALTER TABLE x`, "", "not a CREATE INDEX"},
		{`CREATE INDEX ` + strings.Repeat("n", 63) + ` ON public.orders USING btree (customer)`,
			"CREATE INDEX `" + strings.Repeat("n", 63) + "` ON `shop`.`orders` (`customer`)", ""},
	} {
		idx, err := d.IndexFromPostgres(tb, c.def)
		if c.leftOut != "" {
			if !errors.Is(err, ErrIndexLeftOut) || !strings.Contains(err.Error(), c.leftOut) {
				t.Errorf("%s: %v, want left out for %q", c.def, err, c.leftOut)
			}
			continue
		}
		if err != nil || idx.SQL != c.want {
			t.Errorf("%s:\n got %q, %v\nwant %q", c.def, idx.SQL, err, c.want)
		}
	}
}
