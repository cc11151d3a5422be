package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema"
)

// A target table belongs to one source relation: its OID under the slot that
// replicates it (pgrelay.relation's slot and relation_oid). A name is not an
// identity: tables swap names, and a table dropped or renamed on the source
// leaves its name to the next one created. A Relation message whose name is
// held on the target by another relation's table moves that table out of the
// way, in the same target transaction, before its own table is renamed or
// created there.

// tableName is a target table's schema and name.
type tableName struct{ schema, name string }

func (n tableName) String() string { return pgx.Identifier{n.schema, n.name}.Sanitize() }

// plain is schema.name unquoted, for logs (as Table.QualifiedName).
func (n tableName) plain() string { return n.schema + "." + n.name }

// storedRow is one row of pgrelay.relation.
type storedRow struct {
	at   tableName
	def  *schema.Table
	slot string // "" when NULL
	oid  uint32 // 0 when NULL (stored before migration 3, or cleared by a new seed)
}

// readStoredRow reads the pgrelay.relation row a WHERE clause selects, nil
// when there is none.
func readStoredRow(ctx context.Context, conn *pgx.Conn, where string, args ...any) (*storedRow, error) {
	var r storedRow
	var def []byte
	var oid int64
	err := conn.QueryRow(ctx, `SELECT schema, name, definition, coalesce(slot, ''), coalesce(relation_oid::int8, 0)
		FROM pgrelay.relation WHERE `+where, args...).Scan(&r.at.schema, &r.at.name, &def, &r.slot, &oid)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the stored definition: %w", err)
	}
	r.oid = uint32(oid)
	r.def = new(schema.Table)
	if err := json.Unmarshal(def, r.def); err != nil {
		return nil, fmt.Errorf("decode the stored definition of %s: %w", r.at, err)
	}
	return &r, nil
}

// move renames one target table that stands in another relation's way.
type move struct {
	from, to tableName
	oid      uint32 // the source relation the table was built for, 0 when unknown
	dropped  bool   // that relation no longer exists on the source
}

// maxIdentifier is PostgreSQL's identifier length limit in bytes (NAMEDATALEN-1).
const maxIdentifier = 63

// asideName is a name in at's schema for a table moved out of the way, not
// taken yet: at's name, shortened at a character boundary so that the whole
// fits in 63 bytes, then _pgrelay_<tag>_<oid>, then _2, _3, … when taken.
func asideName(at tableName, tag string, oid uint32, taken func(tableName) bool) tableName {
	for i := 1; ; i++ {
		suffix := "_pgrelay_" + tag + "_" + strconv.FormatUint(uint64(oid), 10)
		if i > 1 {
			suffix += "_" + strconv.Itoa(i)
		}
		base := at.name
		if cut := maxIdentifier - len(suffix); len(base) > cut {
			for cut > 0 && !utf8.RuneStart(base[cut]) {
				cut--
			}
			base = base[:cut]
		}
		if n := (tableName{at.schema, base + suffix}); !taken(n) {
			return n
		}
	}
}

// evict plans how the target table at `at`, built for source relation oid,
// makes way for another relation's table. where is oid's current name on the
// source (nil: dropped there); vacated is the name the other relation's own
// target table leaves in the same transaction (zero when it is created); taken
// says whether a target table of a name exists now.
//
// Renamed on the source, the table goes to its new name, through a temporary
// one when that is the name being vacated (two tables swapping names). When
// the new name is still held by another table, or is `at` itself (the source
// catalog is ahead of the change being applied), the table waits under a
// temporary name: its own next Relation message finds it there by its OID.
// Dropped on the source, it is kept under a name that says so.
func evict(at, vacated tableName, oid uint32, where *tableName, taken func(tableName) bool) (before, after []move) {
	switch {
	case where == nil:
		return []move{{from: at, to: asideName(at, "dropped", oid, taken), oid: oid, dropped: true}}, nil
	case *where == vacated:
		tmp := asideName(at, "moved", oid, taken)
		return []move{{from: at, to: tmp, oid: oid}}, []move{{from: tmp, to: *where, oid: oid}}
	case *where == at || taken(*where):
		return []move{{from: at, to: asideName(at, "moved", oid, taken), oid: oid}}, nil
	default:
		return []move{{from: at, to: *where, oid: oid}}, nil
	}
}

// placement is where a Relation message's table is on the target and what
// must move first.
type placement struct {
	prev          *schema.Table // the version the target table was built to, nil to create it
	before, after []move        // other relations' tables moved out of the way
	defs          map[tableName]*schema.Table
	unknown       bool // the table moved aside has no known source relation
}

// place finds t's target table: the one stored under t's slot and relation OID,
// else, for definitions with no OID (stored before migration 3, or matched by
// name by a new seed), the one stored under t's name; with neither, callerPrev
// (the version apply knows). A table stored under t's name for another
// relation is not t's: it is moved out of the way (evict).
func (s *Sink) place(ctx context.Context, conn *pgx.Conn, t, callerPrev *schema.Table) (placement, error) {
	sch, name := s.dialect.TargetTable(t)
	at := tableName{sch, name}
	var own *storedRow
	var err error
	if t.RelationID != 0 && s.slot != "" {
		own, err = readStoredRow(ctx, conn, "slot = $1 AND relation_oid = $2 ORDER BY updated_at DESC LIMIT 1", s.slot, t.RelationID)
		if err != nil {
			return placement{}, err
		}
	}
	if own != nil && own.at == at {
		return placement{prev: own.def}, nil
	}
	occ, err := readStoredRow(ctx, conn, "schema = $1 AND name = $2", sch, name)
	if err != nil {
		return placement{}, err
	}
	pl := placement{prev: callerPrev}
	if own != nil {
		pl.prev = own.def
	}
	if occ == nil {
		return pl, nil
	}
	if occ.oid != 0 && occ.oid == t.RelationID && occ.slot == s.slot {
		pl.prev = occ.def
		return pl, nil
	}
	other := occ.oid != 0 && occ.slot == s.slot && s.slot != "" && t.RelationID != 0 && occ.oid != t.RelationID
	if own == nil && !other {
		// No identity to tell them apart: the same name is the same table.
		pl.prev = occ.def
		return pl, nil
	}
	var vacated tableName
	if pl.prev != nil {
		ps, pn := s.dialect.TargetTable(pl.prev)
		vacated = tableName{ps, pn}
		if vacated == at {
			pl.prev, vacated = nil, tableName{}
		}
	}
	var queryErr error
	taken := func(n tableName) bool {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", n.String()).Scan(&exists); err != nil && queryErr == nil {
			queryErr = fmt.Errorf("look up %s: %w", n, err)
		}
		return exists || queryErr != nil
	}
	where := &at // unknown: waits under a temporary name
	if !other {
		pl.unknown = true
	} else if s.namer != nil {
		srcSchema, srcName, found, err := s.namer.RelationName(ctx, occ.oid)
		if err != nil {
			return placement{}, fmt.Errorf("look up source relation %d (target table %s): %w", occ.oid, at, err)
		}
		where = nil
		if found {
			ws, wn := s.dialect.TargetTable(&schema.Table{Schema: srcSchema, Name: srcName})
			where = &tableName{ws, wn}
		}
	}
	pl.before, pl.after = evict(at, vacated, occ.oid, where, taken)
	if queryErr != nil {
		return placement{}, queryErr
	}
	pl.defs = map[tableName]*schema.Table{at: occ.def}
	for _, m := range pl.before {
		pl.defs[m.to] = occ.def
	}
	for old := range s.tables {
		if old.RelationID == occ.oid {
			s.forget(old)
		}
	}
	return pl, nil
}

// locations are the target tables moved out of another relation's way, by
// the OID of the relation each was built for. That relation's changes go there
// until its own next Relation message places it: until then its messages may
// still carry the name it lost (PostgreSQL before 16 sends none after its
// schema is renamed), and that name is another table's now.
type locations map[uint32]tableName

// relocation is an entry of locations as it was before a move, to restore
// when the move's transaction rolls back.
type relocation struct {
	oid uint32
	at  tableName
	had bool
}

// target is t, or a copy of it named where its relation's table was moved.
func (l locations) target(t *schema.Table) *schema.Table {
	at, ok := l[t.RelationID]
	if !ok || t.RelationID == 0 || (at == tableName{t.Schema, t.Name}) {
		return t
	}
	c := *t
	c.Schema, c.Name = at.schema, at.name
	return &c
}

// place records where pl's moves left other relations' tables, and that t's
// own table is under t's name; it returns what undoes that.
func (l locations) place(t *schema.Table, pl placement) []relocation {
	var undo []relocation
	set := func(oid uint32, at *tableName) {
		prev, had := l[oid]
		undo = append(undo, relocation{oid: oid, at: prev, had: had})
		if at == nil {
			delete(l, oid)
		} else {
			l[oid] = *at
		}
	}
	if t.RelationID != 0 {
		set(t.RelationID, nil)
	}
	final := pl.destinations()
	for _, m := range pl.before {
		if m.oid != 0 && m.oid != t.RelationID {
			to := final[m.from]
			set(m.oid, &to)
		}
	}
	return undo
}

// undo restores the entries a rolled-back transaction's moves changed.
func (l locations) undo(rs []relocation) {
	for i := len(rs) - 1; i >= 0; i-- {
		if r := rs[i]; r.had {
			l[r.oid] = r.at
		} else {
			delete(l, r.oid)
		}
	}
}

// moveStmt is one statement with text parameters, for a Tx's batch.
type moveStmt struct {
	sql  string
	args [][]byte
}

// moveStatements are the DDL and the pgrelay.relation updates of moves: each
// definition follows its table to its new name; a table whose source relation
// was dropped keeps its definition without the OID, so that no later relation
// is taken for it.
func (s *Sink) moveStatements(moves []move, defs map[tableName]*schema.Table) ([]moveStmt, error) {
	var out []moveStmt
	for _, m := range moves {
		def := *defs[m.from]
		def.Schema, def.Name = m.to.schema, m.to.name
		js, err := json.Marshal(&def)
		if err != nil {
			return nil, fmt.Errorf("encode the definition of %s: %w", m.from, err)
		}
		for _, stmt := range s.dialect.MoveTable(m.from.schema, m.from.name, m.to.schema, m.to.name) {
			out = append(out, moveStmt{sql: stmt})
		}
		out = append(out,
			moveStmt{forgetDefinitionSQL, [][]byte{[]byte(m.to.schema), []byte(m.to.name)}},
			moveStmt{`UPDATE pgrelay.relation SET schema = $3, name = $4, definition = $5,
					relation_oid = CASE WHEN $6 THEN NULL ELSE relation_oid END, updated_at = now()
				WHERE schema = $1 AND name = $2`,
				[][]byte{[]byte(m.from.schema), []byte(m.from.name), []byte(m.to.schema), []byte(m.to.name), js,
					[]byte(strconv.FormatBool(m.dropped))}})
		defs[m.to] = &def
	}
	return out, nil
}

// queueMoves adds stmts to tx's batch as DDL of qname.
func (tx *Tx) queueMoves(qname string, stmts []moveStmt) {
	for _, st := range stmts {
		tx.batch.ExecParams(st.sql, st.args, nil, nil, nil)
		tx.ops = append(tx.ops, op{kind: opDDL, table: qname, detail: qname})
	}
}

// destinations maps each table moved out of the way to where it ends up: a
// table going to the name another leaves goes there through a temporary one.
func (pl placement) destinations() map[tableName]tableName {
	final := map[tableName]tableName{}
	for _, m := range pl.before {
		final[m.from] = m.to
	}
	for _, m := range pl.after {
		for from, to := range final {
			if to == m.from {
				final[from] = m.to
			}
		}
	}
	return final
}

// logMoves reports the tables moved out of t's way, once their transaction's
// statements went through.
func (s *Sink) logMoves(t *schema.Table, pl placement) {
	log := s.log
	if log == nil {
		return
	}
	final := pl.destinations()
	for _, m := range pl.before {
		to := final[m.from]
		switch {
		case m.dropped:
			log.Warn("target table renamed aside: the source table it was built for was dropped, and another source table now has its name; its rows are kept",
				"table", pgquote.Name(m.from.schema, m.from.name), "renamed_to", pgquote.Name(to.schema, to.name), "relation_oid", m.oid, "for", t.DisplayName())
		case pl.unknown:
			log.Warn("target table renamed aside: it is not known to be the source table now named like it (no source relation OID stored for it)",
				"table", pgquote.Name(m.from.schema, m.from.name), "renamed_to", pgquote.Name(to.schema, to.name), "for", t.DisplayName())
		default:
			log.Info("target table renamed after its source table, whose name another source table now has",
				"table", pgquote.Name(m.from.schema, m.from.name), "renamed_to", pgquote.Name(to.schema, to.name), "relation_oid", m.oid, "for", t.DisplayName())
		}
	}
}

// LocateRelations sets where the sink asks for a source relation's current
// name (when another relation claims its target table's name) and where it
// reports tables it renames on its own. Without a namer such a table waits
// under a temporary name for its own next Relation message; without a logger
// nothing is reported.
func (s *Sink) LocateRelations(namer schema.RelationNamer, log *slog.Logger) {
	s.namer, s.log = namer, log
}
