package main

// This is the one file of the command that knows the kinds of target: it picks
// the sink from PGRELAY_TARGET_URL's scheme. Everything else reaches the
// target through the relay, and the relay through package sink.

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/apply/verify"
	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/postgres"
	"github.com/pgrelay/pgrelay/source"
)

// targetFor returns the target cfg.TargetURL names: mysql:// a MySQL or
// MariaDB one, postgres://, postgresql:// or key=value settings a PostgreSQL
// one. Its error is the settings' (exit 2).
func targetFor(cfg *Config) (relay.Target, error) {
	url := cfg.TargetURL
	if strings.HasPrefix(strings.ToLower(url), "mysql://") {
		return relay.Target{}, fmt.Errorf("%s: MySQL/MariaDB targets are not supported by this build yet: use a PostgreSQL target (postgres://user@host:5432/db)", envName(keyTargetURL))
	}
	opts := postgres.Options{KeepOrder: cfg.KeepOrder}
	return relay.Target{
		Open: func(ctx context.Context) (sink.Target, error) {
			return postgres.New(ctx, url, opts)
		},
		Local: pgconnstr.OnThisMachine(url),
		OpenVerify: func(ctx context.Context, slot string) (relay.VerifyTarget, error) {
			pcfg, err := pgconnstr.ParsePgx(url)
			if err != nil {
				return nil, fmt.Errorf("target: cannot parse the target URL")
			}
			conn, err := pgx.ConnectConfig(ctx, pcfg)
			if err != nil {
				return nil, source.DescribeConnectError("target", &pcfg.Config, err)
			}
			t, err := verify.NewPostgresTarget(ctx, conn, slot)
			if err != nil {
				conn.Close(context.WithoutCancel(ctx))
				return nil, err
			}
			return pgVerifyTarget{t, conn}, nil
		},
	}, nil
}

// pgVerifyTarget is verify's PostgreSQL target with the connection it reads on.
type pgVerifyTarget struct {
	*verify.PostgresTarget
	conn *pgx.Conn
}

func (t pgVerifyTarget) Close(ctx context.Context) error { return t.conn.Close(ctx) }
