package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

// Foreign keys on a MySQL target (schema/mysqlfk.go has their SQL).
//
// A migration makes them at its end, from the source's facts, where both
// tables are replicated here and MySQL can hold them as the tables map
// (carryForeignKey). pgrelay's sessions run with foreign_key_checks = 0, so
// making one reads no row, and apply never trips on one (rows of a source
// transaction come in any order, a parent's delete before its children's);
// the application's sessions check them.
//
// MySQL refuses to drop or retype a column a foreign key holds, and the
// source drops or changes its keys first, which the stream does not carry.
// So before a change of a table (EnsureTable) the foreign keys of the target
// in its way (on a column it drops or redefines, or on a primary key it
// changes, on either side) are recorded in pgrelay_foreign_key_away, in the
// transaction that records the change as pending, then dropped; after the
// change's last step each is made again, as it was but for the table's and
// columns' new names. A stop anywhere between makes them again when the
// change is finished on resume. One that cannot be made again (its column is
// gone, its columns' types no longer match) stays recorded, listed as left
// out in the slot's last migration report (status is not ready), and is
// tried again after the next change of either of its tables (the other side
// of a type change); the next migrate makes what the source has.

// rowsQuerier reads rows: a connection or the pool.
type rowsQuerier interface {
	querier
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// execQuerier reads and runs statements.
type execQuerier interface {
	rowsQuerier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// foreignKeysOn reads the foreign keys of the target table sch.name.
func foreignKeysOn(ctx context.Context, q rowsQuerier, sch, name string) ([]schema.MySQLForeignKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME,
			r.DELETE_RULE, r.UPDATE_RULE
		FROM information_schema.KEY_COLUMN_USAGE k JOIN information_schema.REFERENTIAL_CONSTRAINTS r
			ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME AND r.TABLE_NAME = k.TABLE_NAME
		WHERE k.TABLE_SCHEMA = ? AND k.TABLE_NAME = ? AND r.CONSTRAINT_SCHEMA = ? AND r.TABLE_NAME = ? AND k.REFERENCED_TABLE_NAME IS NOT NULL
		ORDER BY k.CONSTRAINT_NAME, k.ORDINAL_POSITION`, sch, name, sch, name)
	if err != nil {
		return nil, fmt.Errorf("read the foreign keys of %s.%s: %w", sch, name, err)
	}
	defer rows.Close()
	var out []schema.MySQLForeignKey
	for rows.Next() {
		var n, col, refSch, refTable, refCol, del, upd string
		if err := rows.Scan(&n, &col, &refSch, &refTable, &refCol, &del, &upd); err != nil {
			return nil, fmt.Errorf("read the foreign keys of %s.%s: %w", sch, name, err)
		}
		if len(out) == 0 || out[len(out)-1].Name != n {
			out = append(out, schema.MySQLForeignKey{Name: n, Schema: sch, Table: name, RefSchema: refSch, RefTable: refTable, OnDelete: del, OnUpdate: upd})
		}
		k := &out[len(out)-1]
		k.Columns, k.RefColumns = append(k.Columns, col), append(k.RefColumns, refCol)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the foreign keys of %s.%s: %w", sch, name, err)
	}
	return out, nil
}

// foreignKeysAround reads the foreign keys of the target on table sch.name
// and those referencing it from a table of the databases pgrelay writes
// (pgrelay_relation's): MariaDB reads information_schema's keys by opening
// every table of the databases a query does not name.
func foreignKeysAround(ctx context.Context, q rowsQuerier, sch, name string) ([]schema.MySQLForeignKey, error) {
	out, err := foreignKeysOn(ctx, q, sch, name)
	if err != nil {
		return nil, err
	}
	dbs := []string{sch}
	rows, err := q.QueryContext(ctx, "SELECT DISTINCT target_schema FROM pgrelay_relation")
	if err != nil {
		return nil, fmt.Errorf("read the databases pgrelay writes: %w", err)
	}
	for rows.Next() {
		var db string
		if err := rows.Scan(&db); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the databases pgrelay writes: %w", err)
		}
		if !slices.Contains(dbs, db) {
			dbs = append(dbs, db)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	var children [][2]string
	for _, db := range dbs {
		rows, err := q.QueryContext(ctx, `SELECT DISTINCT TABLE_NAME FROM information_schema.KEY_COLUMN_USAGE
			WHERE TABLE_SCHEMA = ? AND CONSTRAINT_SCHEMA = ? AND REFERENCED_TABLE_SCHEMA = ? AND REFERENCED_TABLE_NAME = ? ORDER BY 1`, db, db, sch, name)
		if err != nil {
			return nil, fmt.Errorf("read the foreign keys referencing %s.%s: %w", sch, name, err)
		}
		for rows.Next() {
			c := [2]string{db, ""}
			if err := rows.Scan(&c[1]); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read the foreign keys referencing %s.%s: %w", sch, name, err)
			}
			if c != [2]string{sch, name} {
				children = append(children, c)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	for _, c := range children {
		fks, err := foreignKeysOn(ctx, q, c[0], c[1])
		if err != nil {
			return nil, err
		}
		for _, k := range fks {
			if k.RefSchema == sch && k.RefTable == name {
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// constraintTable names the table of database sch whose foreign key or
// check constraint is named name ("" when there is none): those names are
// the database's.
func constraintTable(ctx context.Context, q querier, sch, name string) (string, error) {
	var table string
	err := q.QueryRowContext(ctx, `SELECT TABLE_NAME FROM information_schema.TABLE_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = ? AND CONSTRAINT_NAME = ? AND CONSTRAINT_TYPE IN ('FOREIGN KEY', 'CHECK') LIMIT 1`, sch, name).Scan(&table)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up constraint %s in database %s: %w", name, sch, err)
	}
	return table, nil
}

// myColumnType is what a foreign key needs to know of a target column.
type myColumnType struct {
	name, dataType, columnType string
	collation                  sql.NullString
}

// columnTypes reads the columns of the target table sch.name, by lower-case
// name (MySQL compares column names case-insensitively); none when the
// table does not exist.
func columnTypes(ctx context.Context, q rowsQuerier, sch, name string) (map[string]myColumnType, error) {
	rows, err := q.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COLLATION_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, sch, name)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s.%s: %w", sch, name, err)
	}
	defer rows.Close()
	out := map[string]myColumnType{}
	for rows.Next() {
		var c myColumnType
		if err := rows.Scan(&c.name, &c.dataType, &c.columnType, &c.collation); err != nil {
			return nil, fmt.Errorf("read the columns of %s.%s: %w", sch, name, err)
		}
		c.dataType, c.columnType = strings.ToLower(c.dataType), strings.ToLower(c.columnType)
		out[strings.ToLower(c.name)] = c
	}
	return out, rows.Err()
}

// myIndex is an index of a target table.
type myIndex struct {
	name    string
	unique  bool
	columns []string // "" for an expression
	prefix  []bool   // a column's prefix only
}

// indexesOf reads the indexes of the target table sch.name.
func indexesOf(ctx context.Context, q rowsQuerier, sch, name string) ([]myIndex, error) {
	rows, err := q.QueryContext(ctx, `SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`, sch, name)
	if err != nil {
		return nil, fmt.Errorf("read the indexes of %s.%s: %w", sch, name, err)
	}
	defer rows.Close()
	var out []myIndex
	for rows.Next() {
		var n string
		var nonUnique int
		var col sql.NullString
		var sub sql.NullInt64
		if err := rows.Scan(&n, &nonUnique, &col, &sub); err != nil {
			return nil, fmt.Errorf("read the indexes of %s.%s: %w", sch, name, err)
		}
		if len(out) == 0 || out[len(out)-1].name != n {
			out = append(out, myIndex{name: n, unique: nonUnique == 0})
		}
		ix := &out[len(out)-1]
		ix.columns, ix.prefix = append(ix.columns, col.String), append(ix.prefix, sub.Valid)
	}
	return out, rows.Err()
}

// leads reports whether ix starts with the whole of columns, in order.
func (ix *myIndex) leads(columns []string) bool {
	if len(ix.columns) < len(columns) {
		return false
	}
	for i, c := range columns {
		if ix.prefix[i] || !strings.EqualFold(ix.columns[i], c) {
			return false
		}
	}
	return true
}

// keyTypesFit says why MySQL cannot key column c to column r ("" when it
// can): InnoDB keys no TEXT, BLOB or JSON column; strings must have one type
// and collation (their lengths may differ), other types one definition.
func keyTypesFit(cTable, rTable string, c, r myColumnType) string {
	for _, x := range []struct {
		table string
		col   myColumnType
	}{{cTable, c}, {rTable, r}} {
		switch x.col.dataType {
		case "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "json":
			return fmt.Sprintf("column %s.%s is %s on MySQL, and MySQL keys no TEXT, BLOB or JSON column (a text column maps to one unless it is in its table's primary key or has a length up to 255)",
				x.table, x.col.name, strings.ToUpper(x.col.columnType))
		}
	}
	fits := c.columnType == r.columnType
	switch c.dataType {
	case "char", "varchar", "binary", "varbinary":
		fits = c.dataType == r.dataType && c.collation == r.collation
	}
	if fits {
		return ""
	}
	return fmt.Sprintf("column %s.%s is %s on MySQL and the column it references, %s.%s, %s: MySQL keys only columns of one type",
		cTable, c.name, strings.ToUpper(c.columnType), rTable, r.name, strings.ToUpper(r.columnType))
}

// madeForeignKey is what became of a foreign key pgrelay tried to make.
type madeForeignKey struct {
	state  sink.ObjectState // created, present, left out or not carried
	reason string
	name   string // its name on the target, when made or present
}

// makeForeignKey makes k on the target unless it has it already (by its
// columns and references, under any name), under the first of names no
// other constraint of its database has. What MySQL cannot hold as the
// tables map is not carried, saying why; what the target refuses is left
// out, with its words. The error is for a target that cannot be used.
func (s *Sink) makeForeignKey(ctx context.Context, q execQuerier, k schema.MySQLForeignKey, names []string) (madeForeignKey, error) {
	child, parent := k.Schema+"."+k.Table, k.RefSchema+"."+k.RefTable
	have, err := foreignKeysOn(ctx, q, k.Schema, k.Table)
	if err != nil {
		return madeForeignKey{}, err
	}
	for _, h := range have {
		if h.Same(&k) {
			return madeForeignKey{state: sink.ObjectPresent, name: h.Name}, nil
		}
	}
	cols, err := columnTypes(ctx, q, k.Schema, k.Table)
	if err != nil {
		return madeForeignKey{}, err
	}
	refCols, err := columnTypes(ctx, q, k.RefSchema, k.RefTable)
	if err != nil {
		return madeForeignKey{}, err
	}
	for _, t := range []struct {
		name string
		cols map[string]myColumnType
	}{{child, cols}, {parent, refCols}} {
		if len(t.cols) == 0 {
			return madeForeignKey{state: sink.ObjectLeftOut, reason: "the target has no table " + t.name}, nil
		}
	}
	for i := range k.Columns {
		c, ok := cols[strings.ToLower(k.Columns[i])]
		if !ok {
			return madeForeignKey{state: sink.ObjectNotCarried, reason: "the target table " + child + " has no column " + k.Columns[i]}, nil
		}
		r, ok := refCols[strings.ToLower(k.RefColumns[i])]
		if !ok {
			return madeForeignKey{state: sink.ObjectNotCarried, reason: "the target table " + parent + " has no column " + k.RefColumns[i]}, nil
		}
		if why := keyTypesFit(child, parent, c, r); why != "" {
			return madeForeignKey{state: sink.ObjectNotCarried, reason: why}, nil
		}
	}
	refIndexes, err := indexesOf(ctx, q, k.RefSchema, k.RefTable)
	if err != nil {
		return madeForeignKey{}, err
	}
	if !slices.ContainsFunc(refIndexes, func(ix myIndex) bool {
		return ix.unique && len(ix.columns) == len(k.RefColumns) && ix.leads(k.RefColumns)
	}) {
		return madeForeignKey{state: sink.ObjectNotCarried, reason: "MySQL needs the referenced columns (" + strings.Join(k.RefColumns, ", ") +
			") to be a primary key or unique index of " + parent + ", in that order, and the target has none (an index MySQL cannot have is left out, with a log line)"}, nil
	}
	name := ""
	for _, n := range names {
		taken, err := constraintTable(ctx, q, k.Schema, n)
		if err != nil {
			return madeForeignKey{}, err
		}
		if taken == "" {
			name = n
			break
		}
	}
	if name == "" {
		return madeForeignKey{state: sink.ObjectLeftOut, reason: "database " + k.Schema + " has other constraints named " + strings.Join(names, " and ") +
			" (MySQL's constraint names are a database's)"}, nil
	}
	k.Name = name
	indexes, err := indexesOf(ctx, q, k.Schema, k.Table)
	if err != nil {
		return madeForeignKey{}, err
	}
	if !slices.ContainsFunc(indexes, func(ix myIndex) bool { return ix.leads(k.Columns) }) {
		// MySQL needs its columns first in an index, and would make one named
		// after the key; made here, under a name of pgrelay's choosing.
		index := ""
		for _, n := range []string{schema.MySQLIndexName(name), schema.MySQLIndexName(name + "_fk")} {
			if !slices.ContainsFunc(indexes, func(ix myIndex) bool { return strings.EqualFold(ix.name, n) }) {
				index = n
				break
			}
		}
		if index == "" {
			return madeForeignKey{state: sink.ObjectLeftOut, reason: "table " + child + " has other indexes named " + name + " and " + name + "_fk"}, nil
		}
		stmt := s.dialect.ForeignKeyIndex(&k, index)
		if _, err := q.ExecContext(ctx, stmt); err != nil {
			if refused := fkRefused(err); refused != "" {
				return madeForeignKey{state: sink.ObjectLeftOut, reason: "the target refused the index on its columns: " + refused}, nil
			}
			return madeForeignKey{}, fmt.Errorf("%s: %w", sqlHead(stmt), err)
		}
	}
	stmt := s.dialect.AddForeignKey(&k)
	if _, err := q.ExecContext(ctx, stmt); err != nil {
		if refused := fkRefused(err); refused != "" {
			return madeForeignKey{state: sink.ObjectLeftOut, reason: "the target refused it: " + refused}, nil
		}
		return madeForeignKey{}, fmt.Errorf("%s: %w", sqlHead(stmt), err)
	}
	return madeForeignKey{state: sink.ObjectCreated, name: name}, nil
}

// fkRefused is the server's words when it refused a statement for what the
// statement asks (to be reported); "" for an error that is no refusal (a
// lost connection, a lock wait, a cancelled context), which stops the caller.
func fkRefused(err error) string {
	var n uint16
	if n = mysqlNumber(err); n == 0 || retryableNumbers[n] || readOnlyNumbers[n] {
		return ""
	}
	return oneLine(err.Error())
}

// awayForeignKey is a row of pgrelay_foreign_key_away: a foreign key taken
// off the target for a change of a table.
type awayForeignKey struct {
	schema, name, table string // where it was
	key                 schema.MySQLForeignKey
	reason              sql.NullString
}

// readAway reads the slot's rows of pgrelay_foreign_key_away.
func (s *Sink) readAway(ctx context.Context, q rowsQuerier) ([]awayForeignKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT constraint_schema, constraint_name, table_name, definition, reason FROM pgrelay_foreign_key_away
		WHERE slot <=> ? ORDER BY constraint_schema, constraint_name`, s.slotArg())
	if err != nil {
		return nil, fmt.Errorf("read pgrelay_foreign_key_away: %w", err)
	}
	defer rows.Close()
	var out []awayForeignKey
	for rows.Next() {
		var a awayForeignKey
		var def string
		if err := rows.Scan(&a.schema, &a.name, &a.table, &def, &a.reason); err != nil {
			return nil, fmt.Errorf("read pgrelay_foreign_key_away: %w", err)
		}
		if err := json.Unmarshal([]byte(def), &a.key); err != nil {
			return nil, fmt.Errorf("decode foreign key %s.%s of pgrelay_foreign_key_away: %w", a.schema, a.name, err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// inTheWay finds the foreign keys of the target in the way of changes to
// the table now at sch.name, which the change brings to newSch.newName: on
// a column it drops or redefines, on either side, and every one on or
// referencing the table when its primary key changes. Each comes with
// itself as it is (where it is dropped) and as it is made again.
func (s *Sink) inTheWay(ctx context.Context, q rowsQuerier, sch, name, newSch, newName string, changes schema.MySQLColumnChanges) ([]awayForeignKey, error) {
	if !changes.Any() {
		return nil, nil
	}
	touched := map[string]bool{}
	for _, c := range append(slices.Clone(changes.Dropped), changes.Modified...) {
		touched[strings.ToLower(c)] = true
	}
	renamed := map[string]string{}
	for from, to := range changes.Renamed {
		renamed[strings.ToLower(from)] = to
	}
	hits := func(cols []string) bool {
		return slices.ContainsFunc(cols, func(c string) bool { return touched[strings.ToLower(c)] })
	}
	rename := func(cols []string) []string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = c
			if to, ok := renamed[strings.ToLower(c)]; ok {
				out[i] = to
			}
		}
		return out
	}
	fks, err := foreignKeysAround(ctx, q, sch, name)
	if err != nil {
		return nil, err
	}
	var out []awayForeignKey
	for _, k := range fks {
		on := k.Schema == sch && k.Table == name
		refs := k.RefSchema == sch && k.RefTable == name
		if !changes.KeyChanged && !(on && hits(k.Columns)) && !(refs && hits(k.RefColumns)) {
			continue
		}
		after := k
		if on {
			after.Schema, after.Table, after.Columns = newSch, newName, rename(k.Columns)
		}
		if refs {
			after.RefSchema, after.RefTable, after.RefColumns = newSch, newName, rename(k.RefColumns)
		}
		out = append(out, awayForeignKey{schema: k.Schema, name: k.Name, table: k.Table, key: after})
	}
	return out, nil
}

// recordAway records away in tx, where the change they make way for is
// recorded as pending.
func (s *Sink) recordAway(ctx context.Context, tx *sql.Tx, away []awayForeignKey) error {
	for _, a := range away {
		def, err := json.Marshal(a.key)
		if err != nil {
			return fmt.Errorf("encode foreign key %s: %w", a.name, err)
		}
		if _, err := tx.ExecContext(ctx, s.upsert(`INSERT INTO pgrelay_foreign_key_away (constraint_schema, constraint_name, table_name, slot, definition, reason, updated_at)
			VALUES (?, ?, ?, ?, ?, NULL, CURRENT_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE table_name = VALUES(table_name), slot = VALUES(slot),
				definition = VALUES(definition), reason = NULL, updated_at = VALUES(updated_at)`),
			a.schema, a.name, a.table, s.slotArg(), string(def)); err != nil {
			return fmt.Errorf("record foreign key %s.%s out of the way: %w", a.schema, a.name, err)
		}
	}
	return nil
}

// dropAway drops each of away the target still has.
func (s *Sink) dropAway(ctx context.Context, conn *sql.Conn, away []awayForeignKey) error {
	for _, a := range away {
		table, err := constraintTable(ctx, conn, a.schema, a.name)
		if err != nil {
			return err
		}
		if table != a.table {
			continue // dropped before a stop
		}
		k := schema.MySQLForeignKey{Name: a.name, Schema: a.schema, Table: a.table}
		if _, err := conn.ExecContext(ctx, s.dialect.DropForeignKey(&k)); err != nil {
			return fmt.Errorf("%s: %w", sqlHead(s.dialect.DropForeignKey(&k)), err)
		}
	}
	return nil
}

// restoreAway makes again the foreign keys taken off the target that are on
// or reference the table sch.name, which a change (cause, for people) just
// brought up to date, unless the other table's own change is not finished:
// those made (or found) are forgotten, and marked made again in the slot's
// last migration report if it listed them left out; the others stay
// recorded, with why, and are listed left out there.
func (s *Sink) restoreAway(ctx context.Context, conn *sql.Conn, sch, name, cause string) error {
	away, err := s.readAway(ctx, conn)
	if err != nil {
		return err
	}
	for _, a := range away {
		k := a.key
		if !k.References(sch, name) {
			continue
		}
		other := [2]string{k.Schema, k.Table}
		if other == [2]string{sch, name} {
			other = [2]string{k.RefSchema, k.RefTable}
		}
		if other != [2]string{sch, name} {
			pending, err := s.pendingChange(ctx, conn, other[0], other[1])
			if err != nil {
				return fmt.Errorf("look up a change of %s.%s: %w", other[0], other[1], err)
			}
			if pending {
				continue // made again when that change is finished
			}
		}
		made, err := s.makeForeignKey(ctx, conn, k, []string{k.Name})
		if err != nil {
			return fmt.Errorf("make foreign key %s of %s.%s again: %w", k.Name, k.Schema, k.Table, err)
		}
		display := s.dialect.ForeignKeyDisplay(&k)
		ok := made.state == sink.ObjectCreated || made.state == sink.ObjectPresent
		reason := "taken off the target for " + cause + " (MySQL refuses the change under it), it could not be made again: " + made.reason +
			"; it is tried again after the next change of " + k.Schema + "." + k.Table + " or " + k.RefSchema + "." + k.RefTable +
			", and the next pgrelay migrate makes it if the source has it"
		err = func() error {
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
			if ok {
				_, err = tx.ExecContext(ctx, "DELETE FROM pgrelay_foreign_key_away WHERE constraint_schema = ? AND constraint_name = ?", a.schema, a.name)
			} else {
				_, err = tx.ExecContext(ctx, "UPDATE pgrelay_foreign_key_away SET reason = ?, updated_at = CURRENT_TIMESTAMP(6) WHERE constraint_schema = ? AND constraint_name = ?",
					reason, a.schema, a.name)
			}
			if err != nil {
				return err
			}
			if err := s.markReport(ctx, tx, display, ok, reason, cause); err != nil {
				return err
			}
			return tx.Commit()
		}()
		if err != nil {
			return fmt.Errorf("record foreign key %s of %s.%s: %w", k.Name, k.Schema, k.Table, err)
		}
		if ok {
			s.log.Info("a foreign key taken off the target for a change is made again", "foreign_key", display, "change", cause)
		} else {
			s.log.Warn("a foreign key taken off the target for a change could not be made again: listed as left out in status", "foreign_key", display,
				"change", cause, "why", made.reason, "definition", s.dialect.AddForeignKey(&k))
		}
	}
	return nil
}

// markReport marks the foreign key display in the slot's last migration
// report: left out saying reason, or, when it is made again (made), made
// again after cause if the report listed it left out. No report, nothing.
func (s *Sink) markReport(ctx context.Context, tx *sql.Tx, display string, made bool, reason, cause string) error {
	if s.slot == "" {
		return nil
	}
	var doc string
	err := tx.QueryRowContext(ctx, "SELECT objects FROM pgrelay_cutover WHERE slot = ? FOR UPDATE", s.slot).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the migration's report: %w", err)
	}
	var objs []sink.ObjectResult
	if err := json.Unmarshal([]byte(doc), &objs); err != nil {
		return fmt.Errorf("decode the migration's report: %w", err)
	}
	found, changed := false, false
	for i := range objs {
		o := &objs[i]
		if o.Kind != schema.KindForeignKey || o.Name != display {
			continue
		}
		found = true
		switch {
		case !made:
			o.State, o.Reason, o.Incomplete, changed = sink.ObjectLeftOut, reason, false, true
		case o.State == sink.ObjectLeftOut:
			o.State, o.Reason, changed = sink.ObjectCreated, "made again after "+cause, true
		}
	}
	if !found && !made {
		objs = append(objs, sink.ObjectResult{Kind: schema.KindForeignKey, Name: display, State: sink.ObjectLeftOut, Reason: reason})
		changed = true
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(objs)
	if err != nil {
		return fmt.Errorf("encode the migration's report: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE pgrelay_cutover SET objects = ? WHERE slot = ?", string(out), s.slot); err != nil {
		return fmt.Errorf("update the migration's report: %w", err)
	}
	return nil
}

// forgetWaiting forgets the foreign keys that could not be made again after
// a change: a migration makes what the source has now, and reports the rest.
func (s *Sink) forgetWaiting(ctx context.Context) error {
	away, err := s.readAway(ctx, s.db)
	if mysqlNumber(err) == erNoSuchTable {
		return nil
	}
	if err != nil {
		return err
	}
	for _, a := range away {
		if !a.reason.Valid {
			continue // out of the way of a change a stop interrupted
		}
		s.log.Info("a foreign key that could not be made again after a change is forgotten: the migration makes the source's foreign keys",
			"foreign_key", s.dialect.ForeignKeyDisplay(&a.key), "definition", s.dialect.AddForeignKey(&a.key))
		if _, err := s.db.ExecContext(ctx, "DELETE FROM pgrelay_foreign_key_away WHERE constraint_schema = ? AND constraint_name = ? AND reason IS NOT NULL",
			a.schema, a.name); err != nil {
			return fmt.Errorf("forget foreign key %s.%s: %w", a.schema, a.name, err)
		}
	}
	return nil
}

// pendingChange reports whether a change of the target table sch.name was
// interrupted and is not finished yet.
func (s *Sink) pendingChange(ctx context.Context, q querier, sch, name string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM pgrelay_relation WHERE target_schema = ? AND target_name = ? AND pending IS NOT NULL", sch, name).Scan(&n)
	if mysqlNumber(err) == erNoSuchTable {
		return false, nil
	}
	return n > 0, err
}
