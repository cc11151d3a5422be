package main

import (
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/apply/schemacopy"
)

func TestSchemaSettings(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u@h/db")
	cfg, err := loadValidated(t, needSource)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Schema != schemacopy.ModeAll || cfg.SchemaGrants {
		t.Fatalf("defaults: schema %q, grants %t", cfg.Schema, cfg.SchemaGrants)
	}
	t.Setenv("PGRELAY_SCHEMA", " Tables ")
	if cfg, err = loadValidated(t, needSource); err != nil || cfg.Schema != schemacopy.ModeTables {
		t.Fatalf("PGRELAY_SCHEMA=Tables: %+v, %v", cfg, err)
	}
	for _, c := range []struct{ schema, grants, want string }{
		{"everything", "", `PGRELAY_SCHEMA="everything": expected all or tables`},
		{"all", "maybe", `PGRELAY_SCHEMA_GRANTS="maybe": expected true or false`},
		{"tables", "true", `PGRELAY_SCHEMA_GRANTS="true": expected false while PGRELAY_SCHEMA=tables`},
	} {
		t.Setenv("PGRELAY_SCHEMA", c.schema)
		t.Setenv("PGRELAY_SCHEMA_GRANTS", c.grants)
		if _, err := loadValidated(t, needSource); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PGRELAY_SCHEMA=%q PGRELAY_SCHEMA_GRANTS=%q: %v, want %q", c.schema, c.grants, err, c.want)
		}
	}
	t.Setenv("PGRELAY_SCHEMA", "all")
	t.Setenv("PGRELAY_SCHEMA_GRANTS", "true")
	if cfg, err = loadValidated(t, needSource); err != nil || !cfg.SchemaGrants {
		t.Fatalf("grants on: %+v, %v", cfg, err)
	}
}
