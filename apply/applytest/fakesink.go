// Package applytest holds an in-memory sink for testing apply (and what drives
// it) without a database, in the manner of database/sql's fakedb: it records
// every call in order as one line of text, so that tests assert exact call
// sequences, and it models a target's durable state — committed changes, the
// stored position, prepared transactions — across simulated crashes.
package applytest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Sink is an in-memory sink.Sink with every required capability (sink.Target:
// control.go) and the TwoPhase, DDLCommits and AsyncCommitter ones. It is safe
// for concurrent use.
type Sink struct {
	// NonTransactionalDDL makes DDLCommits report true (a MySQL-like target).
	// EnsureTable then fails while a transaction is open.
	NonTransactionalDDL bool
	// Fail, when set, is asked before every call (with the line the call would
	// log) and a non-nil result fails the call. A failed Commit commits nothing.
	Fail func(call string) error
	// Async makes CommitAsync hold a commit's outcome until Settle, as a sink
	// whose commit is still on the wire does; otherwise CommitAsync is Commit.
	Async bool
	// PreparedBegin makes BeginPrepared log "begin-prepared gid" (a MySQL-like
	// target, whose prepared transactions begin as XA transactions);
	// otherwise it is Begin.
	PreparedBegin bool

	mu        sync.Mutex
	calls     []string
	progress  sink.Progress
	committed []string
	prepared  map[string][]string
	// prepareEnds remembers each prepared transaction's prepare end LSN, also
	// after COMMIT PREPARED (the PostgreSQL sink's pgrelay.prepared row).
	prepareEnds map[string]source.LSN
	tables      map[string]*schema.Table
	open        map[*Tx]bool
	epoch       int
	problems    []string
	settleErr   error // Async: the outcome of the last CommitAsync

	control // control.go
}

var (
	_ sink.Target = (*Sink)(nil) // control.go

	_ sink.Sink           = (*Sink)(nil)
	_ sink.TwoPhase       = (*Sink)(nil)
	_ sink.DDLCommits     = (*Sink)(nil)
	_ sink.AsyncCommitter = (*Sink)(nil)
	_ sink.AsyncTx        = (*Tx)(nil)

	_ sink.PreparedCommits = (*Sink)(nil)
	_ sink.PreparedFills   = (*Sink)(nil)
)

// New returns an empty sink whose stored position is start.
func New(start source.LSN) *Sink {
	return &Sink{
		progress:    sink.Progress{LSN: start},
		prepared:    make(map[string][]string),
		prepareEnds: make(map[string]source.LSN),
		tables:      make(map[string]*schema.Table),
		open:        make(map[*Tx]bool),
		control:     newControl(),
	}
}

func (s *Sink) logLocked(call string) error {
	if s.Fail != nil {
		if err := s.Fail(call); err != nil {
			s.calls = append(s.calls, call+" -> error")
			return err
		}
	}
	s.calls = append(s.calls, call)
	return nil
}

// Calls returns the calls so far and forgets them.
func (s *Sink) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

// Committed returns every committed change, in commit order, in the format of
// the call log.
func (s *Sink) Committed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.committed)
}

// Stored returns the stored position.
func (s *Sink) Stored() sink.Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress
}

// Prepared returns the GIDs of the prepared transactions, sorted.
func (s *Sink) Prepared() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gids []string
	for g := range s.prepared {
		gids = append(gids, g)
	}
	slices.Sort(gids)
	return gids
}

// Problems returns the contract violations seen: a stored position going back,
// a change modified after it was handed over, DDL with a transaction open on a
// non-transactional-DDL target, two transactions open at once, use of a
// finished transaction.
func (s *Sink) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.problems)
}

// OpenTxs returns how many transactions are open.
func (s *Sink) OpenTxs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Crash simulates the loss of the target session (kill -9 of pgrelay): open
// transactions are rolled back and every later call on them fails. Durable
// state (committed changes, stored position, prepared transactions) survives.
func (s *Sink) Crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	s.open = make(map[*Tx]bool)
	s.calls = append(s.calls, "crash")
}

func (s *Sink) Setup(_ context.Context, slot string) (sink.Progress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked("setup " + slot); err != nil {
		return sink.Progress{}, err
	}
	s.hasMeta = true
	return s.progress, nil
}

// TableString formats a table version as name(col,…), keys marked with *.
func TableString(t *schema.Table) string {
	if t == nil {
		return "nil"
	}
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = c.Name + " " + c.TypeName
		if c.Key {
			cols[i] += "*"
		}
	}
	return t.QualifiedName() + "(" + strings.Join(cols, ",") + ")"
}

func (s *Sink) EnsureTable(_ context.Context, t, prev *schema.Table) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.NonTransactionalDDL && len(s.open) > 0 {
		s.problems = append(s.problems, "EnsureTable with a transaction open: "+t.QualifiedName())
	}
	if err := s.logLocked("ensure " + TableString(t) + " prev=" + TableString(prev)); err != nil {
		return err
	}
	s.tables[t.QualifiedName()] = t
	s.knowLocked(t)
	return nil
}

func (s *Sink) Begin(context.Context) (sink.Tx, error) { return s.begin("begin") }

// BeginPrepared implements sink.PreparedBeginner (see PreparedBegin).
func (s *Sink) BeginPrepared(_ context.Context, gid string) (sink.Tx, error) {
	if s.PreparedBegin {
		return s.begin("begin-prepared " + gid)
	}
	return s.begin("begin")
}

func (s *Sink) begin(call string) (sink.Tx, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) > 0 {
		// Real sinks hold one session: one transaction at a time.
		s.problems = append(s.problems, "Begin with a transaction open")
	}
	if err := s.logLocked(call); err != nil {
		return nil, err
	}
	tx := &Tx{s: s, epoch: s.epoch}
	s.open[tx] = true
	return tx, nil
}

func (s *Sink) Close(context.Context) error { return nil }

func (s *Sink) DDLCommits() bool { return s.NonTransactionalDDL }

func (s *Sink) storeLocked(p sink.Progress) {
	if p.LSN < s.progress.LSN {
		s.problems = append(s.problems, fmt.Sprintf("stored position goes back from %s to %s", s.progress.LSN, p.LSN))
	}
	s.progress = p
}

func (s *Sink) Prepare(_ context.Context, t sink.Tx, gid string, p sink.Progress) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, ok := t.(*Tx)
	if !ok || !s.open[tx] {
		return errors.New("applytest: prepare of a transaction that is not open")
	}
	if err := s.logLocked(fmt.Sprintf("prepare %s %s", gid, p.LSN)); err != nil {
		return err
	}
	if _, dup := s.prepared[gid]; dup {
		return fmt.Errorf("applytest: transaction identifier %q is already in use", gid)
	}
	delete(s.open, tx)
	s.prepared[gid] = tx.finishLocked()
	s.prepareEnds[gid] = p.LSN
	// Like the PostgreSQL sink, the prepared transaction does not touch the
	// shared position.
	return nil
}

func (s *Sink) CommitPrepared(_ context.Context, gid string, p sink.Progress) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked(fmt.Sprintf("commit-prepared %s %s", gid, p.LSN)); err != nil {
		return err
	}
	changes, ok := s.prepared[gid]
	if !ok {
		return fmt.Errorf("applytest: prepared transaction %q does not exist", gid)
	}
	delete(s.prepared, gid)
	s.committed = append(s.committed, changes...)
	s.storeLocked(p)
	return nil
}

// DeferFill logs the call ("defer-fill gid table col,col"); the fake's rows have
// no columns to fill.
func (s *Sink) DeferFill(_ context.Context, gid string, t *schema.Table, columns []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) == 0 {
		s.problems = append(s.problems, "DeferFill without a transaction open: "+t.QualifiedName())
	}
	return s.logLocked(fmt.Sprintf("defer-fill %s %s %s", gid, t.QualifiedName(), strings.Join(columns, ",")))
}

// SetFillResolver does nothing: see DeferFill.
func (s *Sink) SetFillResolver(sink.FillResolver) {}

// CommitPreparedLosingPosition commits the prepared transaction gid without
// storing a position: a crash between COMMIT PREPARED and the position's write.
func (s *Sink) CommitPreparedLosingPosition(gid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed = append(s.committed, s.prepared[gid]...)
	delete(s.prepared, gid)
}

// PreparedCommitted implements sink.PreparedCommits.
func (s *Sink) PreparedCommitted(_ context.Context, gid string, prepareEnd source.LSN) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, prepared := s.prepared[gid]
	return !prepared && s.prepareEnds[gid] == prepareEnd && prepareEnd != 0, nil
}

func (s *Sink) RollbackPrepared(_ context.Context, gid string, p sink.Progress) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked(fmt.Sprintf("rollback-prepared %s %s", gid, p.LSN)); err != nil {
		return err
	}
	if _, ok := s.prepared[gid]; !ok {
		return fmt.Errorf("applytest: prepared transaction %q does not exist", gid)
	}
	delete(s.prepared, gid)
	s.storeLocked(p)
	return nil
}

func (s *Sink) PreparedGIDs(_ context.Context, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked("prepared-gids " + prefix); err != nil {
		return nil, err
	}
	var gids []string
	for g := range s.prepared {
		if strings.HasPrefix(g, prefix) {
			gids = append(gids, g)
		}
	}
	slices.Sort(gids)
	return gids, nil
}

// Tx is a transaction of Sink.
type Tx struct {
	s       *Sink
	epoch   int
	changes []*sink.Change
	lines   []string
}

func (tx *Tx) checkLocked() error {
	if tx.epoch != tx.s.epoch {
		return errors.New("applytest: connection lost")
	}
	if !tx.s.open[tx] {
		tx.s.problems = append(tx.s.problems, "use of a finished transaction")
		return errors.New("applytest: transaction is finished")
	}
	return nil
}

func (tx *Tx) Apply(_ context.Context, ch *sink.Change) error {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	if err := tx.checkLocked(); err != nil {
		return err
	}
	line := ChangeString(ch)
	if err := tx.s.logLocked(line); err != nil {
		return err
	}
	tx.changes = append(tx.changes, ch)
	tx.lines = append(tx.lines, line)
	return nil
}

func (tx *Tx) Truncate(_ context.Context, tables []*schema.Table, options uint8) error {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	if err := tx.checkLocked(); err != nil {
		return err
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.QualifiedName()
	}
	line := fmt.Sprintf("truncate %s options=%d", strings.Join(names, ","), options)
	if err := tx.s.logLocked(line); err != nil {
		return err
	}
	tx.changes = append(tx.changes, nil)
	tx.lines = append(tx.lines, line)
	return nil
}

// finishLocked returns the transaction's changes, checking that none was
// modified after Apply (the sink owns what it is handed).
func (tx *Tx) finishLocked() []string {
	for i, ch := range tx.changes {
		if ch != nil && ChangeString(ch) != tx.lines[i] {
			tx.s.problems = append(tx.s.problems, fmt.Sprintf("change modified after Apply: %s became %s", tx.lines[i], ChangeString(ch)))
		}
	}
	return tx.lines
}

func (tx *Tx) Commit(_ context.Context, p sink.Progress) error {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	if err := tx.checkLocked(); err != nil {
		return err
	}
	if err := tx.s.logLocked("commit " + p.LSN.String()); err != nil {
		delete(tx.s.open, tx)
		return err
	}
	delete(tx.s.open, tx)
	tx.s.committed = append(tx.s.committed, tx.finishLocked()...)
	tx.s.storeLocked(p)
	return nil
}

// CommitAsync commits like Commit; with Sink.Async its error is only told by
// Settle.
func (tx *Tx) CommitAsync(ctx context.Context, p sink.Progress) error {
	err := tx.Commit(ctx, p)
	if !tx.s.Async {
		return err
	}
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	tx.s.calls = append(tx.s.calls, "(outstanding)")
	tx.s.settleErr = err
	return nil
}

// Settle returns the outcome CommitAsync held back (Async), once.
func (s *Sink) Settle(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.settleErr
	s.settleErr = nil
	return err
}

func (tx *Tx) Rollback(context.Context) error {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	if tx.epoch != tx.s.epoch || !tx.s.open[tx] {
		return nil // already gone, as with a real target
	}
	delete(tx.s.open, tx)
	tx.s.calls = append(tx.s.calls, "rollback")
	return nil
}

// TupleString formats a tuple as (v1,v2,…): text values as they are, null as
// null, unchanged TOAST as toast, binary values as b:hex.
func TupleString(t source.Tuple) string {
	if t == nil {
		return "nil"
	}
	parts := make([]string, len(t))
	for i, v := range t {
		switch v.Kind {
		case source.ValueNull:
			parts[i] = "null"
		case source.ValueUnchanged:
			parts[i] = "toast"
		case source.ValueText:
			parts[i] = string(v.Data)
		case source.ValueBinary:
			parts[i] = "b:" + hex.EncodeToString(v.Data)
		default:
			parts[i] = fmt.Sprintf("kind%q", v.Kind)
		}
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// ChangeString formats a change as the call log shows it, e.g.
// "insert public.t (1,a)", "update public.t K(1,null) (2,b)", "delete public.t O(1,a)".
func ChangeString(ch *sink.Change) string {
	old := ""
	if ch.OldKind != source.OldNone {
		old = string(ch.OldKind) + TupleString(ch.Old)
	}
	switch ch.Kind {
	case sink.Insert:
		return "insert " + ch.Table.QualifiedName() + " " + TupleString(ch.New)
	case sink.Update:
		if old != "" {
			return "update " + ch.Table.QualifiedName() + " " + old + " " + TupleString(ch.New)
		}
		return "update " + ch.Table.QualifiedName() + " " + TupleString(ch.New)
	case sink.Delete:
		return "delete " + ch.Table.QualifiedName() + " " + old
	}
	return fmt.Sprintf("change kind %q", ch.Kind)
}

// NoFacts is a schema.FactReader for a source catalog that knows nothing: the
// catalog then builds tables from the Relation messages alone.
type NoFacts struct{}

func (NoFacts) TableFacts(context.Context, string, string) (schema.TableFacts, error) {
	return schema.TableFacts{}, nil
}

func (NoFacts) TypeFacts(_ context.Context, oid uint32) (*schema.Type, error) {
	return nil, fmt.Errorf("applytest: no facts for type %d", oid)
}
