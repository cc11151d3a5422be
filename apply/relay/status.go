package relay

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/apply/schemacopy"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// StatusReport is what `pgrelay status` shows; its JSON form is for machines.
type StatusReport struct {
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
	// WALRetention is how much WAL the source keeps for the slot, its limit,
	// and what is worth a warning (PGRELAY_SLOT_WAL_ALERT).
	WALRetention WALRetentionStatus `json:"wal_retention"`
	// AppliedLSN, LagBytes and LagSeconds are null while nothing is applied
	// (no position stored for the slot, or only an older slot's while a new
	// snapshot copy is unfinished): there is no lag to speak of, and 0 would
	// read as caught up. LagSeconds is also null while no source commit time
	// is stored.
	AppliedLSN *string `json:"applied_lsn"`
	// LastCommitTime is the source time the applied position is current as
	// of: the last applied transaction's commit, or when pgrelay last saw the
	// source idle with everything applied.
	LastCommitTime *time.Time    `json:"last_commit_time,omitempty"`
	LagBytes       *int64        `json:"lag_bytes"`
	LagSeconds     *float64      `json:"lag_seconds"` // since LastCommitTime
	Seeded         bool          `json:"seeded"`
	SnapshotLSN    string        `json:"snapshot_lsn,omitempty"`
	Tables         []TableStatus `json:"tables"`
	TablesNote     string        `json:"tables_note,omitempty"` // why Tables may be incomplete
	// Cutover says whether the target is ready to switch to (schema.go).
	Cutover     *schemacopy.Readiness `json:"cutover"`
	CutoverNote string                `json:"cutover_note,omitempty"`
	Copy        CopyState             `json:"-"`
	Stored      source.LSN            `json:"-"` // the position the target holds, 0 when none
	// SlotClient is the client streaming from the slot (Slot.Active, not
	// BeingCreated), as pg_stat_replication shows it.
	SlotClient *source.SlotClient `json:"-"`
	// SnapshotSetting is PGRELAY_SNAPSHOT: what a run does about a missing
	// slot.
	SnapshotSetting string `json:"-"`
	// MetadataSchema is where pgrelay keeps its metadata on the target.
	MetadataSchema string `json:"-"`
}

// CopyState tells how far a snapshot copy is when nothing is applied yet.
type CopyState struct {
	// SeedFound: the target holds a seed for the slot (a copy began).
	SeedFound bool
	// MetadataMissing: the slot exists but the target holds no pgrelay
	// metadata at all: pgrelay sets the target up before it creates a slot,
	// so the metadata was dropped since, or the target URL names another
	// database.
	MetadataMissing bool
	// Unfinished: a copy is in progress or was interrupted.
	Unfinished bool
	// Unrecorded: the slot exists but the target holds no seed for it (a
	// first copy stopped between creating the slot and recording it); the
	// next run copies anew.
	Unrecorded bool
	// StalePosition: the target's position is an older slot's while a new
	// copy is unfinished.
	StalePosition bool
}

// TableStatus is one table's line. State is the snapshot copy's state
// (pending, copying, copied, indexed) for a table the snapshot copied;
// "replicated" for a published table that was not copied and whose changes
// pgrelay has applied since (it is known on the target); "waiting" for a
// published table neither copied nor seen in the stream yet; "unpublished"
// for a table the snapshot copied that the publication no longer publishes.
// Rows and Bytes are the snapshot copy's.
type TableStatus struct {
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
// are the tables the target holds a definition of (sink.KnownRelation), by
// source OID and, for definitions stored without one, by name.
//
// A table is known by its OID where its rows carry one: renamed on the
// source, it is listed under its current name.
//
// While a copy is unfinished (copying is true: in progress, or interrupted,
// or its slot being created), a published table without a copy state is
// "pending": the copy, when it goes on, copies it. A target table pgrelay
// created for it holds no rows yet.
func (r *Relay) addStreamedTables(ctx context.Context, src *pgx.Conn, known map[tableRef]bool, copying bool, rep *StatusReport) error {
	published, err := source.ListPublication(ctx, src, r.cfg.Publication, 5*time.Second)
	if source.IsLockTimeout(err) {
		rep.TablesNote = "the published tables not copied by the snapshot could not be listed: " + source.LockedHint
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
	for i := range rep.Tables {
		t := &rep.Tables[i]
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
		rep.Tables = append(rep.Tables, newTableStatus(p.Schema, p.Name, state))
	}
	return nil
}

// tableRef is a table by its source OID when known, else by name.
type tableRef struct {
	oid uint32
	key tableKey
}

func (t *TableStatus) ref() tableRef {
	if t.oid != 0 {
		return tableRef{oid: t.oid}
	}
	return tableRef{key: tableKey{t.Schema, t.Name}}
}

// tableKey names a table by schema and name, which may hold dots.
type tableKey struct{ schema, name string }

func newTableStatus(schema, name, state string) TableStatus {
	return TableStatus{Table: schema + "." + name, Schema: schema, Name: name, State: state}
}

// Status gathers what `pgrelay status` shows: the slot, the source's WAL
// position, the position the target holds and the lag, the seed and each
// table's state. It changes nothing on either side.
func (r *Relay) Status(ctx context.Context) (*StatusReport, error) {
	cfg := r.cfg
	src, err := source.ConnectPlain(ctx, cfg.SourceURL)
	if err != nil {
		return nil, err
	}
	defer src.Close(context.WithoutCancel(ctx))
	tgt, err := r.target.Open(ctx, ForInspection)
	if err != nil {
		return nil, err
	}
	defer tgt.Close(context.WithoutCancel(ctx))

	var rep StatusReport
	slot, err := source.ReadSlot(ctx, src, cfg.Slot)
	if err != nil {
		return nil, err
	}
	rep.SnapshotSetting, rep.MetadataSchema = cfg.Snapshot, tgt.MetadataSchema()
	rep.Slot.Name, rep.Slot.Exists, rep.Slot.Active, rep.Slot.ActivePID = cfg.Slot, slot.Exists, slot.Active, slot.ActivePID
	rep.Slot.WALStatus, rep.Slot.TwoPhase = slot.WALStatus, slot.TwoPhase
	rep.Slot.Invalidated, rep.Slot.InvalidationReason = slot.Exists && slot.Invalidated(), slot.InvalidationReason
	// Active with nothing confirmed: CREATE_REPLICATION_SLOT is running.
	rep.Slot.BeingCreated = slot.Exists && slot.Active && slot.ConfirmedFlushLSN == 0
	if slot.Exists && !rep.Slot.BeingCreated {
		rep.Slot.ConfirmedFlushLSN = slot.ConfirmedFlushLSN.String()
	}
	if slot.Exists && slot.Active && !rep.Slot.BeingCreated {
		client, err := source.ReadSlotClient(ctx, src, slot.ActivePID)
		if err != nil {
			return nil, err
		}
		rep.SlotClient = &client
	}
	walLSN, err := source.CurrentWALLSN(ctx, src)
	if err != nil {
		return nil, err
	}
	rep.SourceWALLSN = walLSN.String()
	if err := r.addWALRetention(ctx, src, &rep); err != nil {
		return nil, err
	}

	// A target pgrelay never wrote to has no metadata: report it unseeded.
	hasMeta, err := tgt.HasMetadata(ctx)
	if err != nil {
		return nil, err
	}
	known := map[tableRef]bool{} // tables the target holds a definition of (addStreamedTables)
	var p sink.Progress
	copying := false // a snapshot copy is in progress or was interrupted
	seedFound := false
	var seedLSN source.LSN
	if hasMeta {
		relations, err := tgt.KnownRelations(ctx)
		if err != nil {
			return nil, err
		}
		for _, k := range relations {
			// The OID of another slot's relation may be another table's.
			if k.Slot == cfg.Slot && k.RelationID != 0 {
				known[tableRef{oid: k.RelationID}] = true
			} else {
				known[tableRef{key: tableKey{k.Schema, k.Name}}] = true
			}
		}
		if p, err = tgt.Progress(ctx, cfg.Slot); err != nil {
			return nil, err
		}
		seed, found, err := tgt.Seed(ctx, cfg.Slot)
		if err != nil {
			return nil, err
		}
		rep.Seeded = found && seed.SnapshotDone
		copying = found && !seed.SnapshotDone
		seedFound = found
		if found {
			rep.SnapshotLSN = seed.ConsistentPoint.String()
			seedLSN = seed.ConsistentPoint
		}
		states, err := tgt.TableStates(ctx, cfg.Slot)
		if err != nil {
			return nil, err
		}
		for _, st := range states {
			ts := newTableStatus(st.Schema, st.Name, st.State)
			ts.Rows, ts.Bytes, ts.Copied, ts.oid = st.Rows, st.Bytes, true, st.RelationID
			rep.Tables = append(rep.Tables, ts)
		}
	}
	metaMissing := rep.Slot.Exists && !hasMeta
	// A slot the target holds no seed for: a first copy stopped between
	// creating the slot and recording it; the next run copies anew.
	unrecorded := rep.Slot.Exists && !rep.Slot.BeingCreated && !seedFound && cfg.Snapshot != "never" && !metaMissing
	// A first copy's slot being created: the copy comes next.
	pending := copying || unrecorded || metaMissing || rep.Slot.BeingCreated && !rep.Seeded && cfg.Snapshot != "never"
	if err := r.addStreamedTables(ctx, src, known, pending, &rep); err != nil {
		return nil, err
	}
	// Lag is measured from an applied position; with none there is no lag to
	// speak of (JSON null, text "-"), not the whole WAL. The position of an
	// older slot (PGRELAY_SNAPSHOT=always) is none while the new copy is
	// unfinished.
	stale := copying && p.LSN != 0 && p.LSN < seedLSN
	rep.Copy = CopyState{SeedFound: seedFound, MetadataMissing: metaMissing, Unfinished: copying, Unrecorded: unrecorded, StalePosition: stale}
	rep.Stored = p.LSN
	if p.LSN != 0 && !stale {
		lsn := p.LSN.String()
		rep.AppliedLSN = &lsn
		lag := int64(0)
		if walLSN > p.LSN {
			lag = int64(walLSN - p.LSN)
		}
		rep.LagBytes = &lag
		if !p.CommitTime.IsZero() {
			t := p.CommitTime.UTC()
			rep.LastCommitTime = &t
			secs := 0.0
			if lag > 0 {
				secs = time.Since(p.CommitTime).Seconds()
			}
			rep.LagSeconds = &secs
		}
	}
	if rep.Tables == nil {
		rep.Tables = []TableStatus{}
	}
	if err := r.addCutover(ctx, src, tgt, hasMeta, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
