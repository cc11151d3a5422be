package schema

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMySQLForeignKeySQL(t *testing.T) {
	d := NewMySQL(mariaDB1011, "shop")
	fk := &ForeignKey{Name: "orders_customer_fkey", Table: QualifiedName{Schema: "public", Name: "orders"}, Columns: []string{"customer", "Region"},
		RefTable: QualifiedName{Schema: "crm", Name: "customers"}, RefColumns: []string{"id", "region"}, OnDelete: "CASCADE", OnUpdate: "NO ACTION",
		Match: "FULL", Deferrable: true, Validated: true}
	k := d.ForeignKey(fk, "orders_customer_fkey")
	if got, want := d.AddForeignKey(&k), "ALTER TABLE `shop`.`orders` ADD CONSTRAINT `orders_customer_fkey` FOREIGN KEY (`customer`, `Region`) REFERENCES `crm`.`customers` (`id`, `region`) ON DELETE CASCADE ON UPDATE NO ACTION, ALGORITHM=INPLACE"; got != want {
		t.Errorf("AddForeignKey:\n got %s\nwant %s", got, want)
	}
	if got, want := d.DropForeignKey(&k), "ALTER TABLE `shop`.`orders` DROP FOREIGN KEY `orders_customer_fkey`"; got != want {
		t.Errorf("DropForeignKey: %s", got)
	}
	if got, want := d.ForeignKeyIndex(&k, "orders_customer_fkey"), "CREATE INDEX `orders_customer_fkey` ON `shop`.`orders` (`customer`, `Region`)"; got != want {
		t.Errorf("ForeignKeyIndex: %s", got)
	}
	if got, want := d.ForeignKeyDisplay(&k), "orders_customer_fkey on public.orders"; got != want {
		t.Errorf("ForeignKeyDisplay: %s", got)
	}
	if MySQLForeignKeyUnfit(fk) != "" {
		t.Errorf("unfit: %s", MySQLForeignKeyUnfit(fk))
	}
	if n := MySQLForeignKeyNotes(fk); !strings.Contains(n, "DEFERRABLE") || !strings.Contains(n, "MATCH FULL") || strings.Contains(n, "NOT VALID") {
		t.Errorf("notes: %s", n)
	}
	setDefault := *fk
	setDefault.OnUpdate = "SET DEFAULT"
	if why := MySQLForeignKeyUnfit(&setDefault); !strings.Contains(why, "ON UPDATE SET DEFAULT") {
		t.Errorf("SET DEFAULT: %q", why)
	}
	plain := ForeignKey{Name: "p", Columns: []string{"a"}, RefColumns: []string{"b"}, Match: "FULL", Validated: true}
	if n := MySQLForeignKeyNotes(&plain); n != "" {
		t.Errorf("a one-column MATCH FULL key is checked alike: %q", n)
	}
	other := k
	other.Name, other.Columns = "x", []string{"CUSTOMER", "region"}
	if !k.Same(&other) || !k.References("crm", "customers") || !k.References("shop", "orders") || k.References("public", "orders") {
		t.Errorf("Same, References")
	}
}

func TestMySQLForeignKeyNames(t *testing.T) {
	if got := MySQLForeignKeyName("orders", "fk_customer", false); got != "fk_customer" {
		t.Errorf("plain: %s", got)
	}
	if got := MySQLForeignKeyName("orders", "fk_customer", true); got != "orders_fk_customer" {
		t.Errorf("clash: %s", got)
	}
	long := MySQLForeignKeyName(strings.Repeat("t", 60), "fk_customer", true)
	if utf8.RuneCountInString(long) != 64 || long != MySQLForeignKeyName(strings.Repeat("t", 60), "fk_customer", true) ||
		long == MySQLForeignKeyName(strings.Repeat("t", 60), "fk_customes", true) {
		t.Errorf("long: %s", long)
	}
	q := QualifiedName{Schema: "public", Name: "orders"}
	alt := MySQLForeignKeyAltName("fk_customer", q, "fk_customer")
	if !strings.HasPrefix(alt, "fk_customer_") || len(alt) != len("fk_customer_")+8 || alt != MySQLForeignKeyAltName("fk_customer", q, "fk_customer") {
		t.Errorf("alt: %s", alt)
	}
	if a := MySQLForeignKeyAltName(long, q, "fk_customer"); utf8.RuneCountInString(a) != 64 {
		t.Errorf("alt of a long name: %s", a)
	}
}

// ColumnChanges says what AlterSteps drops, redefines and renames.
func TestMySQLColumnChanges(t *testing.T) {
	d := NewMySQL(mariaDB1011, "shop")
	prev := table("public", "child", IdentityDefault, col("id", "integer", key), col("parent_id", "integer"), col("note", "text"),
		col("gone", "integer"), col("old_name", "integer"))
	prev.Columns[1].Attnum, prev.Columns[2].Attnum, prev.Columns[3].Attnum, prev.Columns[4].Attnum = 2, 3, 4, 5
	prev.Columns[0].Attnum = 1
	next := table("public", "child", IdentityDefault, col("id", "integer", key), col("parent_id", "bigint"), col("note", "text"), col("new_name", "integer"))
	next.Columns[0].Attnum, next.Columns[1].Attnum, next.Columns[2].Attnum, next.Columns[3].Attnum = 1, 2, 3, 5
	c, err := d.ColumnChanges(prev, next)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Dropped, []string{"gone"}) || !slices.Equal(c.Modified, []string{"parent_id"}) || c.Renamed["old_name"] != "new_name" || c.KeyChanged || !c.Any() {
		t.Errorf("changes %+v", c)
	}
	// NOT NULL of a column is a MODIFY too; a new key drops the old one.
	keyed := table("public", "child", IdentityDefault, col("id", "integer"), col("parent_id", "integer", key), col("note", "text"),
		col("gone", "integer"), col("old_name", "integer"))
	for i := range keyed.Columns {
		keyed.Columns[i].Attnum = int16(i + 1)
	}
	c, err = d.ColumnChanges(prev, keyed)
	if err != nil {
		t.Fatal(err)
	}
	if !c.KeyChanged || !slices.Contains(c.Modified, "parent_id") || !slices.Contains(c.Modified, "id") || len(c.Dropped) != 0 {
		t.Errorf("key change %+v", c)
	}
	if c, _ := d.ColumnChanges(prev, prev); c.Any() {
		t.Errorf("no change: %+v", c)
	}
}
