package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/source"
)

// The WAL-retention guard reads what the server says of a slot pushed past a
// small max_slot_wal_keep_size: reserved, then unreserved (the WAL is still
// there, the next checkpoint removes it), then lost; each reading gives the
// warning an operator needs.
func TestWALRetentionGuard(t *testing.T) {
	for _, major := range harness.Majors() {
		if major < 13 {
			continue // max_slot_wal_keep_size and wal_status exist from 13
		}
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			// No timed checkpoint may come between the readings.
			pg := harness.Postgres(t, major, harness.WithSetting("max_slot_wal_keep_size", "1MB"),
				harness.WithSetting("checkpoint_timeout", "1h"), harness.WithSetting("max_wal_size", "4GB"))
			ctx := withTimeout(t, 2*time.Minute)
			conn := pg.Conn(t)
			alert := source.WALAlert{Share: 0.8}

			// Before the slot exists the setting is read all the same.
			r, err := source.ReadWALRetention(ctx, conn, "guarded")
			if err != nil {
				t.Fatal(err)
			}
			if r.Exists || r.MaxSlotWALKeepSize != 1<<20 || r.Major != major {
				t.Fatalf("before the slot: %+v", r)
			}
			if w := source.WALWarnings(r, alert); len(w) != 0 {
				t.Fatalf("warnings for a bounded server without the slot: %v", w)
			}

			pg.Exec(t, "CREATE TABLE w (id serial PRIMARY KEY, pad text)")
			pg.Exec(t, "SELECT pg_create_logical_replication_slot('guarded', 'pgoutput')")
			r, err = source.ReadWALRetention(ctx, conn, "guarded")
			if err != nil {
				t.Fatal(err)
			}
			if !r.Exists || r.WALStatus != "reserved" || r.RestartLSN == 0 || r.CurrentLSN < r.RestartLSN || r.SafeWALSize == nil {
				t.Fatalf("fresh slot: %+v", r)
			}

			// Move the WAL several segments past the slot: its WAL is now beyond
			// the limit but still on disk until a checkpoint.
			for range 3 {
				pg.Exec(t, "INSERT INTO w (pad) VALUES ('x')")
				pg.Exec(t, "SELECT pg_switch_wal()")
			}
			r, err = source.ReadWALRetention(ctx, conn, "guarded")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("past the limit: %+v", r)
			if r.WALStatus != "unreserved" || r.RetainedBytes < 2*16<<20 || r.SafeWALSize == nil || *r.SafeWALSize >= 0 {
				t.Fatalf("slot past max_slot_wal_keep_size: %+v", r)
			}
			w := source.WALWarnings(r, alert)
			if len(w) != 1 || w[0].Risk != source.WALUnreserved || !strings.Contains(w[0].Message, "max_slot_wal_keep_size (1 MB, wal_status unreserved)") {
				t.Fatalf("warnings past the limit: %v", w)
			}

			pg.Exec(t, "CHECKPOINT")
			r, err = source.ReadWALRetention(ctx, conn, "guarded")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("after the checkpoint: %+v", r)
			w = source.WALWarnings(r, alert)
			if r.WALStatus != "lost" || len(w) != 1 || w[0].Risk != source.WALLost || !strings.Contains(w[0].Message, "PGRELAY_SNAPSHOT=always") {
				t.Fatalf("invalidated slot: %+v, warnings %v", r, w)
			}
		})
	}
}

// A server left at max_slot_wal_keep_size = -1 (the default) gets the
// warning that a stopped replica can fill its disk.
func TestWALRetentionUnlimited(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major)
			ctx := withTimeout(t, time.Minute)
			conn := pg.Conn(t)
			pg.Exec(t, "SELECT pg_create_logical_replication_slot('unbounded', 'pgoutput')")
			r, err := source.ReadWALRetention(ctx, conn, "unbounded")
			if err != nil {
				t.Fatal(err)
			}
			if !r.Exists || r.MaxSlotWALKeepSize != -1 || r.SafeWALSize != nil {
				t.Fatalf("reading: %+v", r)
			}
			w := source.WALWarnings(r, source.WALAlert{Share: 0.8})
			if len(w) != 1 || w[0].Risk != source.WALUnlimited || !strings.Contains(w[0].Message, "max_slot_wal_keep_size is -1") || !strings.Contains(w[0].Message, "disk") {
				t.Fatalf("warnings: %v", w)
			}
		})
	}
}
