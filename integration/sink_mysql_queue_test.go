package integration

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
	"github.com/pgrelay/pgrelay/source"
)

var qT = sinktest.T

// pgbenchTables are pgbench's accounts, tellers, branches (id, bal) and
// history (id, tid, delta) tables.
func pgbenchTables() (acc, tel, bra, hist *schema.Table) {
	keyed := func(name string) *schema.Table {
		return &schema.Table{RelationID: uint32(17200 + len(name)), Schema: "public", Name: name, ReplicaIdentity: schema.IdentityDefault,
			Columns: []schema.Column{
				{Name: "id", TypeOID: 23, TypeMod: -1, TypeName: "integer", Key: true, NotNull: true, Attnum: 1},
				{Name: "bal", TypeOID: 23, TypeMod: -1, TypeName: "integer", Attnum: 2},
			}}
	}
	acc, tel, bra = keyed("q_accounts"), keyed("q_tellers"), keyed("q_branches_")
	hist = &schema.Table{RelationID: 17300, Schema: "public", Name: "q_history", ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{
			{Name: "id", TypeOID: 23, TypeMod: -1, TypeName: "integer", Key: true, NotNull: true, Attnum: 1},
			{Name: "tid", TypeOID: 23, TypeMod: -1, TypeName: "integer", Attnum: 2},
			{Name: "delta", TypeOID: 23, TypeMod: -1, TypeName: "integer", Attnum: 3},
		}}
	return acc, tel, bra, hist
}

// TestSinkMySQLQueues: a group of pgbench-like transactions, each updating a
// row of three tables and inserting into a fourth, reaches each table in
// one stretch: the updates of a table become few UPDATEs of many rows, the
// repeated updates of one row fold into the last, and the target ends as
// the changes applied in order would leave it. With KeepOrder nothing
// folds, and the result is the same.
func TestSinkMySQLQueues(t *testing.T) {
	for _, keepOrder := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep-order=%t", keepOrder), func(t *testing.T) {
			my, s := myTarget(t, mysql.Options{KeepOrder: keepOrder})
			acc, tel, bra, hist := pgbenchTables()
			ensure(t, s, acc, tel, bra, hist)
			var seed []*sink.Change
			bal := map[string]map[int]int{acc.Name: {}, tel.Name: {}, bra.Name: {}}
			for id := range 2000 {
				seed = append(seed, sinktest.Ins(acc, source.LSN(1+id), sinktest.Row(qT(fmt.Sprint(id)), qT("0"))))
				bal[acc.Name][id] = 0
			}
			for id := range 50 {
				seed = append(seed, sinktest.Ins(tel, source.LSN(3000+id), sinktest.Row(qT(fmt.Sprint(id)), qT("0"))))
				bal[tel.Name][id] = 0
			}
			for id := range 5 {
				seed = append(seed, sinktest.Ins(bra, source.LSN(3100+id), sinktest.Row(qT(fmt.Sprint(id)), qT("0"))))
				bal[bra.Name][id] = 0
			}
			mustApply(t, s, 4000, seed...)
			before := s.Stats()

			rng := rand.New(rand.NewPCG(7, 7))
			var group []*sink.Change
			lsn := source.LSN(5000)
			update := func(tb *schema.Table, id, delta int) {
				bal[tb.Name][id] += delta
				lsn++
				group = append(group, sinktest.Upd(tb, lsn, sinktest.Row(qT(fmt.Sprint(id)), qT(fmt.Sprint(bal[tb.Name][id])))))
			}
			const txns = 1500
			for i := range txns {
				delta := rng.IntN(10000) - 5000
				aid, tid, bid := rng.IntN(2000), rng.IntN(50), rng.IntN(5)
				update(acc, aid, delta)
				update(tel, tid, delta)
				update(bra, bid, delta)
				lsn++
				group = append(group, sinktest.Ins(hist, lsn, sinktest.Row(qT(fmt.Sprint(i)), qT(fmt.Sprint(tid)), qT(fmt.Sprint(delta)))))
			}
			mustApply(t, s, lsn+1, group...)
			st := s.Stats()
			for _, tb := range []*schema.Table{acc, tel, bra} {
				var sum, want int
				for _, v := range bal[tb.Name] {
					want += v
				}
				got := my.QueryString(t, "SELECT COALESCE(SUM(bal), 0) FROM "+myQuote(tb.Name))
				if _, err := fmt.Sscan(got, &sum); err != nil || sum != want {
					t.Errorf("%s: sum of balances %s, want %d", tb.Name, got, want)
				}
				for id, v := range bal[tb.Name] {
					if id%97 != 0 {
						continue
					}
					if got := my.QueryString(t, "SELECT bal FROM "+myQuote(tb.Name)+" WHERE id = ?", id); got != fmt.Sprint(v) {
						t.Errorf("%s row %d: balance %s, want %d", tb.Name, id, got, v)
					}
				}
			}
			wantMyQuery(t, my, fmt.Sprint(txns), "SELECT COUNT(*) FROM q_history")
			folded, sets := st.Folded-before.Folded, st.SetStatements-before.SetStatements
			t.Logf("%d changes: %d statements in %d round trips, %d UPDATEs of many rows (%d rows), %d folded",
				len(group), st.Statements-before.Statements, st.Batches-before.Batches, sets, st.SetRows-before.SetRows, folded)
			if keepOrder {
				if folded != 0 || sets != 0 {
					t.Errorf("in arrival order: %d folded, %d UPDATEs of many rows; want none", folded, sets)
				}
				return
			}
			// Of 4500 updates, the 5 branches' and 50 tellers' rows each fold
			// into one update per drain.
			if folded < 2500 {
				t.Errorf("%d updates folded, want the repeated ones of tellers and branches (> 2500)", folded)
			}
			if n := st.Statements - before.Statements; n > 100 {
				t.Errorf("%d statements for %d changes: the queues did not batch them", n, len(group))
			}
		})
	}
}

// TestSinkMySQLUpdateRunUnique: a table with a unique index besides its key
// takes its updates one by one in source order: one UPDATE of many rows
// would check the index in the order MySQL visits the rows, and refuse the
// values passed on between them (u 2 moves from row 2 to row 1).
func TestSinkMySQLUpdateRunUnique(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	tb := &schema.Table{RelationID: 17400, Schema: "public", Name: "uniq", ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{
			{Name: "id", TypeOID: 23, TypeMod: -1, TypeName: "integer", Key: true, NotNull: true, Attnum: 1},
			{Name: "u", TypeOID: 23, TypeMod: -1, TypeName: "integer", Attnum: 2},
		}}
	ensure(t, s, tb)
	my.Exec(t, "ALTER TABLE uniq ADD UNIQUE KEY uniq_u (u)")
	mustApply(t, s, 100, sinktest.Ins(tb, 1, sinktest.Row(qT("1"), qT("1"))), sinktest.Ins(tb, 2, sinktest.Row(qT("2"), qT("2"))))
	mustApply(t, s, 200,
		sinktest.Upd(tb, 101, sinktest.Row(qT("2"), qT("3"))),
		sinktest.Upd(tb, 102, sinktest.Row(qT("1"), qT("2"))))
	wantMyQuery(t, my, "1:2,2:3", "SELECT GROUP_CONCAT(CONCAT(id, ':', u) ORDER BY id) FROM uniq")
}

// TestSinkMySQLUpdateRunMissingRow: a row missing among an UPDATE of many
// rows fails the transaction naming that row, and nothing of it stays.
func TestSinkMySQLUpdateRunMissingRow(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	acc, _, _, _ := pgbenchTables()
	ensure(t, s, acc)
	var rows []*sink.Change
	for id := range 100 {
		rows = append(rows, sinktest.Ins(acc, source.LSN(1+id), sinktest.Row(qT(fmt.Sprint(id)), qT("0"))))
	}
	mustApply(t, s, 200, rows...)
	var upd []*sink.Change
	for id := range 100 {
		if id == 60 {
			upd = append(upd, sinktest.Upd(acc, source.LSN(360), sinktest.Row(qT("1060"), qT("1"))))
		}
		upd = append(upd, sinktest.Upd(acc, source.LSN(300+id), sinktest.Row(qT(fmt.Sprint(id)), qT("1"))))
	}
	err := pgApply(t, s, 500, upd...)
	var ce *sink.ChangeError
	if !errors.As(err, &ce) || !errors.Is(err, sink.ErrRowNotFound) || ce.Key != "(id)=(1060)" || ce.LSN != 360 {
		t.Fatalf("a missing row among many: %v; want the ChangeError of key 1060 at its LSN, row not found", err)
	}
	wantMyQuery(t, my, "0", "SELECT COALESCE(SUM(bal), 0) FROM q_accounts")
	if st := s.Stats(); st.SetStatements == 0 {
		t.Errorf("no UPDATE of many rows was sent: %+v", st)
	}
}
