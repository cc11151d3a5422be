package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pgrelay/pgrelay/apply/verify"
	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// differencesError is verify's outcome when tables differ: exit 1, the
// differences listed on stdout.
type differencesError struct {
	differing []string
	total     int
}

func (e *differencesError) Error() string {
	return fmt.Sprintf("verify: %d of %d tables differ: %s (listed on stdout)", len(e.differing), e.total, strings.Join(e.differing, ", "))
}

func (e *differencesError) ExitCode() int { return exitFailure }

// runVerify compares every table of the publication between the source and
// the target. It exits 0 when all are equal, 1 with the differences listed,
// 2 when it could not compare (main maps every other error to 2), also when
// the only differences are rows that kept changing at every re-check.
func runVerify(ctx context.Context, e *env, args []string) error {
	asJSON := slices.Contains(args, "--json") // run accepts no other argument
	report, err := e.relay.Verify(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("verify: interrupted before it finished: nothing was compared to the end")
		}
		return err
	}
	if asJSON {
		if err := writeVerifyJSON(e.stdout, report); err != nil {
			return err
		}
	} else if err := writeVerifyText(e.stdout, report); err != nil {
		return err
	}
	if report.Equal() {
		return nil
	}
	// Differences are exit 1; rows that only kept changing on the source at
	// every re-check could not be compared: exit 2 when nothing else differs.
	de := &differencesError{total: len(report.Tables)}
	var unsettled []string
	for _, t := range report.Tables {
		switch {
		case t.Confirmed():
			de.differing = append(de.differing, pgquote.Name(t.Table.Schema, t.Table.Name))
		case !t.Equal():
			unsettled = append(unsettled, pgquote.Name(t.Table.Schema, t.Table.Name))
		}
	}
	if len(de.differing) > 0 {
		return de
	}
	return fmt.Errorf("verify: %s kept changing on the source during every re-check, so the rows listed on stdout could not be compared: run verify again when writes to them pause, or raise %s",
		strings.Join(unsettled, ", "), envName(keyVerifyWait))
}

// verifyJSON is `pgrelay verify --json`.
type verifyJSON struct {
	Equal  bool              `json:"equal"`
	Tables []verifyTableJSON `json:"tables"`
}

type verifyTableJSON struct {
	Table          string           `json:"table"` // schema.name, unquoted: kept for existing readers
	Schema         string           `json:"schema"`
	Name           string           `json:"name"`
	TargetTable    string           `json:"target_table"`
	TargetSchema   string           `json:"target_schema"`
	TargetName     string           `json:"target_name"`
	Equal          bool             `json:"equal"`
	Result         string           `json:"result"` // equal, differs, unsettled
	Key            []string         `json:"key"`    // empty: compared whole
	ByteOrder      bool             `json:"byte_order"`
	Chunks         int              `json:"chunks"`
	SourceRows     int64            `json:"source_rows"`
	TargetRows     int64            `json:"target_rows"`
	MissingColumns []string         `json:"missing_columns"`
	Differences    []verifyDiffJSON `json:"differences"`
	Seconds        float64          `json:"seconds"`
}

type verifyDiffJSON struct {
	Where           string       `json:"where"`
	From            verify.Key   `json:"from"` // null: from the first row
	To              verify.Key   `json:"to"`   // null: to the last row
	SourceRows      int64        `json:"source_rows"`
	TargetRows      int64        `json:"target_rows"`
	MissingOnTarget int          `json:"missing_on_target"`
	ExtraOnTarget   int          `json:"extra_on_target"`
	Changed         int          `json:"changed"`
	MissingKeys     []verify.Key `json:"missing_keys"`
	ExtraKeys       []verify.Key `json:"extra_keys"`
	ChangedKeys     []verify.Key `json:"changed_keys"`
	Unsettled       int          `json:"unsettled"`
	SourceLSN       string       `json:"source_lsn"`
	AppliedLSN      string       `json:"applied_lsn"`
}

func emptyIfNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func writeVerifyJSON(w io.Writer, r *verify.Report) error {
	out := verifyJSON{Equal: r.Equal(), Tables: []verifyTableJSON{}}
	for _, t := range r.Tables {
		tj := verifyTableJSON{
			Table: t.Table.String(), Schema: t.Table.Schema, Name: t.Table.Name,
			TargetTable: t.Target.String(), TargetSchema: t.Target.Schema, TargetName: t.Target.Name, Equal: t.Equal(), Result: tableResult(&t), Key: emptyIfNil(t.Key),
			ByteOrder: t.ByteOrder, Chunks: t.Chunks, SourceRows: t.SourceRows, TargetRows: t.TargetRows,
			MissingColumns: emptyIfNil(t.MissingColumns), Differences: []verifyDiffJSON{}, Seconds: t.Took.Seconds(),
		}
		for _, d := range t.Differences {
			tj.Differences = append(tj.Differences, verifyDiffJSON{
				Where: verify.FormatRange(t.Key, d.Range), From: d.Range.From, To: d.Range.To,
				SourceRows: d.SourceRows, TargetRows: d.TargetRows,
				MissingOnTarget: d.MissingOnTarget, ExtraOnTarget: d.ExtraOnTarget, Changed: d.Changed,
				MissingKeys: emptyIfNil(d.MissingKeys), ExtraKeys: emptyIfNil(d.ExtraKeys), ChangedKeys: emptyIfNil(d.ChangedKeys),
				Unsettled: d.Unsettled, SourceLSN: d.SourcePosition.String(), AppliedLSN: d.AppliedPosition.String(),
			})
		}
		out.Tables = append(out.Tables, tj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeVerifyText(w io.Writer, r *verify.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TABLE\tRESULT\tSOURCE ROWS\tTARGET ROWS\tCHUNKS\n")
	differing := 0
	for _, t := range r.Tables {
		result := tableResult(&t)
		if result != "equal" {
			result = strings.ToUpper(result)
			differing++
		}
		name := pgquote.Name(t.Table.Schema, t.Table.Name)
		if t.Target != t.Table {
			name += " (target " + pgquote.Name(t.Target.Schema, t.Target.Name) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", name, result, t.SourceRows, t.TargetRows, t.Chunks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range r.Tables {
		if t.Equal() {
			continue
		}
		fmt.Fprintf(w, "\n%s %s:\n", pgquote.Name(t.Table.Schema, t.Table.Name), tableResult(&t))
		if len(t.MissingColumns) > 0 {
			fmt.Fprintf(w, "  columns missing on the target: %s\n", strings.Join(t.MissingColumns, ", "))
		}
		for _, d := range t.Differences {
			fmt.Fprintf(w, "  %s: source %d rows, target %d rows", verify.FormatRange(t.Key, d.Range), d.SourceRows, d.TargetRows)
			kinds := []struct {
				n    int
				what string
				keys []verify.Key
			}{
				{d.MissingOnTarget, "missing on the target", d.MissingKeys},
				{d.ExtraOnTarget, "only on the target", d.ExtraKeys},
				{d.Changed, "changed", d.ChangedKeys},
			}
			for _, k := range kinds {
				if k.n == 0 {
					continue
				}
				shown := make([]string, len(k.keys))
				for i, key := range k.keys {
					shown[i] = verify.FormatKey(key)
				}
				more := ""
				if k.n > len(k.keys) {
					more = ", …"
				}
				fmt.Fprintf(w, "; %d %s: %s %s%s", k.n, k.what, keyLabel(t.Key), strings.Join(shown, ", "), more)
			}
			if d.Unsettled > 0 {
				if len(t.Key) == 0 {
					fmt.Fprintf(w, "; the table was still changing on the source at every re-check")
				} else {
					fmt.Fprintf(w, "; %d of these rows were still changing on the source at every re-check", d.Unsettled)
				}
			}
			fmt.Fprintln(w)
		}
	}
	if differing == 0 {
		_, err := fmt.Fprintf(w, "\nverify: all %d tables equal\n", len(r.Tables))
		return err
	}
	_, err := fmt.Fprintf(w, "\nverify: %d of %d tables not equal\n", differing, len(r.Tables))
	return err
}

// tableResult is a table's outcome in a word: equal, differs, or unsettled
// (it differed only in rows still changing at every re-check).
func tableResult(t *verify.TableResult) string {
	switch {
	case t.Equal():
		return "equal"
	case t.Confirmed():
		return "differs"
	}
	return "unsettled"
}

func keyLabel(key []string) string {
	if len(key) == 1 {
		return key[0]
	}
	return "(" + strings.Join(key, ", ") + ")"
}
