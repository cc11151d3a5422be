package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/internal/redact"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/postgres"
	"github.com/pgrelay/pgrelay/source"
)

// statusReport is what `pgrelay status` shows; its JSON form is for machines.
type statusReport struct {
	Slot struct {
		Name   string `json:"name"`
		Exists bool   `json:"exists"`
		Active bool   `json:"active"`
		// BeingCreated: a CREATE_REPLICATION_SLOT is still waiting for the
		// transactions open on the source when it began; nothing is
		// confirmed yet, so confirmed_flush_lsn is left out.
		BeingCreated      bool   `json:"being_created"`
		ActivePID         int    `json:"active_pid,omitempty"`
		WALStatus         string `json:"wal_status,omitempty"`
		TwoPhase          bool   `json:"two_phase"`
		ConfirmedFlushLSN string `json:"confirmed_flush_lsn,omitempty"`
		// Invalidated: the slot can no longer stream (the WAL it needed is gone).
		Invalidated        bool   `json:"invalidated"`
		InvalidationReason string `json:"invalidation_reason,omitempty"`
	} `json:"slot"`
	SourceWALLSN string `json:"source_wal_lsn"`
	// AppliedLSN, LagBytes and LagSeconds are null while nothing is applied
	// (no position stored for the slot, or only an older slot's while a new
	// snapshot copy is unfinished): there is no lag to speak of, and 0 would
	// read as caught up. LagSeconds is also null while no source commit time
	// is stored.
	AppliedLSN *string `json:"applied_lsn"`
	// LastCommitTime is the source time the applied position is current as
	// of: the last applied transaction's commit, or when pgrelay last saw the
	// source idle with everything applied.
	LastCommitTime *time.Time   `json:"last_commit_time,omitempty"`
	LagBytes       *int64       `json:"lag_bytes"`
	LagSeconds     *float64     `json:"lag_seconds"` // since LastCommitTime
	Seeded         bool         `json:"seeded"`
	SnapshotLSN    string       `json:"snapshot_lsn,omitempty"`
	Tables         []tableState `json:"tables"`
	TablesNote     string       `json:"tables_note,omitempty"` // why Tables may be incomplete
}

// tableState is one table's line. State is the snapshot copy's state
// (pending, copying, copied, indexed) for a table the snapshot copied;
// "replicated" for a published table that was not copied and whose changes
// pgrelay has applied since (it is known on the target); "waiting" for a
// published table neither copied nor seen in the stream yet; "unpublished"
// for a table the snapshot copied that the publication no longer publishes.
// Rows and Bytes are the snapshot copy's.
type tableState struct {
	Table  string `json:"table"` // schema.name, unquoted
	Schema string `json:"schema"`
	Name   string `json:"name"`
	State  string `json:"state"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	Copied bool   `json:"copied"`
	oid    uint32 // the source table's OID, 0 when unknown
}

// addStreamedTables adds the published tables the snapshot did not copy: those
// that appeared after it, or all of them with PGRELAY_SNAPSHOT=never. known
// are the tables the target holds a definition of (pgrelay.relation), by
// source OID and, for definitions stored without one, by name.
//
// A table is known by its OID where its rows carry one: renamed on the
// source, it is listed under its current name.
//
// While a copy is unfinished (copying is true: in progress, or interrupted,
// or its slot being created), a published table without a copy state is
// "pending": the copy, when it goes on, copies it. A target table pgrelay
// created for it holds no rows yet.
func addStreamedTables(ctx context.Context, cfg *Config, src *pgx.Conn, known map[tableRef]bool, copying bool, r *statusReport) error {
	published, err := source.ListPublication(ctx, src, cfg.Publication, 5*time.Second)
	if source.IsLockTimeout(err) {
		r.TablesNote = "the published tables not copied by the snapshot could not be listed: " + source.LockedHint
		return nil
	}
	if err != nil {
		return err
	}
	publishes := map[tableRef]source.PublishedName{}
	for _, p := range published {
		publishes[tableRef{oid: p.OID}], publishes[tableRef{key: tableKey{p.Schema, p.Name}}] = p, p
	}
	listed := map[tableRef]bool{}
	for i := range r.Tables {
		t := &r.Tables[i]
		p, ok := publishes[t.ref()]
		if !ok {
			// Copied once, since dropped from the publication (or the
			// table dropped): its target rows are no longer kept in step.
			t.State = "unpublished"
		} else if t.oid != 0 {
			t.Table, t.Schema, t.Name = p.Schema+"."+p.Name, p.Schema, p.Name
		}
		listed[t.ref()] = true
	}
	for _, p := range published {
		byName := tableRef{key: tableKey{p.Schema, p.Name}}
		if listed[tableRef{oid: p.OID}] || listed[byName] {
			continue
		}
		state := "waiting"
		switch {
		case copying:
			state = sink.TablePending
		case known[tableRef{oid: p.OID}] || known[byName]:
			state = "replicated"
		}
		r.Tables = append(r.Tables, newTableState(p.Schema, p.Name, state))
	}
	return nil
}

// tableRef is a table by its source OID when known, else by name.
type tableRef struct {
	oid uint32
	key tableKey
}

func (t *tableState) ref() tableRef {
	if t.oid != 0 {
		return tableRef{oid: t.oid}
	}
	return tableRef{key: tableKey{t.Schema, t.Name}}
}

// tableKey names a table by schema and name, which may hold dots.
type tableKey struct{ schema, name string }

func newTableState(schema, name, state string) tableState {
	return tableState{Table: schema + "." + name, Schema: schema, Name: name, State: state}
}

// displayName is schema.name with each part in double quotes when it is not a
// plain lower-case identifier, as quote_ident does (keywords aside).
func displayName(schema, name string) string { return pgquote.Name(schema, name) }

// displayIdent is one name, quoted as displayName quotes it.
func displayIdent(s string) string { return pgquote.Name(s) }

func runStatus(ctx context.Context, e *env, args []string) error {
	asJSON := slices.Contains(args, "--json") // run accepts no other argument
	cfg := e.cfg
	src, err := connectTo(ctx, "source", cfg.SourceURL)
	if err != nil {
		return err
	}
	defer src.Close(context.WithoutCancel(ctx))
	tgt, err := openTarget(ctx, cfg)
	if err != nil {
		return err
	}
	defer tgt.Close(context.WithoutCancel(ctx))

	var r statusReport
	slot, err := source.ReadSlot(ctx, src, cfg.Slot)
	if err != nil {
		return err
	}
	r.Slot.Name, r.Slot.Exists, r.Slot.Active, r.Slot.ActivePID = cfg.Slot, slot.Exists, slot.Active, slot.ActivePID
	r.Slot.WALStatus, r.Slot.TwoPhase = slot.WALStatus, slot.TwoPhase
	r.Slot.Invalidated, r.Slot.InvalidationReason = slot.Exists && slot.Invalidated(), slot.InvalidationReason
	// Active with nothing confirmed: CREATE_REPLICATION_SLOT is running.
	r.Slot.BeingCreated = slot.Exists && slot.Active && slot.ConfirmedFlushLSN == 0
	if slot.Exists && !r.Slot.BeingCreated {
		r.Slot.ConfirmedFlushLSN = slot.ConfirmedFlushLSN.String()
	}
	walLSN, err := source.CurrentWALLSN(ctx, src)
	if err != nil {
		return err
	}
	r.SourceWALLSN = walLSN.String()

	// A target pgrelay never wrote to has no metadata: report it unseeded.
	var hasMeta bool
	known := map[tableRef]bool{} // tables the target holds a definition of (addStreamedTables)
	if err := withTargetConn(ctx, cfg.TargetURL, func(c *pgx.Conn) error {
		if err := c.QueryRow(ctx, "SELECT to_regclass('pgrelay.progress') IS NOT NULL").Scan(&hasMeta); err != nil || !hasMeta {
			return err
		}
		rows, err := c.Query(ctx, "SELECT schema, name, CASE WHEN slot = $1 THEN coalesce(relation_oid::int8, 0) ELSE 0 END FROM pgrelay.relation", cfg.Slot)
		if err != nil {
			return fmt.Errorf("read pgrelay.relation: %w", err)
		}
		var k tableKey
		var oid int64
		_, err = pgx.ForEachRow(rows, []any{&k.schema, &k.name, &oid}, func() error {
			if oid != 0 {
				known[tableRef{oid: uint32(oid)}] = true
			} else {
				known[tableRef{key: k}] = true
			}
			return nil
		})
		return err
	}); err != nil {
		return err
	}
	var p sink.Progress
	copying := false // a snapshot copy is in progress or was interrupted
	seedFound := false
	var seedLSN source.LSN
	if hasMeta {
		if p, err = tgt.Progress(ctx, cfg.Slot); err != nil {
			return err
		}
		seed, found, err := tgt.Seed(ctx, cfg.Slot)
		if err != nil {
			return err
		}
		r.Seeded = found && seed.SnapshotDone
		copying = found && !seed.SnapshotDone
		seedFound = found
		if found {
			r.SnapshotLSN = seed.ConsistentPoint.String()
			seedLSN = seed.ConsistentPoint
		}
		states, err := tgt.TableStates(ctx, cfg.Slot)
		if err != nil {
			return err
		}
		for _, st := range states {
			ts := newTableState(st.Schema, st.Name, st.State)
			ts.Rows, ts.Bytes, ts.Copied, ts.oid = st.Rows, st.Bytes, true, st.RelationID
			r.Tables = append(r.Tables, ts)
		}
	}
	// A slot while the target holds no metadata at all: pgrelay sets the
	// target up before it creates a slot, so the metadata was dropped since,
	// or the target URL names another database.
	metaMissing := r.Slot.Exists && !hasMeta
	// A slot the target holds no seed for: a first copy stopped between
	// creating the slot and recording it; the next run copies anew.
	unrecorded := r.Slot.Exists && !r.Slot.BeingCreated && !seedFound && cfg.Snapshot != "never" && !metaMissing
	// A first copy's slot being created: the copy comes next.
	pending := copying || unrecorded || metaMissing || r.Slot.BeingCreated && !r.Seeded && cfg.Snapshot != "never"
	if err := addStreamedTables(ctx, cfg, src, known, pending, &r); err != nil {
		return err
	}
	// Lag is measured from an applied position; with none there is no lag to
	// speak of (JSON null, text "-"), not the whole WAL. The position of an
	// older slot (PGRELAY_SNAPSHOT=always) is none while the new copy is
	// unfinished.
	stale := copying && p.LSN != 0 && p.LSN < seedLSN
	applied := p.LSN != 0 && !stale
	if applied {
		lsn := p.LSN.String()
		r.AppliedLSN = &lsn
		lag := int64(0)
		if walLSN > p.LSN {
			lag = int64(walLSN - p.LSN)
		}
		r.LagBytes = &lag
		if !p.CommitTime.IsZero() {
			t := p.CommitTime.UTC()
			r.LastCommitTime = &t
			secs := 0.0
			if lag > 0 {
				secs = time.Since(p.CommitTime).Seconds()
			}
			r.LagSeconds = &secs
		}
	}
	if r.Tables == nil {
		r.Tables = []tableState{}
	}

	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	slotLine := "missing: migrate or replicate creates it, and copies the tables"
	switch {
	case slot.Exists:
	case seedFound:
		// What replicate says (invariant 9), before it is run.
		slotLine = "MISSING, but the target was seeded from it: the changes since cannot be streamed; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew"
	case cfg.Snapshot == "never":
		slotLine = "missing: migrate or replicate creates it and streams the changes from then on (PGRELAY_SNAPSHOT=never: no copy)"
	}
	if slot.Exists {
		creating := r.Slot.BeingCreated
		slotLine = fmt.Sprintf("confirmed %s, wal_status %s, two_phase %t", r.Slot.ConfirmedFlushLSN, orDash(slot.WALStatus), slot.TwoPhase)
		if creating {
			slotLine = fmt.Sprintf("wal_status %s, two_phase %t", orDash(slot.WALStatus), slot.TwoPhase)
		}
		switch {
		case r.Slot.Invalidated:
			slotLine += ", INVALIDATED (" + orDash(slot.InvalidationReason) + "): it cannot stream any more; run migrate or replicate with PGRELAY_SNAPSHOT=always to copy the tables anew"
		case creating:
			slotLine += fmt.Sprintf(", being created by pid %d (it waits for the transactions open on the source when it started, prepared ones too, to end)", slot.ActivePID)
		case slot.Active:
			client, err := source.ReadSlotClient(ctx, src, slot.ActivePID)
			if err != nil {
				return err
			}
			slotLine += fmt.Sprintf(", streaming to pid %d (%s)", slot.ActivePID, client)
		case !r.Seeded && r.SnapshotLSN != "":
			slotLine += ", idle: streaming starts when the snapshot copy ends"
		default:
			slotLine += ", idle: no pgrelay streams from it"
		}
	}
	fmt.Fprintf(w, "slot\t%s: %s\n", cfg.Slot, slotLine)
	fmt.Fprintf(w, "source WAL\t%s\n", r.SourceWALLSN)
	switch {
	case stale:
		fmt.Fprintf(w, "applied\tnothing yet since the snapshot copy began (the position %s the target holds is an older slot's)\n", p.LSN)
		fmt.Fprintf(w, "lag\t-\n")
	case !applied && copying:
		fmt.Fprintf(w, "applied\tnothing yet: the snapshot copy is not finished (under way, or interrupted: migrate or replicate resumes it)\n")
		fmt.Fprintf(w, "lag\t-\n")
	case !applied && metaMissing:
		fmt.Fprintf(w, "applied\tunknown: the target holds no pgrelay metadata (schema %s) though the slot exists: it was dropped, or %s names another database than pgrelay wrote to; migrate or replicate copies the tables anew under a new slot, into empty or absent target tables\n", postgres.MetadataSchema, envName(keyTargetURL))
		fmt.Fprintf(w, "lag\t-\n")
	case !applied && unrecorded:
		fmt.Fprintf(w, "applied\tnothing yet: the snapshot copy is not finished (it was stopped before it began: migrate or replicate copies the tables under a new slot)\n")
		fmt.Fprintf(w, "lag\t-\n")
	case !applied:
		fmt.Fprintf(w, "applied\tnothing yet: the target holds no position for this slot\n")
		fmt.Fprintf(w, "lag\t-\n")
	case r.LagSeconds == nil:
		fmt.Fprintf(w, "applied\t%s\n", *r.AppliedLSN)
		fmt.Fprintf(w, "lag\t%d bytes, time unknown (no source commit time stored yet)\n", *r.LagBytes)
	default:
		fmt.Fprintf(w, "applied\t%s\n", *r.AppliedLSN)
		fmt.Fprintf(w, "lag\t%d bytes, %.1f s\n", *r.LagBytes, *r.LagSeconds)
	}
	seeded := "no"
	if r.Seeded {
		seeded = "yes, snapshot at " + r.SnapshotLSN
	} else if r.SnapshotLSN != "" {
		seeded = "copy in progress or interrupted (snapshot at " + r.SnapshotLSN + ")"
	}
	fmt.Fprintf(w, "seeded\t%s\n", seeded)
	if len(r.Tables) > 0 {
		fmt.Fprintf(w, "\nTABLE\tSTATE\tROWS\tMB\n")
		for _, t := range r.Tables {
			if !t.Copied {
				fmt.Fprintf(w, "%s\t%s\t-\t-\n", displayName(t.Schema, t.Name), t.State)
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%.1f\n", displayName(t.Schema, t.Name), t.State, t.Rows, float64(t.Bytes)/(1<<20))
		}
	}
	if r.TablesNote != "" {
		fmt.Fprintf(w, "\nnote: %s\n", r.TablesNote)
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// withTargetConn runs fn on a short-lived plain connection to the target.
func withTargetConn(ctx context.Context, url string, fn func(*pgx.Conn) error) error {
	return withConn(ctx, "target", url, fn)
}

// withSourceConn runs fn on a short-lived plain connection to the source.
func withSourceConn(ctx context.Context, url string, fn func(*pgx.Conn) error) error {
	return withConn(ctx, "source", url, fn)
}

func withConn(ctx context.Context, side, url string, fn func(*pgx.Conn) error) error {
	c, err := connectTo(ctx, side, url)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return fn(c)
}

// connectTo opens a plain connection to the source or target ("side"), with a
// one-line error naming what to fix when it fails.
func connectTo(ctx context.Context, side, url string) (*pgx.Conn, error) {
	parse := pgconnstr.ParsePgx
	if side == "source" {
		parse = source.ParseConnConfig
	}
	cfg, err := parse(url)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot parse the %s URL", side, side)
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, redact.New(url).Err(source.DescribeConnectError(side, &cfg.Config, err))
	}
	return c, nil
}
