package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/pgrelay/pgrelay/apply/schemacopy"
	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// runStatus renders what the relay's Status gathers: a table for people,
// --json for machines.
func runStatus(ctx context.Context, e *env, args []string) error {
	asJSON := slices.Contains(args, "--json") // run accepts no other argument
	r, err := e.relay.Status(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	slot := r.Slot
	slotLine := "missing: migrate or replicate creates it, and copies the tables"
	switch {
	case slot.Exists:
	case r.Copy.SeedFound:
		// What replicate says (invariant 9), before it is run.
		slotLine = "MISSING, but the target was seeded from it: the changes since cannot be streamed; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew"
	case r.SnapshotSetting == "never":
		slotLine = "missing: migrate or replicate creates it and streams the changes from then on (PGRELAY_SNAPSHOT=never: no copy)"
	}
	if slot.Exists {
		creating := slot.BeingCreated
		slotLine = fmt.Sprintf("confirmed %s, wal_status %s, two_phase %t", slot.ConfirmedFlushLSN, orDash(slot.WALStatus), slot.TwoPhase)
		if creating {
			slotLine = fmt.Sprintf("wal_status %s, two_phase %t", orDash(slot.WALStatus), slot.TwoPhase)
		}
		switch {
		case slot.Invalidated:
			slotLine += ", INVALIDATED (" + orDash(slot.InvalidationReason) + "): it cannot stream any more; run migrate or replicate with PGRELAY_SNAPSHOT=always to copy the tables anew"
		case creating:
			slotLine += fmt.Sprintf(", being created by pid %d (it waits for the transactions open on the source when it started, prepared ones too, to end)", slot.ActivePID)
		case slot.Active && r.SlotClient != nil:
			slotLine += fmt.Sprintf(", streaming to pid %d (%s)", slot.ActivePID, r.SlotClient)
		case !r.Seeded && r.SnapshotLSN != "":
			slotLine += ", idle: streaming starts when the snapshot copy ends"
		default:
			slotLine += ", idle: no pgrelay streams from it"
		}
	}
	fmt.Fprintf(w, "slot\t%s: %s\n", slot.Name, slotLine)
	fmt.Fprintf(w, "source WAL\t%s\n", r.SourceWALLSN)
	walLines(w, r)
	applied := r.AppliedLSN != nil
	switch {
	case r.Copy.StalePosition:
		fmt.Fprintf(w, "applied\tnothing yet since the snapshot copy began (the position %s the target holds is an older slot's)\n", r.Stored)
		fmt.Fprintf(w, "lag\t-\n")
	case !applied && r.Copy.Unfinished:
		fmt.Fprintf(w, "applied\tnothing yet: the snapshot copy is not finished (under way, or interrupted: migrate or replicate resumes it)\n")
		fmt.Fprintf(w, "lag\t-\n")
	case !applied && r.Copy.MetadataMissing:
		fmt.Fprintf(w, "applied\tunknown: the target holds no pgrelay metadata (schema %s) though the slot exists: it was dropped, or %s names another database than pgrelay wrote to; migrate or replicate copies the tables anew under a new slot, into empty or absent target tables\n", r.MetadataSchema, envName(keyTargetURL))
		fmt.Fprintf(w, "lag\t-\n")
	case !applied && r.Copy.Unrecorded:
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
				fmt.Fprintf(w, "%s\t%s\t-\t-\n", pgquote.Name(t.Schema, t.Name), t.State)
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%.1f\n", pgquote.Name(t.Schema, t.Name), t.State, t.Rows, float64(t.Bytes)/(1<<20))
		}
	}
	if r.TablesNote != "" {
		fmt.Fprintf(w, "\nnote: %s\n", r.TablesNote)
	}
	_ = schemacopy.RenderStatus(w, r.Cutover, r.CutoverNote) // Flush reports a write error
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
