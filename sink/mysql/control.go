package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/migrations"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

// What the relay's control plane reads and does on the target around apply:
// the metadata for status, the slot's lock, teardown, the look at the tables
// a copy loads, and the checks before anything is created.

var (
	_ sink.Target      = (*Sink)(nil)
	_ sink.Preflighter = (*Sink)(nil)
)

// HasMetadata reports whether pgrelay's metadata tables exist in the URL's
// database: its first migration has run to the end. MySQL commits each of a
// migration's statements on its own, so a run stopped inside it leaves some
// of the tables; that is no metadata yet (the next run finishes it), not
// metadata whose tables status would miss.
func (s *Sink) HasMetadata(ctx context.Context) (bool, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return false, classify(fmt.Errorf("sink/mysql: look for pgrelay's metadata: %w", err), true)
	}
	defer conn.Close()
	v, err := migrations.MySQLVersion(ctx, conn)
	if err != nil {
		return false, classify(fmt.Errorf("sink/mysql: look for pgrelay's metadata: %w", err), false)
	}
	return v >= 1, nil
}

// MetadataSchema is the URL's database: pgrelay's tables (pgrelay_*) are
// there, with the tables of source schema public. A source schema of the
// database's name would land there too, on top of public's tables.
func (s *Sink) MetadataSchema() string { return s.database }

// KnownRelations lists the source tables pgrelay_relation holds a
// definition of, by the source names the definitions carry.
func (s *Sink) KnownRelations(ctx context.Context) ([]sink.KnownRelation, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT COALESCE(slot, ''), definition, COALESCE(relation_oid, 0) FROM pgrelay_relation")
	if err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: read pgrelay_relation: %w", err), false)
	}
	defer rows.Close()
	var known []sink.KnownRelation
	for rows.Next() {
		var k sink.KnownRelation
		var def string
		if err := rows.Scan(&k.Slot, &def, &k.RelationID); err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: read pgrelay_relation: %w", err), false)
		}
		var t schema.Table
		if err := json.Unmarshal([]byte(def), &t); err != nil {
			return nil, fmt.Errorf("sink/mysql: read pgrelay_relation: a stored definition does not decode: %w", err)
		}
		k.Schema, k.Name = t.Schema, t.Name
		known = append(known, k)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: read pgrelay_relation: %w", err), false)
	}
	return known, nil
}

// lockName is the named lock (GET_LOCK) of slot's replication into this
// database: named locks are the server's, so the database is part of it,
// hashed when the name would pass MySQL's 64 characters.
func (s *Sink) lockName(slot string) string {
	name := "pgrelay:" + s.database + ":" + slot
	if len(name) <= 64 {
		return name
	}
	sum := sha256.Sum256([]byte(s.database + "\x00" + slot))
	return "pgrelay:" + hex.EncodeToString(sum[:20])
}

// lockPoll is how long one GET_LOCK waits before the wait looks at ctx
// again.
const lockPoll = 5 * time.Second

// LockSlot takes the slot's named lock (GET_LOCK) on a connection of its
// own, held until release, Close, or the connection's end: the server
// releases a named lock with the session that held it.
func (s *Sink) LockSlot(ctx context.Context, slot string, waiting func()) (func(context.Context) error, error) {
	s.lockMu.Lock()
	if s.lockConn == nil {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			s.lockMu.Unlock()
			return nil, classify(describeConnectError(s.cfg, err), true)
		}
		s.lockConn = conn
	}
	conn := s.lockConn
	s.lockMu.Unlock()
	name := s.lockName(slot)
	drop := func() {
		s.lockMu.Lock()
		if s.lockConn == conn {
			s.lockConn = nil
		}
		s.lockMu.Unlock()
		discard(conn)
	}
	for wait := 0; ; wait = int(lockPoll / time.Second) {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, wait).Scan(&got); err != nil {
			drop()
			return nil, classify(fmt.Errorf("sink/mysql: lock slot %q (named lock %s): %w", slot, name, err), connLost(err))
		}
		if got.Int64 == 1 {
			break
		}
		if wait == 0 {
			waiting()
		}
		if err := ctx.Err(); err != nil {
			drop()
			return nil, err
		}
	}
	return func(ctx context.Context) error {
		s.lockMu.Lock()
		defer s.lockMu.Unlock()
		if s.lockConn != conn {
			return nil
		}
		s.lockConn = nil
		discard(conn)
		return nil
	}, nil
}

// RollbackSlotPrepared rolls back slot's prepared XA transactions (XA
// RECOVER lists them, by pgrelay's format ID and the slot's GID prefix) and
// forgets their marker rows.
func (s *Sink) RollbackSlotPrepared(ctx context.Context, slot string) ([]string, error) {
	gids, err := s.xaRecover(ctx, s.db)
	if err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: list prepared XA transactions (XA RECOVER; MySQL 8 needs the XA_RECOVER_ADMIN privilege): %w", err), false)
	}
	slices.Sort(gids)
	var done []string
	for _, gid := range gids {
		if !sink.OwnGID(slot, gid) {
			continue
		}
		if err := s.xaFinish(ctx, "ROLLBACK", gid); err != nil {
			if mysqlNumber(err) == 1397 { // XAER_NOTA: finished meanwhile
				continue
			}
			return done, classify(fmt.Errorf("sink/mysql: roll back prepared XA transaction %s of slot %q: %w; roll it back by hand with XA ROLLBACK %s", gid, slot, err, s.xaXid(gid)), false)
		}
		done = append(done, gid)
	}
	if len(done) > 0 {
		if has, err := s.HasMetadata(ctx); err != nil {
			return done, err
		} else if has {
			for _, gid := range done {
				if _, err := s.db.ExecContext(ctx, "DELETE FROM pgrelay_prepared WHERE gid = ?", gid); err != nil {
					return done, classify(fmt.Errorf("sink/mysql: forget prepared XA transaction %s: %w", gid, err), false)
				}
			}
		}
	}
	return done, nil
}

// targetNames maps source table names to their target tables.
func (s *Sink) targetNames(tables []schema.QualifiedName) []schema.QualifiedName {
	out := make([]schema.QualifiedName, len(tables))
	for i, t := range tables {
		out[i] = schema.QualifiedName{Schema: s.dialect.TargetSchema(t.Schema), Name: t.Name}
	}
	return out
}

// existingTables returns which of the target tables exist (base tables).
func (s *Sink) existingTables(ctx context.Context, targets []schema.QualifiedName) (map[schema.QualifiedName]bool, error) {
	have := map[schema.QualifiedName]bool{}
	for chunk := range slices.Chunk(targets, 200) {
		conds := make([]string, len(chunk))
		args := make([]any, 0, 2*len(chunk))
		for i, t := range chunk {
			conds[i] = "(TABLE_SCHEMA = ? AND TABLE_NAME = ?)"
			args = append(args, t.Schema, t.Name)
		}
		rows, err := s.db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' AND ("+strings.Join(conds, " OR ")+")", args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var t schema.QualifiedName
			if err := rows.Scan(&t.Schema, &t.Name); err != nil {
				rows.Close()
				return nil, err
			}
			have[t] = true
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return have, nil
}

// ForeignTables finds, among tables (source names), those whose target
// table exists but pgrelay_relation does not know, and whether each holds
// rows.
func (s *Sink) ForeignTables(ctx context.Context, tables []schema.QualifiedName) ([]sink.ForeignTable, error) {
	targets := s.targetNames(tables)
	have, err := s.existingTables(ctx, targets)
	if err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: look up the target tables: %w", err), false)
	}
	hasMeta, err := s.HasMetadata(ctx)
	if err != nil {
		return nil, err
	}
	var out []sink.ForeignTable
	for i, t := range targets {
		if !have[t] {
			continue
		}
		if hasMeta {
			var n int
			if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pgrelay_relation WHERE target_schema = ? AND target_name = ?", t.Schema, t.Name).Scan(&n); err != nil {
				return nil, classify(fmt.Errorf("sink/mysql: read pgrelay_relation: %w", err), false)
			}
			if n > 0 {
				continue
			}
		}
		f := sink.ForeignTable{Name: tables[i], Quoted: s.dialect.QuoteIdent(t.Schema) + "." + s.dialect.QuoteIdent(t.Name)}
		if err := s.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+f.Quoted+")").Scan(&f.HasRows); err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: look into %s: %w", f.Quoted, err), false)
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b sink.ForeignTable) int { return strings.Compare(a.Quoted, b.Quoted) })
	return out, nil
}

// TableColumns reads the columns of those of tables (source names) whose
// target table exists, in the table's order.
func (s *Sink) TableColumns(ctx context.Context, tables []schema.QualifiedName) (map[schema.QualifiedName][]string, error) {
	targets := s.targetNames(tables)
	out := map[schema.QualifiedName][]string{}
	for i, t := range targets {
		rows, err := s.db.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", t.Schema, t.Name)
		if err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: read the columns of %s.%s: %w", t.Schema, t.Name, err), false)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return nil, classify(fmt.Errorf("sink/mysql: read the columns of %s.%s: %w", t.Schema, t.Name, err), false)
			}
			out[tables[i]] = append(out[tables[i]], c)
		}
		if err := rows.Close(); err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: read the columns of %s.%s: %w", t.Schema, t.Name, err), false)
		}
	}
	return out, nil
}

// probeTable is the table the privilege probes name: statements on it fail
// on the privilege before they look for the table, which does not exist.
const probeTable = "pgrelay_preflight_probe"

// Preflight checks that the server takes writes (readOnlyProblem), then that
// the user may create, alter, index and drop tables in the URL's database
// (pgrelay's metadata and schema public) and in the database of each other
// schema, creating the database when it does not exist; and reports the
// settings that lose committed transactions in a crash. MySQL has no
// function that tells a privilege, and privileges may come through roles:
// each is probed with a statement that fails without changing anything
// (on a table that does not exist, whose refusal names the privilege first).
func (s *Sink) Preflight(ctx context.Context, schemas []string) ([]sink.Problem, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, classify(describeConnectError(s.cfg, err), true)
	}
	defer conn.Close()
	var problems []sink.Problem
	ro, err := s.readOnlyProblem(ctx, conn)
	if err != nil {
		return nil, err
	}
	if ro != nil {
		// Every write fails there: what else it lacks shows once it is writable.
		return append(problems, *ro), nil
	}
	var user string
	if err := conn.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&user); err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: preflight: read the current user: %w", err), false)
	}
	grantee := user
	if u, h, ok := strings.Cut(user, "@"); ok {
		grantee = schema.QuoteString(u) + "@" + schema.QuoteString(h)
	}
	dbs := []string{s.database}
	for _, sch := range schemas {
		if t := s.dialect.TargetSchema(sch); !slices.Contains(dbs, t) {
			dbs = append(dbs, t)
		}
	}
	slices.Sort(dbs[1:])
	for _, db := range dbs {
		exists, may, err := s.mayCreateIn(ctx, conn, db)
		if err != nil {
			return nil, err
		}
		if may {
			continue
		}
		p := sink.Problem{Kind: sink.ProblemCreateTables, Object: s.dialect.QuoteIdent(db),
			Fix: "GRANT ALL ON " + s.dialect.QuoteIdent(db) + ".* TO " + grantee}
		if !exists {
			p.Kind = sink.ProblemCreateSchema
		}
		problems = append(problems, p)
	}
	settings, err := s.durabilityProblems(ctx, conn)
	if err != nil {
		return nil, err
	}
	return append(problems, settings...), nil
}

// mayCreateIn reports whether database db exists and whether the user may
// create (and then alter, index and drop) tables there; for a database that
// does not exist, whether the user may create it and its tables.
func (s *Sink) mayCreateIn(ctx context.Context, conn *sql.Conn, db string) (exists, may bool, err error) {
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", db).Scan(&n); err != nil {
		return false, false, classify(fmt.Errorf("sink/mysql: preflight: look up database %s: %w", db, err), false)
	}
	exists = n > 0
	probe := s.dialect.QuoteIdent(db) + "." + s.dialect.QuoteIdent(probeTable)
	absent := s.dialect.QuoteIdent(db) + "." + s.dialect.QuoteIdent(probeTable+"_absent")
	if exists {
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?, ?)", db, probeTable, probeTable+"_absent").Scan(&n); err != nil {
			return exists, false, classify(fmt.Errorf("sink/mysql: preflight: look up %s: %w", probe, err), false)
		}
		if n > 0 {
			return exists, true, nil // tables of those names: no probe can be sure to change nothing
		}
	}
	// CREATE … LIKE a table that does not exist checks CREATE first; the
	// others check their privilege before looking for the table.
	probes := []string{"CREATE TABLE " + probe + " LIKE " + absent}
	if exists {
		probes = append(probes, "ALTER TABLE "+probe+" ADD COLUMN pgrelay_probe INT", "CREATE INDEX pgrelay_probe ON "+probe+" (pgrelay_probe)", "DROP TABLE "+probe)
	}
	for _, q := range probes {
		_, err := conn.ExecContext(ctx, q)
		switch mysqlNumber(err) {
		case erAccessDenied, erDBAccessDenied:
			return exists, false, nil
		case erNoSuchTable, erBadTable, erBadDB, 1050: // the privilege is there
		case 0:
			if err != nil {
				return exists, false, classify(fmt.Errorf("sink/mysql: preflight: %s: %w", q, err), connLost(err))
			}
		default:
			return exists, false, classify(fmt.Errorf("sink/mysql: preflight: %s: %w", q, err), false)
		}
	}
	return exists, true, nil
}

// readOnlyProblem returns the problem of a server that takes no writes from
// this user, nil when it takes them: START TRANSACTION READ WRITE is refused
// under read_only (unless the user may write past it) and super_read_only;
// innodb_read_only refuses the writes themselves.
func (s *Sink) readOnlyProblem(ctx context.Context, conn *sql.Conn) (*sink.Problem, error) {
	var roErr error
	if _, err := conn.ExecContext(ctx, "START TRANSACTION READ WRITE"); err != nil {
		if !readOnlyNumbers[mysqlNumber(err)] {
			return nil, classify(fmt.Errorf("sink/mysql: preflight: tell whether the server takes writes: %w", err), connLost(err))
		}
		roErr = err
	} else if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: preflight: %w", err), connLost(err))
	}
	var readOnly, innodbReadOnly sql.NullInt64
	var superReadOnly sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT @@global.read_only, @@innodb_read_only").Scan(&readOnly, &innodbReadOnly); err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: preflight: read read_only: %w", err), false)
	}
	if !s.server.MariaDB {
		if err := conn.QueryRowContext(ctx, "SELECT @@global.super_read_only").Scan(&superReadOnly); err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: preflight: read super_read_only: %w", err), false)
		}
	}
	p := &sink.Problem{Kind: sink.ProblemReadOnly, Object: s.dialect.QuoteIdent(s.database)}
	switch {
	case innodbReadOnly.Int64 == 1:
		p.Fix = "the server runs with innodb_read_only, which only a restart without it undoes; or point PGRELAY_TARGET_URL at a writable server"
	case roErr == nil:
		return nil, nil
	case superReadOnly.Int64 == 1:
		p.Fix = "super_read_only is on (a replica?): point PGRELAY_TARGET_URL at the primary, or SET GLOBAL super_read_only = OFF, read_only = OFF (and in the server's configuration)"
	case readOnly.Int64 == 1 && s.server.MariaDB:
		p.Fix = "read_only is on (a replica?): point PGRELAY_TARGET_URL at the primary, or SET GLOBAL read_only = OFF (and in the server's configuration), or GRANT READ_ONLY ADMIN ON *.* to the user"
	case readOnly.Int64 == 1:
		p.Fix = "read_only is on (a replica?): point PGRELAY_TARGET_URL at the primary, or SET GLOBAL read_only = OFF (and in the server's configuration)"
	default:
		p.Fix = readOnlyCause
	}
	return p, nil
}

// durabilityProblems are the settings with which the server may lose a
// committed transaction in a crash, and pgrelay's position with it
// (invariant 1 holds only as far as the commits are durable): a restart
// would resume from an older position than the source was told, and the
// changes in between are lost.
func (s *Sink) durabilityProblems(ctx context.Context, conn *sql.Conn) ([]sink.Problem, error) {
	var flush, syncBinlog sql.NullInt64
	var logBin sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT @@innodb_flush_log_at_trx_commit, @@log_bin, @@sync_binlog").Scan(&flush, &logBin, &syncBinlog); err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: preflight: read the durability settings: %w", err), false)
	}
	var out []sink.Problem
	if flush.Valid && flush.Int64 != 1 {
		out = append(out, sink.Problem{Kind: sink.ProblemSetting, Object: fmt.Sprintf("innodb_flush_log_at_trx_commit = %d", flush.Int64),
			Fix: "a commit, and pgrelay's position with it, is not flushed to disk, so a crash of the target loses changes the source was told are applied: SET GLOBAL innodb_flush_log_at_trx_commit = 1 (and in the server's configuration)"})
	}
	if (logBin.String == "1" || logBin.String == "ON") && syncBinlog.Valid && syncBinlog.Int64 != 1 {
		out = append(out, sink.Problem{Kind: sink.ProblemSetting, Object: fmt.Sprintf("sync_binlog = %d", syncBinlog.Int64),
			Fix: "with binary logging on, the binary log decides after a crash which transactions committed, and it is not flushed at each commit: SET GLOBAL sync_binlog = 1 (and in the server's configuration)"})
	}
	return out, nil
}
