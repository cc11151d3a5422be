package main

// This is the one file of the command that knows the kinds of target: it picks
// the sink from PGRELAY_TARGET_URL's scheme. Everything else reaches the
// target through the relay, and the relay through package sink.

import (
	"context"
	"fmt"
	"strings"

	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/postgres"
)

// targetFor returns the target cfg.TargetURL names: mysql:// a MySQL or
// MariaDB one, postgres://, postgresql:// or key=value settings a PostgreSQL
// one. Its error is the settings' (exit 2).
func targetFor(cfg *Config) (relay.Target, error) {
	url := cfg.TargetURL
	if strings.HasPrefix(strings.ToLower(url), "mysql://") {
		return relay.Target{}, fmt.Errorf("%s: MySQL/MariaDB targets are not supported by this build yet: use a PostgreSQL target (postgres://user@host:5432/db)", envName(keyTargetURL))
	}
	return relay.Target{
		Open: func(ctx context.Context, mode relay.OpenMode) (sink.Target, error) {
			return postgres.New(ctx, url, postgres.Options{KeepOrder: cfg.KeepOrder, Inspect: mode == relay.ForInspection})
		},
		Local: pgconnstr.OnThisMachine(url),
	}, nil
}
