package schema

// Dialect generates the target DDL of one target kind from the table model. All
// of a dialect's SQL lives in its own file (postgres.go, mysql.go); every
// identifier it emits is quoted with QuoteIdent.
//
// How a sink uses it, for a Relation message that is new or changed:
//
//	schema, _ := d.TargetTable(t)
//	exec(d.CreateSchema(schema))
//	exec(d.CreateTypes(t)...)         // idempotent; also for a changed table
//	if prev == nil (or the target lacks the table) {
//		exec(d.CreateTable(t))        // CREATE TABLE IF NOT EXISTS
//	} else {
//		exec(d.AlterTable(prev, t))
//	}
//
// The statements of one call are meant to run in order, in one target transaction
// (PostgreSQL DDL is transactional; MySQL commits each statement). Run the
// CreateTypes statements in a transaction of their own, committed before the
// table DDL and the changes: PostgreSQL refuses to use an enum label added by
// ALTER TYPE ... ADD VALUE in the transaction that added it.
//
// After a restart the catalog starts empty, so the first Relation message of a
// table comes with prev == nil although the target may hold an older version;
// a sink that must evolve it then needs the version it last applied (stored, or
// read back from the target).
type Dialect interface {
	// Name is the dialect's name: "postgres", "mysql".
	Name() string
	// QuoteIdent quotes an identifier, doubling embedded quote characters.
	QuoteIdent(s string) string
	// TargetTable says where a source table lands on the target.
	TargetTable(t *Table) (schema, name string)
	// CreateSchema creates a target schema (database on MySQL) when missing.
	CreateSchema(schema string) string
	// CreateTypes creates the user-defined types t needs, dependencies first,
	// each statement idempotent. Dialects without user types return nil.
	CreateTypes(t *Table) []string
	// CreateTable creates the table when missing, with the replica identity key
	// as primary key, NOT NULL and the reproducible defaults; no secondary
	// indexes (the snapshot copy builds those after the data).
	CreateTable(t *Table) ([]string, error)
	// AlterTable evolves the target table from prev to t (two versions of the same
	// relation): rename, added/dropped/renamed columns, type, NOT NULL and default
	// changes, primary key change.
	AlterTable(prev, t *Table) ([]string, error)
	// MoveTable renames the target table fromSchema.fromName to
	// toSchema.toName, creating toSchema when missing; nothing when both are
	// the same.
	MoveTable(fromSchema, fromName, toSchema, toName string) []string
}
