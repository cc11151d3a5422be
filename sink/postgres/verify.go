package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgverify"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

var (
	_ sink.Verifier        = (*Sink)(nil)
	_ sink.VerifySession   = (*verifySession)(nil)
	_ sink.VerifyChecksums = (*verifySession)(nil)
)

// OpenVerify implements sink.Verifier: a read-only session of its own
// (package internal/pgverify), without the apply session's replica
// settings, whose reads report the position pgrelay.progress holds for slot
// in their snapshot. The target's types are the source's, so values take
// their canonical form on the server and checksums are computed there.
func (s *Sink) OpenVerify(ctx context.Context, slot string) (sink.VerifySession, error) {
	cfg := s.config.Copy()
	for _, k := range []string{"session_replication_role", "enable_seqscan", "jit"} {
		delete(cfg.RuntimeParams, k)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, classify(source.DescribeConnectError("target", &cfg.Config, err), true)
	}
	v, err := newVerifySession(ctx, conn, slot, s.dialect)
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return v, nil
}

type verifySession struct {
	*pgverify.Reader
	slot    string
	dialect schema.Dialect
	// hasProgress and hasRelationOID tell what of pgrelay's metadata exists.
	hasProgress, hasRelationOID bool
}

func newVerifySession(ctx context.Context, conn *pgx.Conn, slot string, dialect schema.Dialect) (*verifySession, error) {
	r, err := pgverify.NewReader(ctx, conn, "target")
	if err != nil {
		return nil, err
	}
	v := &verifySession{Reader: r, slot: slot, dialect: dialect}
	err = conn.QueryRow(ctx, `SELECT to_regclass('`+MetadataSchema+`.progress') IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass('`+MetadataSchema+`.relation') AND attname = 'relation_oid')`).
		Scan(&v.hasProgress, &v.hasRelationOID)
	if err != nil {
		return nil, fmt.Errorf("target: look for pgrelay's metadata: %w", err)
	}
	if v.hasProgress {
		r.SetPosition("(SELECT p.lsn FROM "+MetadataSchema+".progress p WHERE p.slot = $%d)::text", slot)
	}
	return v, nil
}

// HasMetadata implements sink.VerifySession.
func (v *verifySession) HasMetadata() bool { return v.hasProgress }

// CopyInProgress implements sink.VerifySession.
func (v *verifySession) CopyInProgress(ctx context.Context) (bool, error) {
	if !v.hasProgress {
		return false, nil
	}
	var done bool
	err := v.Conn().QueryRow(ctx, "SELECT snapshot_done FROM "+MetadataSchema+".seed WHERE slot = $1", v.slot).Scan(&done)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("target: read the seed state of slot %q: %w", v.slot, err)
	}
	return !done, nil
}

// Applied implements sink.VerifySession.
func (v *verifySession) Applied(ctx context.Context) (source.LSN, error) {
	if !v.hasProgress {
		return 0, nil
	}
	var text *string
	err := v.Conn().QueryRow(ctx, "SELECT lsn::text FROM "+MetadataSchema+".progress WHERE slot = $1", v.slot).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("target: read the applied position of slot %q: %w", v.slot, err)
	}
	return pgverify.ParseLSN("target", text)
}

// Locate implements sink.VerifySession: the dialect's target name; failing
// that, the target table whose stored definition has the same source
// relation OID under this slot.
func (v *verifySession) Locate(ctx context.Context, src sink.VerifyName, relationOID uint32) (sink.VerifyName, bool, error) {
	sch, name := v.dialect.TargetTable(&schema.Table{Schema: src.Schema, Name: src.Name, RelationID: relationOID})
	want := sink.VerifyName{Schema: sch, Name: name}
	found, err := v.Exists(ctx, want)
	if err != nil || found || !v.hasRelationOID || relationOID == 0 {
		return want, found, err
	}
	var other sink.VerifyName
	err = v.Conn().QueryRow(ctx, `SELECT schema, name FROM `+MetadataSchema+`.relation WHERE slot = $1 AND relation_oid = $2
		ORDER BY updated_at DESC LIMIT 1`, v.slot, relationOID).Scan(&other.Schema, &other.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return want, false, nil
	}
	if err != nil {
		return want, false, fmt.Errorf("target: look up the stored definition of %s: %w", src, err)
	}
	found, err = v.Exists(ctx, other)
	if err != nil || !found {
		return want, false, err
	}
	return other, true, nil
}

// Close implements sink.VerifySession.
func (v *verifySession) Close(ctx context.Context) error { return v.Conn().Close(ctx) }
