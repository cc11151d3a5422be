package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// compositeFacts is a source catalog with one composite type, whose
// attributes the test changes as ALTER TYPE would.
type compositeFacts struct {
	attrs []schema.Attribute
}

const oidPair = 20000

func (f *compositeFacts) TableFacts(ctx context.Context, _, _ string) (schema.TableFacts, error) {
	typ, err := f.TypeFacts(ctx, oidPair)
	return schema.TableFacts{Types: map[uint32]*schema.Type{oidPair: typ}}, err
}

func (f *compositeFacts) TypeFacts(_ context.Context, oid uint32) (*schema.Type, error) {
	if oid != oidPair {
		return nil, errors.New("no such type")
	}
	return &schema.Type{OID: oidPair, Namespace: "public", Name: "pair", Category: schema.CategoryComposite, BaseOID: oidPair,
		Attributes: append([]schema.Attribute(nil), f.attrs...)}, nil
}

// A value the target refuses is retried (by a new session) only when a type
// the tables use has changed on the source since it was read: the stream
// says nothing of ALTER TYPE. Refused for any other reason it stays fatal,
// or bad data would be retried forever.
func TestValueRejectedRetriedOnlyAfterTypeChange(t *testing.T) {
	for _, changed := range []bool{false, true} {
		facts := &compositeFacts{attrs: []schema.Attribute{{Name: "a", TypeOID: oidInt4, TypeName: "integer"}, {Name: "b", TypeOID: oidText, TypeName: "text"}}}
		s := applytest.New(0)
		refused := sink.ValueRejected(errors.New(`insert into "public"."t1": invalid input syntax for type integer: "y"`))
		s.Fail = func(call string) error {
			if strings.HasPrefix(call, "insert public.t1 (2,") {
				return refused
			}
			return nil
		}
		h := newHarnessFacts(t, testConfig(t), s, facts)
		r := &source.Relation{RelationID: 1, Namespace: "public", Name: "t1", ReplicaIdentity: 'd', Columns: []source.RelationColumn{
			{Flags: source.ColumnFlagKey, Name: "id", TypeOID: oidInt4, TypeMod: -1}, {Name: "p", TypeOID: oidPair, TypeMod: -1}}}
		h.feed(0x10, r)
		h.feed(0xff, begin(1, 0x100), ins(1, "1", "(1,x)"), commit(0x100, 0x108))
		if changed {
			facts.attrs = facts.attrs[1:] // ALTER TYPE pair DROP ATTRIBUTE a
		}
		h.feed(0x10f, begin(2, 0x110))
		err := h.a.Handle(context.Background(), 0x10f, ins(1, "2", "(y)"))
		if !errors.Is(err, refused) {
			t.Fatalf("changed=%v: got %v, want the sink's error", changed, err)
		}
		if got := errors.Is(err, sink.ErrRetryable); got != changed {
			t.Errorf("changed=%v: retryable %v, want %v (%v)", changed, got, changed, err)
		}
		if changed && !strings.Contains(err.Error(), "type public.pair changed on the source") {
			t.Errorf("the error does not name the changed type: %v", err)
		}
		if ferr := h.a.Flush(context.Background()); ferr != err {
			t.Errorf("changed=%v: Flush after failure returned %v, want %v", changed, ferr, err)
		}
	}
}
