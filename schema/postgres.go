package schema

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// ErrVolatileDefault is wrapped by AlterTable when a column added on the source
// has a default the target cannot reproduce.
var ErrVolatileDefault = errors.New("default cannot be reproduced on the target")

// ErrColumnListChanged is wrapped by AlterTable when a column the source table
// still has is no longer sent: the publication's column list (PostgreSQL 15+)
// left it out. Dropping it on the target would drop its values.
var ErrColumnListChanged = errors.New("the publication's column list changed")

// columnListChange finds columns that exist on the source in both versions
// (the same attribute number) but are no longer sent: the catalog lists a
// column the message leaves out as a GeneratedColumn without expression. (The
// other way round cannot be told from a column added on the source while
// pgrelay lagged, whose facts were read before its Relation message came.)
func columnListChange(prev, t *Table) error {
	if t.Recopy {
		return nil
	}
	var gone []string
	for i := range prev.Columns {
		c := &prev.Columns[i]
		if c.Attnum <= 0 {
			continue
		}
		for _, g := range t.Generated {
			if g.Name == c.Name && g.Expr == "" && g.Attnum == c.Attnum {
				gone = append(gone, c.Name)
			}
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return fmt.Errorf("schema: %s: %w: it no longer publishes %s, which the source table still has; pgrelay follows columns dropped from a table, not left out of the column list: copy the tables again (PGRELAY_SNAPSHOT=always)",
		t.QualifiedName(), ErrColumnListChanged, strings.Join(gone, ", "))
}

// InferRenamed gives each column of t that the source catalog did not know
// by its name (Attnum 0) the attribute number of prev's column at the same
// place, when the message and prev have the same columns in the same places
// otherwise, that column of prev is not in t by name, and the catalog still
// has it (in t.Generated, without an expression, under that number): the
// column was renamed, then renamed again (or back) before pgrelay read the
// catalog. Without it, the column the catalog still has would read as left
// out of the publication's column list (columnListChange). prev is what the
// target table was built to. A version from a transaction's own uncommitted
// DDL (Uncommitted) is left alone: there the column may be new. It changes t
// in place and reports whether it did.
func InferRenamed(prev, t *Table) bool {
	if prev == nil || t == nil || t.Uncommitted || len(prev.Columns) != len(t.Columns) {
		return false
	}
	type claim struct{ col, gen int }
	var claims []claim
	for i := range t.Columns {
		c, p := &t.Columns[i], &prev.Columns[i]
		if c.Attnum != 0 {
			if c.Attnum != p.Attnum {
				return false
			}
			continue
		}
		if p.Attnum <= 0 || t.Column(p.Name) != nil {
			return false
		}
		gen := -1
		for k, g := range t.Generated {
			if g.Attnum == p.Attnum && g.Expr == "" && g.Name == p.Name {
				gen = k
			}
		}
		if gen < 0 {
			return false
		}
		claims = append(claims, claim{i, gen})
	}
	if len(claims) == 0 {
		return false
	}
	drop := make(map[int]bool, len(claims))
	for _, cl := range claims {
		t.Columns[cl.col].Attnum = t.Generated[cl.gen].Attnum
		drop[cl.gen] = true
	}
	kept := make([]GeneratedColumn, 0, len(t.Generated))
	for k, g := range t.Generated {
		if !drop[k] {
			kept = append(kept, g)
		}
	}
	t.Generated = kept
	return true
}

// PostgresDialect is the DDL of PostgreSQL targets. Tables land in the schema of
// the same name; column types are the source's exactly (format_type), with the
// enum, domain, composite and range types they need created first. All of the
// dialect's SQL is in this file.
type PostgresDialect struct{}

// Postgres is the PostgreSQL dialect.
var Postgres Dialect = PostgresDialect{}

var _ Dialect = PostgresDialect{}

// Name implements Dialect.
func (PostgresDialect) Name() string { return "postgres" }

// QuoteIdent implements Dialect: double quotes, embedded ones doubled.
func (PostgresDialect) QuoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// TargetTable implements Dialect: the same schema and name.
func (PostgresDialect) TargetTable(t *Table) (schema, name string) { return t.Schema, t.Name }

// CreateSchema implements Dialect.
func (d PostgresDialect) CreateSchema(schema string) string {
	return "CREATE SCHEMA IF NOT EXISTS " + d.QuoteIdent(schema)
}

func (d PostgresDialect) qualified(schema, name string) string {
	return pgx.Identifier{schema, name}.Sanitize()
}

func (d PostgresDialect) tableName(t *Table) string {
	return d.qualified(d.TargetTable(t))
}

// CreateTypes implements Dialect. Each type is one DO block that creates it only
// when no type of that name exists, so the statements can run on every Relation
// message without the sink checking anything. For an enum that exists the block
// adds the labels the source has and the target lacks (labels added on the source
// after the type was created here), after the label that precedes them on the
// source; labels the source renamed are renamed first (RenameEnumLabels, which
// needs the target's labels and so is not part of these blocks). Arrays come with their element types; base types of extensions are not
// created (the target needs the extension); an existing domain or composite is
// not altered. The schemas the types live in are created first.
func (d PostgresDialect) CreateTypes(t *Table) []string {
	var stmts []string
	seenSchema := map[string]bool{}
	for _, typ := range t.Types {
		if creatable(typ) && !seenSchema[typ.Namespace] {
			seenSchema[typ.Namespace] = true
			stmts = append(stmts, d.CreateSchema(typ.Namespace))
		}
	}
	for _, typ := range t.Types {
		if !creatable(typ) || typ.RowType {
			continue
		}
		name := d.qualified(typ.Namespace, typ.Name)
		var create, orElse string
		switch typ.Category {
		case CategoryEnum:
			labels := make([]string, len(typ.EnumLabels))
			for i, l := range typ.EnumLabels {
				labels[i] = pgquote.Literal(l)
			}
			create = "CREATE TYPE " + name + " AS ENUM (" + strings.Join(labels, ", ") + ");"
			orElse = `		FOREACH label IN ARRAY ARRAY[` + strings.Join(labels, ", ") + `]::pg_catalog.text[] LOOP
			IF NOT EXISTS (SELECT FROM pg_catalog.pg_enum WHERE enumtypid = ` + pgquote.Literal(name) + `::pg_catalog.regtype AND enumlabel = label) THEN
				IF prev IS NULL THEN
					-- First in the source's order: before the target's first label.
					SELECT enumlabel INTO first FROM pg_catalog.pg_enum WHERE enumtypid = ` + pgquote.Literal(name) + `::pg_catalog.regtype ORDER BY enumsortorder LIMIT 1;
					IF first IS NULL THEN
						EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L', ` + pgquote.Literal(name) + `, label);
					ELSE
						EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L BEFORE %L', ` + pgquote.Literal(name) + `, label, first);
					END IF;
				ELSE
					EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L AFTER %L', ` + pgquote.Literal(name) + `, label, prev);
				END IF;
			END IF;
			prev := label;
		END LOOP;
`
		case CategoryDomain:
			var b strings.Builder
			b.WriteString("CREATE DOMAIN " + name + " AS " + typ.BaseName)
			if typ.DomainCollation != "" {
				b.WriteString(" COLLATE " + typ.DomainCollation)
			}
			if typ.DomainDefault != "" {
				b.WriteString(" DEFAULT " + string(typ.DomainDefault))
			}
			if typ.DomainNotNull {
				b.WriteString(" NOT NULL")
			}
			for _, c := range typ.DomainChecks {
				b.WriteString(" " + string(c))
			}
			b.WriteString(";")
			create = b.String()
			// An existing domain takes the source's CHECK constraints, matched
			// by name and definition: those it lacks are added (NOT VALID: its
			// rows come from the source), others are dropped.
			checks := make([]string, len(typ.DomainChecks))
			for i, c := range typ.DomainChecks {
				checks[i] = pgquote.Literal(string(c))
			}
			list := "ARRAY[" + strings.Join(checks, ", ") + "]::pg_catalog.text[]"
			def := `'CONSTRAINT "' || pg_catalog.replace(c.conname::pg_catalog.text, '"', '""') || '" ' || pg_catalog.regexp_replace(pg_catalog.pg_get_constraintdef(c.oid), ' NOT VALID$', '')`
			orElse = `		FOR r IN SELECT c.conname, ` + def + ` AS def
			FROM pg_catalog.pg_constraint c WHERE c.contypid = ` + pgquote.Literal(name) + `::pg_catalog.regtype AND c.contype = 'c' LOOP
			IF NOT (r.def = ANY (` + list + `)) THEN
				EXECUTE pg_catalog.format('ALTER DOMAIN %s DROP CONSTRAINT %I', ` + pgquote.Literal(name) + `, r.conname);
			END IF;
		END LOOP;
		FOREACH label IN ARRAY ` + list + ` LOOP
			IF NOT EXISTS (SELECT FROM pg_catalog.pg_constraint c WHERE c.contypid = ` + pgquote.Literal(name) + `::pg_catalog.regtype AND c.contype = 'c'
				AND ` + def + ` = label) THEN
				EXECUTE pg_catalog.format('ALTER DOMAIN %s ADD %s NOT VALID', ` + pgquote.Literal(name) + `, label);
			END IF;
		END LOOP;
`
		case CategoryComposite:
			attrs := d.compositeAttrs(typ)
			names := make([]string, len(typ.Attributes))
			for i, a := range typ.Attributes {
				names[i] = pgquote.Literal(a.Name)
			}
			create = "CREATE TYPE " + name + " AS (" + strings.Join(attrs, ", ") + ");"
			// An existing composite takes the source's attributes: ADD and
			// DROP ATTRIBUTE (a changed attribute type is not followed:
			// PostgreSQL refuses it while a column uses the type).
			var add strings.Builder
			for i := range typ.Attributes {
				add.WriteString(`		IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON a.attrelid = t.typrelid
			WHERE t.oid = ` + pgquote.Literal(name) + `::pg_catalog.regtype AND a.attname = ` + names[i] + ` AND a.attnum > 0 AND NOT a.attisdropped) THEN
			EXECUTE pg_catalog.format('ALTER TYPE %s ADD ATTRIBUTE %s', ` + pgquote.Literal(name) + `, ` + pgquote.Literal(attrs[i]) + `);
		END IF;
`)
			}
			orElse = `		FOR r IN SELECT a.attname::pg_catalog.text AS attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON a.attrelid = t.typrelid
			WHERE t.oid = ` + pgquote.Literal(name) + `::pg_catalog.regtype AND a.attnum > 0 AND NOT a.attisdropped
			AND a.attname::pg_catalog.text <> ALL (ARRAY[` + strings.Join(names, ", ") + `]::pg_catalog.text[]) LOOP
			EXECUTE pg_catalog.format('ALTER TYPE %s DROP ATTRIBUTE %I', ` + pgquote.Literal(name) + `, r.attname);
		END LOOP;
` + add.String()
		case CategoryRange:
			create = "CREATE TYPE " + name + " AS RANGE (SUBTYPE = " + typ.BaseName + ");"
		}
		var b strings.Builder
		if orElse != "" {
			b.WriteString("DECLARE\n\tlabel pg_catalog.text;\n\tprev pg_catalog.text;\n\tfirst pg_catalog.text;\n\tr record;\n")
		}
		b.WriteString("BEGIN\n\tIF " + noSuchType(typ) + " THEN\n\t\t")
		b.WriteString(create + "\n")
		if orElse != "" {
			b.WriteString("\tELSE\n" + orElse)
		}
		b.WriteString("\tEND IF;\nEND")
		stmts = append(stmts, doBlock(b.String()))
	}
	return stmts
}

// creatable reports whether CreateTypes creates typ.
func creatable(typ *Type) bool {
	if typ == nil || !typ.UserDefined() {
		return false
	}
	switch typ.Category {
	case CategoryEnum, CategoryDomain, CategoryComposite, CategoryRange:
		return true
	}
	return false
}

// doBlock wraps body in DO with a dollar quote tag the body does not contain.
func doBlock(body string) string {
	tag := "$pgrelay$"
	for i := 1; strings.Contains(body, tag); i++ {
		tag = fmt.Sprintf("$pgrelay%d$", i)
	}
	return "DO " + tag + "\n" + body + "\n" + tag
}

// targetDefault is the default the target column carries, for the target's
// own inserts after a cutover (replicated rows always carry their values): the
// source's, unless it calls nextval() (pgrelay migrate sets those up with their
// sequences) or something user-defined the target may not have, or the
// target cannot create it (OmitDefault).
func targetDefault(c *Column) string {
	if c.VolatileDefault && !c.PortableDefault || c.OmitDefault {
		return ""
	}
	return string(c.Default)
}

// Literal is v as a PostgreSQL literal of its type: NULL, or the text form
// quoted and cast ('1'::integer).
func (d PostgresDialect) Literal(v *Value) string {
	if v == nil || v.Null {
		return "NULL"
	}
	return pgquote.Literal(v.Text) + "::" + v.TypeName
}

// TargetDefault is the default a PostgreSQL target column gets for c, ""
// for none.
func TargetDefault(c *Column) string { return targetDefault(c) }

func (d PostgresDialect) checkColumn(t *Table, c *Column) error {
	if c.Name == "" {
		return fmt.Errorf("schema: table %s has a column without a name", t.QualifiedName())
	}
	if c.TypeName == "" {
		return fmt.Errorf("schema: table %s column %q: no type name (type oid %d); the catalog must fill TypeName",
			t.QualifiedName(), c.Name, c.TypeOID)
	}
	return nil
}

// generatedDef is a stored generated column's definition.
func (d PostgresDialect) generatedDef(g *GeneratedColumn) string {
	return d.QuoteIdent(g.Name) + " " + g.TypeName + " GENERATED ALWAYS AS (" + string(g.Expr) + ") STORED"
}

// columnDef is a column's definition in CREATE TABLE and ADD COLUMN.
// collate is c's COLLATE clause, "" when it has no collation of its own (a
// TYPE change without one gives the column its type's).
func collate(c *Column) string {
	if c.Collation == "" {
		return ""
	}
	return " COLLATE " + c.Collation
}

func (d PostgresDialect) columnDef(c *Column) string {
	def := d.QuoteIdent(c.Name) + " " + c.TypeName
	if c.Collation != "" {
		def += " COLLATE " + c.Collation
	}
	if dflt := targetDefault(c); dflt != "" {
		def += " DEFAULT " + dflt
	}
	if c.NotNull {
		def += " NOT NULL"
	}
	return def
}

// primaryKey lists the quoted primary key columns, "" when there is none: only
// REPLICA IDENTITY DEFAULT and INDEX have a key; NOTHING and FULL have none.
func (d PostgresDialect) primaryKey(t *Table) string {
	var cols []string
	for _, name := range t.TargetKey() {
		cols = append(cols, d.QuoteIdent(name))
	}
	return strings.Join(cols, ", ")
}

// CreateTable implements Dialect. Defaults are those of targetDefault: the
// target's rows always get their values from the source, a default serves the
// target's own inserts.
func (d PostgresDialect) CreateTable(t *Table) ([]string, error) {
	if t == nil || t.Name == "" {
		return nil, errors.New("schema: create table: no table name")
	}
	var lines []string
	// Generated columns go where the source has them, by attribute number.
	gen := t.Generated
	for i := range t.Columns {
		c := &t.Columns[i]
		if err := d.checkColumn(t, c); err != nil {
			return nil, err
		}
		for c.Attnum > 0 && len(gen) > 0 && gen[0].Attnum < c.Attnum {
			if gen[0].Expr != "" {
				lines = append(lines, "\t"+d.generatedDef(&gen[0]))
			}
			gen = gen[1:]
		}
		lines = append(lines, "\t"+d.columnDef(c))
	}
	for i := range gen {
		if gen[i].Expr != "" {
			lines = append(lines, "\t"+d.generatedDef(&gen[i]))
		}
	}
	if pk := d.primaryKey(t); pk != "" {
		lines = append(lines, "\tPRIMARY KEY ("+pk+")")
	}
	body := "()"
	if len(lines) > 0 {
		body = "(\n" + strings.Join(lines, ",\n") + "\n)"
	}
	return append(d.rowTypes(t), "CREATE TABLE IF NOT EXISTS "+d.tableName(t)+" "+body), nil
}

// rowTypes creates the other tables' row types t's columns use, when no type
// of that name exists, as composite types. They are not made with
// CreateTypes, which commits types first in a session of their own: that
// session would wait for the apply transaction that creates the table of the
// same name, which waits for it. Here they join the table's own DDL, which
// sees such a table, and the existing row type is left alone.
func (d PostgresDialect) rowTypes(t *Table) []string {
	var stmts []string
	for _, typ := range t.Types {
		if !creatable(typ) || !typ.RowType || typ.Namespace == t.Schema && typ.Name == t.Name {
			continue
		}
		stmts = append(stmts, doBlock("BEGIN\n\tIF "+noSuchType(typ)+" THEN\n\t\tCREATE TYPE "+d.qualified(typ.Namespace, typ.Name)+
			" AS ("+strings.Join(d.compositeAttrs(typ), ", ")+");\n\tEND IF;\nEND"))
	}
	return stmts
}

// compositeAttrs are a composite type's attribute definitions ("name" type).
func (d PostgresDialect) compositeAttrs(typ *Type) []string {
	attrs := make([]string, len(typ.Attributes))
	for i, a := range typ.Attributes {
		attrs[i] = d.QuoteIdent(a.Name) + " " + a.TypeName
	}
	return attrs
}

// noSuchType is the PL/pgSQL condition that no type of typ's schema and name
// exists on the target.
func noSuchType(typ *Type) string {
	return "NOT EXISTS (SELECT FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = " +
		pgquote.Literal(typ.Namespace) + " AND t.typname = " + pgquote.Literal(typ.Name) + ")"
}

// MoveTable implements Dialect: SET SCHEMA first, then RENAME.
func (d PostgresDialect) MoveTable(fromSchema, fromName, toSchema, toName string) []string {
	var stmts []string
	if fromSchema != toSchema {
		stmts = append(stmts, d.CreateSchema(toSchema),
			"ALTER TABLE "+d.qualified(fromSchema, fromName)+" SET SCHEMA "+d.QuoteIdent(toSchema))
	}
	if fromName != toName {
		stmts = append(stmts, "ALTER TABLE "+d.qualified(toSchema, fromName)+" RENAME TO "+d.QuoteIdent(toName))
	}
	return stmts
}

// AlterTable implements Dialect. Statements come in this order: move and rename
// the table, drop the primary key when the key changes, drop columns, rename
// columns, add columns, change types, defaults and NOT NULL, add the new primary
// key.
//
// pgoutput sends no attribute numbers, so a renamed column looks like one column
// dropped and another added. The catalog reads attribute numbers from the source
// (Column.Attnum): two versions of a column with the same attribute number are
// the same column, and a new name means a rename. Without attribute numbers
// (Attnum 0) columns are matched by name and a rename becomes DROP + ADD, losing
// the column's values on the target.
//
// An added column gets the source's default, which existing source rows hold
// without any change being streamed for them. A default that is not immutable
// cannot be reproduced, and AlterTable fails with ErrVolatileDefault naming the
// table and column. An existing column whose default changes to a volatile one
// just drops its target default: existing rows keep their values either way.
func (d PostgresDialect) AlterTable(prev, t *Table) ([]string, error) {
	return d.alterTable(prev, t, nil)
}

// AlterPartition is AlterTable for a table attached on the target as a
// partition of root (the top of its partition tree). PostgreSQL refuses to
// add, drop, rename or retype a partition's column, or drop its NOT NULL:
// the column is its partitioned table's. Those changes go to root, which
// makes them on every partition, as the source's did; the table's own move,
// primary key and the defaults of its other columns stay on it.
// FollowPartitionChange tells what the other partitions became.
func (d PostgresDialect) AlterPartition(prev, t *Table, root QualifiedName) ([]string, error) {
	return d.alterTable(prev, t, &root)
}

func (d PostgresDialect) alterTable(prev, t *Table, root *QualifiedName) ([]string, error) {
	if prev == nil || t == nil {
		return nil, errors.New("schema: alter table: both the previous and the new version are needed (use CreateTable for a new table)")
	}
	for i := range t.Columns {
		if err := d.checkColumn(t, &t.Columns[i]); err != nil {
			return nil, err
		}
	}
	if err := columnListChange(prev, t); err != nil {
		return nil, err
	}
	var stmts []string
	prevSchema, prevName := d.TargetTable(prev)
	newSchema, newName := d.TargetTable(t)
	stmts = append(stmts, d.MoveTable(prevSchema, prevName, newSchema, newName)...)
	stmts = append(stmts, d.rowTypes(t)...)
	table := d.qualified(newSchema, newName)
	// Column changes go to columns, the table or its partitioned table;
	// what is the table's own to own.
	columns := table
	if root != nil {
		columns = d.qualified(root.Schema, root.Name)
	}
	alter := func(action string) { stmts = append(stmts, "ALTER TABLE "+columns+" "+action) }
	own := func(action string) { stmts = append(stmts, "ALTER TABLE "+table+" "+action) }

	prevKey, newKey := d.primaryKey(prev), d.primaryKey(t)
	// A partition's primary key that is its partitioned table's stays, as
	// on the source (where a partition's replica identity is its own).
	inherited := ""
	if root != nil {
		inherited = " AND coninhcount = 0"
	}
	if prevKey != newKey && prevKey != "" {
		stmts = append(stmts, doBlock(`DECLARE
	pk pg_catalog.name;
BEGIN
	SELECT conname INTO pk FROM pg_catalog.pg_constraint WHERE conrelid = `+pgquote.Literal(table)+`::pg_catalog.regclass AND contype = 'p'`+inherited+`;
	IF pk IS NOT NULL THEN
		EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', `+pgquote.Literal(table)+`, pk);
	END IF;
END`))
	}

	matched := matchColumns(prev, t)
	for i := range prev.Columns {
		if _, ok := matched.newOf[i]; !ok {
			alter("DROP COLUMN IF EXISTS " + d.QuoteIdent(prev.Columns[i].Name))
		}
	}
	stmts = append(stmts, d.renames(columns, prev, t, matched)...)
	for j := range t.Columns {
		c := &t.Columns[j]
		if _, ok := matched.prevOf[j]; ok {
			continue
		}
		// The catalog's facts are today's, the change being applied may be
		// older: NOT NULL (of a column that is not part of the key) is not
		// added while evolving a table, or an older NULL would stop apply.
		added := *c
		added.NotNull = c.Key
		c = &added
		if c.Fill != nil {
			// Existing rows get what they hold on the source; then the
			// column takes the source's current default, if any.
			lit := d.Literal(c.Fill)
			if v := c.DefaultValue; v != nil && !v.Null && !c.Fill.Null && v.Text == c.Fill.Text && targetDefault(c) != "" {
				// The constant default is the fill value: it fills them.
				lit = targetDefault(c)
			}
			fill := *c
			fill.Default, fill.VolatileDefault, fill.OmitDefault = SourceExpr(lit), false, false
			alter("ADD COLUMN IF NOT EXISTS " + d.columnDef(&fill))
			if dflt := targetDefault(c); dflt == "" {
				alter("ALTER COLUMN " + d.QuoteIdent(c.Name) + " DROP DEFAULT")
			} else if dflt != lit {
				alter("ALTER COLUMN " + d.QuoteIdent(c.Name) + " SET DEFAULT " + dflt)
			}
			continue
		}
		if t.Recopy {
			// The rows are copied anew, with the column: none to fill.
			alter("ADD COLUMN IF NOT EXISTS " + d.columnDef(c))
			continue
		}
		// The default fills the existing rows: they hold its values on the
		// source, so a target that cannot create it fails here, loudly.
		c.OmitDefault = false
		if c.Identity != "" {
			return nil, fmt.Errorf("schema: add column %q to %s: %w: it is an identity column (GENERATED %s AS IDENTITY), and existing source rows hold the values its sequence gave them there, which cannot be known; fix: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew",
				c.Name, t.QualifiedName(), ErrVolatileDefault, c.Identity)
		}
		if c.Default != "" && c.VolatileDefault {
			return nil, fmt.Errorf("schema: add column %q to %s: %w: %s is not immutable, and existing source rows hold the values it gave on the source; pgrelay reads column defaults from the source's current catalog, so it cannot tell whether the rows got values or NULL; fix: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew",
				c.Name, t.QualifiedName(), ErrVolatileDefault, c.Default)
		}
		alter("ADD COLUMN IF NOT EXISTS " + d.columnDef(c))
	}
	for j := range t.Columns {
		i, ok := matched.prevOf[j]
		if !ok {
			continue
		}
		p, c := &prev.Columns[i], &t.Columns[j]
		col := d.QuoteIdent(c.Name)
		prevDefault, newDefault := targetDefault(p), targetDefault(c)
		// A default of its own, unless the column is retyped: its partitions'
		// defaults go with the type (FollowPartitionChange).
		setDefault := own
		if p.TypeName != c.TypeName {
			setDefault = alter
			if prevDefault != "" {
				alter("ALTER COLUMN " + col + " DROP DEFAULT")
				prevDefault = ""
			}
			alter("ALTER COLUMN " + col + " TYPE " + c.TypeName + collate(c) + " USING " + col + "::" + c.TypeName)
		} else if p.Collation != c.Collation {
			clause := collate(c)
			if clause == "" {
				clause = ` COLLATE "default"` // its own collation dropped: the type's
			}
			alter("ALTER COLUMN " + col + " TYPE " + c.TypeName + clause)
		}
		if prevDefault != newDefault {
			if newDefault == "" {
				setDefault("ALTER COLUMN " + col + " DROP DEFAULT")
			} else {
				setDefault("ALTER COLUMN " + col + " SET DEFAULT " + newDefault)
			}
		}
		// Only relaxed: see the added columns above. A key column gets NOT NULL
		// with the primary key.
		if p.NotNull && !c.NotNull {
			alter("ALTER COLUMN " + col + " DROP NOT NULL")
		}
	}
	// Generated columns: dropped, or dropped and added again when their type
	// or expression changed (the target computes them anew), or added.
	prevGen := map[string]GeneratedColumn{}
	for _, g := range prev.Generated {
		prevGen[g.Name] = g
	}
	newGen := map[string]bool{}
	for _, g := range t.Generated {
		newGen[g.Name] = true
	}
	for _, g := range prev.Generated {
		switch {
		case newGen[g.Name]:
		case t.Column(g.Name) != nil:
			// DROP EXPRESSION on the source: an ordinary column now, sent
			// with its values.
			alter("ALTER COLUMN " + d.QuoteIdent(g.Name) + " DROP EXPRESSION IF EXISTS")
		default:
			alter("DROP COLUMN IF EXISTS " + d.QuoteIdent(g.Name))
		}
	}
	for i := range t.Generated {
		g := &t.Generated[i]
		p, had := prevGen[g.Name]
		if g.Expr == "" || (had && p.TypeName == g.TypeName && p.Expr == g.Expr) {
			continue
		}
		if had {
			alter("DROP COLUMN IF EXISTS " + d.QuoteIdent(g.Name))
		}
		alter("ADD COLUMN IF NOT EXISTS " + d.generatedDef(g))
	}
	switch {
	case prevKey == newKey || newKey == "":
	case root != nil:
		stmts = append(stmts, doBlock(`BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_constraint WHERE conrelid = `+pgquote.Literal(table)+`::pg_catalog.regclass AND contype = 'p') THEN
		ALTER TABLE `+table+` ADD PRIMARY KEY (`+newKey+`);
	END IF;
END`))
	default:
		own("ADD PRIMARY KEY (" + newKey + ")")
	}
	return stmts, nil
}

// columnMatch pairs the columns of two versions of a table.
type columnMatch struct {
	newOf  map[int]int // prev column index → new column index
	prevOf map[int]int // new column index → prev column index
}

// matchColumns pairs columns by attribute number when both versions know it,
// else by name.
func matchColumns(prev, t *Table) columnMatch {
	m := columnMatch{newOf: map[int]int{}, prevOf: map[int]int{}}
	pair := func(i, j int) {
		m.newOf[i] = j
		m.prevOf[j] = i
	}
	for j, c := range t.Columns {
		for i, p := range prev.Columns {
			if _, taken := m.newOf[i]; taken {
				continue
			}
			if p.Attnum != 0 && c.Attnum != 0 {
				if p.Attnum == c.Attnum {
					pair(i, j)
					break
				}
			} else if p.Name == c.Name {
				pair(i, j)
				break
			}
		}
	}
	// A column of prev whose attribute number was unknown (its facts were
	// read after a later rename, under which its old name was gone) and that
	// is now unmatched is the same column as an unmatched new column whose
	// number prev's table already had: numbers are never reused, so a column
	// numbered below one prev knows existed then. With as many of each, they
	// pair up in order (a Relation message lists columns by number): the
	// rename keeps its values.
	var maxKnown int16
	known := map[int16]bool{}
	for _, p := range prev.Columns {
		if p.Attnum != 0 {
			known[p.Attnum] = true
			maxKnown = max(maxKnown, p.Attnum)
		}
	}
	var oldPrev, oldNew []int
	for i, p := range prev.Columns {
		if _, ok := m.newOf[i]; !ok && p.Attnum == 0 {
			oldPrev = append(oldPrev, i)
		}
	}
	for j, c := range t.Columns {
		if _, ok := m.prevOf[j]; !ok && c.Attnum != 0 && c.Attnum < maxKnown && !known[c.Attnum] {
			oldNew = append(oldNew, j)
		}
	}
	if len(oldPrev) > 0 && len(oldPrev) == len(oldNew) {
		for k := range oldPrev {
			pair(oldPrev[k], oldNew[k])
		}
	}
	return m
}

// renames renames the matched columns whose name changed. When a new name is
// still held by another column being renamed (a swap), every renamed column
// first moves to a temporary name.
func (d PostgresDialect) renames(table string, prev, t *Table, m columnMatch) []string {
	type rename struct{ from, to string }
	var list []rename
	for j := range t.Columns {
		if i, ok := m.prevOf[j]; ok && prev.Columns[i].Name != t.Columns[j].Name {
			list = append(list, rename{prev.Columns[i].Name, t.Columns[j].Name})
		}
	}
	from := map[string]bool{}
	for _, r := range list {
		from[r.from] = true
	}
	clash := false
	for _, r := range list {
		if from[r.to] {
			clash = true
		}
	}
	var stmts []string
	if clash {
		for k, r := range list {
			tmp := fmt.Sprintf("pgrelay_rename_%d", k)
			stmts = append(stmts, "ALTER TABLE "+table+" RENAME COLUMN "+d.QuoteIdent(r.from)+" TO "+d.QuoteIdent(tmp))
			list[k].from = tmp
		}
	}
	for _, r := range list {
		stmts = append(stmts, "ALTER TABLE "+table+" RENAME COLUMN "+d.QuoteIdent(r.from)+" TO "+d.QuoteIdent(r.to))
	}
	return stmts
}

// AddPrimaryKey is the statement that gives t's target table its primary key
// (the replica identity key), "" when t has none. The snapshot copy loads a
// table without it and adds it afterwards: one sorted index build instead of
// an index insert per row.
func (d PostgresDialect) AddPrimaryKey(t *Table) string {
	key := d.primaryKey(t)
	if key == "" {
		return ""
	}
	sch, name := d.TargetTable(t)
	return "ALTER TABLE " + d.QuoteIdent(sch) + "." + d.QuoteIdent(name) + " ADD PRIMARY KEY (" + key + ")"
}

// EnumLabelsQuery reads the labels of the enum named $1 (quoted and qualified)
// on the target in sort order: no rows when there is no such type.
const EnumLabelsQuery = `SELECT e.enumlabel::pg_catalog.text FROM pg_catalog.pg_enum e
WHERE e.enumtypid = pg_catalog.to_regtype($1) ORDER BY e.enumsortorder`

// EnumName is how the statements for typ name it, the parameter of
// EnumLabelsQuery.
func (d PostgresDialect) EnumName(typ *Type) string { return d.qualified(typ.Namespace, typ.Name) }

// RenameEnumLabels returns the ALTER TYPE … RENAME VALUE statements that give
// the target's enum (labels target, in sort order) the labels the source has
// renamed (see EnumRenames); CreateTypes adds the new ones after them. A label
// renamed to a name another target label still holds (a swap, a chain) goes
// through a temporary name first.
func (d PostgresDialect) RenameEnumLabels(typ *Type, target []string) ([]string, error) {
	renames, err := EnumRenames(target, typ.EnumLabels)
	if err != nil {
		return nil, fmt.Errorf("enum %s: %w", d.EnumName(typ), err)
	}
	if len(renames) == 0 {
		return nil, nil
	}
	name := d.EnumName(typ)
	rename := func(from, to string) string {
		return "ALTER TYPE " + name + " RENAME VALUE " + pgquote.Literal(from) + " TO " + pgquote.Literal(to)
	}
	taken := map[string]bool{}
	for _, l := range target {
		taken[l] = true
	}
	direct := true
	for _, r := range renames {
		if taken[r.To] {
			direct = false
		}
	}
	var stmts []string
	if direct {
		for _, r := range renames {
			stmts = append(stmts, rename(r.From, r.To))
		}
		return stmts, nil
	}
	for _, l := range typ.EnumLabels {
		taken[l] = true
	}
	temps := make([]string, len(renames))
	for i, r := range renames {
		for n := i; ; n++ {
			temps[i] = fmt.Sprintf("pgrelay rename %d", n)
			if !taken[temps[i]] {
				break
			}
		}
		taken[temps[i]] = true
		stmts = append(stmts, rename(r.From, temps[i]))
	}
	for i, r := range renames {
		stmts = append(stmts, rename(temps[i], r.To))
	}
	return stmts, nil
}

// EnumRename is one label to rename on the target.
type EnumRename struct{ From, To string }

// EnumRenames tells which of the target's enum labels the source has renamed
// (ALTER TYPE … RENAME VALUE), from the labels of both in sort order. The
// stream carries no message for it, and the source's facts show only the new
// name. What decides is that PostgreSQL can neither drop an enum label nor
// reorder labels, and a rename keeps a label's place: every target label is
// one of the source's, under its old or its new name, in the same order, and
// the source's others are labels added since.
//
// With as many labels on both sides, none was added: labels correspond by
// position. With more on the source, labels both have (in the same order)
// anchor the rest: between two anchors, target labels the source lacks were
// renamed to the source labels the target lacks, pairwise in order when they
// are as many. Renames and additions between the same two anchors cannot be
// told apart: that is an error saying what to rename by hand. A target with
// more labels than the source did not get them from it (the type was created
// again on the source): nothing is renamed, CreateTypes adds what is missing.
func EnumRenames(target, source []string) ([]EnumRename, error) {
	var renames []EnumRename
	if len(target) > len(source) {
		return nil, nil
	}
	if len(target) == len(source) {
		for i := range target {
			if target[i] != source[i] {
				renames = append(renames, EnumRename{From: target[i], To: source[i]})
			}
		}
		return renames, nil
	}
	ti, si := commonSubsequence(target, source)
	prevT, prevS := 0, 0
	for k := 0; k <= len(ti); k++ {
		endT, endS := len(target), len(source)
		if k < len(ti) {
			endT, endS = ti[k], si[k]
		}
		gapT, gapS := target[prevT:endT], source[prevS:endS]
		switch {
		case len(gapT) == 0:
		case len(gapT) == len(gapS):
			for i := range gapT {
				renames = append(renames, EnumRename{From: gapT[i], To: gapS[i]})
			}
		default:
			where := "at the start"
			if prevT > 0 {
				where = "after " + pgquote.Literal(target[prevT-1])
			}
			return nil, fmt.Errorf("labels renamed and labels added %s on the source cannot be told apart: the target has %s where the source has %s; "+
				"rename the target's labels to the source's names (ALTER TYPE … RENAME VALUE) and start pgrelay again",
				where, quoteList(gapT), quoteList(gapS))
		}
		if k < len(ti) {
			prevT, prevS = ti[k]+1, si[k]+1
		}
	}
	return renames, nil
}

// commonSubsequence returns the positions in a and b of a longest common
// subsequence of the two.
func commonSubsequence(a, b []string) (ai, bi []int) {
	n, m := len(a), len(b)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i] == b[j]:
			ai, bi = append(ai, i), append(bi, j)
			i, j = i+1, j+1
		case l[i+1][j] >= l[i][j+1]:
			i++
		default:
			j++
		}
	}
	return ai, bi
}

func quoteList(labels []string) string {
	q := make([]string, len(labels))
	for i, l := range labels {
		q[i] = pgquote.Literal(l)
	}
	return strings.Join(q, ", ")
}
