package schemacopy

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Render writes rep for people, as migrate prints it after its "caught up"
// line: tables and rows, sequences, what became of the schema objects (each
// one left out, not carried, created otherwise than on the source or that
// needs a hand at the switch, with why), and whether the target is ready to
// switch to.
func Render(w io.Writer, rep *sink.CutoverReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "tables: %d (%d rows copied by the snapshot)\n", rep.Tables, rep.Rows)
	fmt.Fprintf(&b, "sequences: %d set to the source's values\n", rep.Sequences)
	c := count(rep.Objects)
	if rep.Schema == ModeTables {
		fmt.Fprintf(&b, "schema objects: not carried (PGRELAY_SCHEMA=tables: only the tables, their keys, indexes and sequences)\n")
	} else {
		fmt.Fprintf(&b, "schema objects: %d created, %d already there, %d left out", c[sink.ObjectCreated], c[sink.ObjectPresent], c[sink.ObjectLeftOut]+c[sink.ObjectDeferred])
		if n := c[sink.ObjectNotCarried]; n > 0 {
			fmt.Fprintf(&b, ", %d not carried (the target cannot hold them)", n)
		}
		b.WriteString("\n")
	}
	for _, r := range rep.Objects {
		switch {
		case r.Missing():
			fmt.Fprintf(&b, "  left out: %s %s: %s\n", r.Kind, r.Name, r.Reason)
		case r.State == sink.ObjectNotCarried:
			fmt.Fprintf(&b, "  not carried: %s %s: %s\n", r.Kind, r.Name, r.Reason)
		case r.Incomplete:
			fmt.Fprintf(&b, "  at the switch: %s %s: %s\n", r.Kind, r.Name, r.Reason)
		case r.State == sink.ObjectCreated && r.Reason != "":
			fmt.Fprintf(&b, "  note: %s %s: %s\n", r.Kind, r.Name, r.Reason)
		}
	}
	rd := Ready(rep, rep.CaughtUpLSN, nil, nil)
	if rd.Ready {
		b.WriteString("ready to switch: yes (stop the application's writes on the source first, then run pgrelay migrate once more, or pgrelay sequences while replicate runs)")
		if n := len(rd.NotCarried); n > 0 {
			fmt.Fprintf(&b, "; %d schema objects are not carried (listed): port those the application needs yourself", n)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("ready to switch: no: " + strings.Join(rd.NotReady, "; ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderStatus writes rd as the cut-over section of status's text, one
// tab-separated line each (a label, then what it says), and note, why part
// of it could not be made (""). A nil rd writes nothing.
func RenderStatus(w io.Writer, rd *Readiness, note string) error {
	if rd == nil {
		return nil
	}
	var b strings.Builder
	ready := "not ready: " + strings.Join(rd.NotReady, "; ")
	if rd.Ready {
		ready = "READY: caught up, sequences at the source's values, nothing left out"
		if n := len(rd.NotCarried); n > 0 {
			ready += fmt.Sprintf("; %d schema objects the target cannot hold are not carried (listed): port those the application needs yourself", n)
		}
	}
	fmt.Fprintf(&b, "\ncut-over\t%s\n", ready)
	if rd.LastMigration != nil {
		fmt.Fprintf(&b, "last migrate\t%s (PGRELAY_SCHEMA=%s)\n", rd.LastMigration.UTC().Format(time.RFC3339), rd.Schema)
	}
	switch {
	case rd.SequencesBehind == nil:
		b.WriteString("sequences\tnot compared\n")
	case len(rd.SequencesBehind) == 0:
		b.WriteString("sequences\tat the source's values\n")
	default:
		fmt.Fprintf(&b, "sequences\tbehind the source: %s\n", strings.Join(rd.SequencesBehind, ", "))
	}
	for _, o := range rd.LeftOut {
		what := "at the switch"
		if o.Missing() {
			what = "left out"
		}
		fmt.Fprintf(&b, "%s\t%s %s: %s\n", what, o.Kind, o.Name, o.Reason)
	}
	for _, o := range rd.NotCarried {
		fmt.Fprintf(&b, "not carried\t%s %s: %s\n", o.Kind, o.Name, o.Reason)
	}
	if note != "" {
		fmt.Fprintf(&b, "note\t%s\n", note)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Readiness says whether the target is ready for an application to switch
// over to: caught up with the source, its sequences at the source's values,
// and nothing of the schema left out or waiting for a hand. What the kind of
// target cannot hold at all (sink.ObjectNotCarried: a view on MySQL) does
// not keep it from being ready, since no run of pgrelay could make it: it
// is listed, for the user to port.
type Readiness struct {
	Ready bool `json:"ready"`
	// CaughtUp: the lag is 0, or nothing was applied since the last
	// migration caught up (CaughtUpLSN).
	CaughtUp bool `json:"caught_up"`
	// LastMigration is when the last migration that caught up ended; nil
	// when none did.
	LastMigration *time.Time `json:"last_migration"`
	Schema        string     `json:"schema,omitempty"`
	// SequencesBehind are the sequences that would hand out on the target
	// values the source has handed out (nil: not compared).
	SequencesBehind []string `json:"sequences_behind"`
	// LeftOut are the schema objects left out or that need a hand at the
	// switch, as the last migration found them.
	LeftOut []sink.ObjectResult `json:"left_out"`
	// NotCarried are the schema objects the target cannot hold, as the last
	// migration found them.
	NotCarried []sink.ObjectResult `json:"not_carried"`
	// NotReady says why Ready is false, one reason each.
	NotReady []string `json:"not_ready,omitempty"`
}

// Ready judges rep, the last migration's report (nil: none), against the
// target's applied position and lag now (lag nil: not measured) and the
// sequences found behind (nil: not compared).
func Ready(rep *sink.CutoverReport, applied source.LSN, lag *int64, behind []string) Readiness {
	rd := Readiness{SequencesBehind: behind, LeftOut: []sink.ObjectResult{}, NotCarried: []sink.ObjectResult{}}
	if rep == nil {
		rd.NotReady = append(rd.NotReady, "no pgrelay migrate has caught up into this target yet (it sets the sequences and carries the schema)")
		rd.CaughtUp = lag != nil && *lag == 0
		if !rd.CaughtUp {
			rd.NotReady = append(rd.NotReady, notCaughtUp(lag))
		}
		return rd
	}
	t := rep.FinishedAt
	rd.LastMigration, rd.Schema = &t, rep.Schema
	rd.CaughtUp = lag != nil && *lag == 0 || applied != 0 && applied == rep.CaughtUpLSN
	if !rd.CaughtUp {
		rd.NotReady = append(rd.NotReady, notCaughtUp(lag))
	}
	if len(behind) > 0 {
		rd.NotReady = append(rd.NotReady, fmt.Sprintf("%d sequences behind the source's values (run pgrelay sequences)", len(behind)))
	}
	left, hand := 0, 0
	for _, r := range rep.Objects {
		switch {
		case r.Missing():
			left++
		case r.State == sink.ObjectNotCarried:
			rd.NotCarried = append(rd.NotCarried, r)
			continue
		case r.Incomplete:
			hand++
		default:
			continue
		}
		rd.LeftOut = append(rd.LeftOut, r)
	}
	if left > 0 {
		rd.NotReady = append(rd.NotReady, fmt.Sprintf("%d schema objects left out (listed)", left))
	}
	if hand > 0 {
		rd.NotReady = append(rd.NotReady, fmt.Sprintf("%d schema objects need a hand at the switch (listed)", hand))
	}
	rd.Ready = len(rd.NotReady) == 0
	return rd
}

func notCaughtUp(lag *int64) string {
	if lag == nil {
		return "not caught up (nothing applied yet)"
	}
	return fmt.Sprintf("not caught up (%d bytes of source WAL not applied; stop the application's writes and let replicate catch up, or run pgrelay migrate)", *lag)
}
