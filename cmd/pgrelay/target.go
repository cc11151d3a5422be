package main

// This is the one file of the command that knows the kinds of target: it picks
// the sink from PGRELAY_TARGET_URL's scheme. Everything else reaches the
// target through the relay, and the relay through package sink.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/postgres"
)

// targetFor returns the target cfg.TargetURL names: mysql:// a MySQL or
// MariaDB one, postgres://, postgresql:// or key=value settings a PostgreSQL
// one. Its error is the settings' (exit 2). The sinks log to log.
func targetFor(cfg *Config, log *slog.Logger) (relay.Target, error) {
	url := cfg.TargetURL
	if strings.HasPrefix(strings.ToLower(url), "mysql://") {
		// A URL the sink cannot take is a setting's error, said at once.
		local, err := mysql.OnThisMachine(url)
		if err != nil {
			return relay.Target{}, fmt.Errorf("%s: %w", envName(keyTargetURL), err)
		}
		// The source's stream carries values in text form: a MySQL target
		// converts them from PostgreSQL's text (the relay never asks
		// pgoutput for binary values).
		return relay.Target{
			Open: func(ctx context.Context, mode relay.OpenMode) (sink.Target, error) {
				return mysql.New(ctx, url, mysql.Options{Logger: log, UnfitAsNull: cfg.MySQLUnfit == "null", KeepOrder: cfg.KeepOrder, Inspect: mode == relay.ForInspection})
			},
			Local: local,
		}, nil
	}
	return relay.Target{
		Open: func(ctx context.Context, mode relay.OpenMode) (sink.Target, error) {
			return postgres.New(ctx, url, postgres.Options{KeepOrder: cfg.KeepOrder, Inspect: mode == relay.ForInspection})
		},
		Local: pgconnstr.OnThisMachine(url),
	}, nil
}
