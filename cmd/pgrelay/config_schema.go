package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/viper"

	"github.com/pgrelay/pgrelay/apply/schemacopy"
	"github.com/pgrelay/pgrelay/sink/postgres"
)

// Settings of what a migration carries besides the tables (docs/migration.md).
const (
	keySchema       = "schema"
	keySchemaGrants = "schema_grants"
)

// schemaSettings say what goes to the target with the tables.
type schemaSettings struct {
	// Mode is tables or all (PGRELAY_SCHEMA).
	Mode string
	// Grants carries the privileges granted on what is carried
	// (PGRELAY_SCHEMA_GRANTS).
	Grants bool

	rawGrants string
}

func loadSchemaSettings(v *viper.Viper) schemaSettings {
	return schemaSettings{Mode: v.GetString(keySchema), rawGrants: v.GetString(keySchemaGrants)}
}

// validate applies the defaults and returns the problems found.
func (s *schemaSettings) validate() []error {
	var errs []error
	s.Mode = strings.ToLower(strings.TrimSpace(s.Mode))
	if s.Mode == "" {
		s.Mode = defaultOf(keySchema)
	}
	if err := oneOf(keySchema, s.Mode, schemacopy.ModeTables, schemacopy.ModeAll); err != nil {
		errs = append(errs, err)
	}
	var err error
	if s.Grants, err = parseBool(keySchemaGrants, s.rawGrants); err != nil {
		errs = append(errs, err)
	}
	if s.Grants && s.Mode == schemacopy.ModeTables {
		errs = append(errs, fmt.Errorf("%s=true needs %s=all: grants are carried with the schema objects", envName(keySchemaGrants), envName(keySchema)))
	}
	return errs
}

// schemaCopy is the configuration of the schema steps of a run.
func (c *Config) schemaCopy(log *slog.Logger) schemacopy.Config {
	return schemacopy.Config{Schema: c.Schema.Mode, Publication: c.Publication, Grants: c.Schema.Grants,
		Skip: []string{postgres.MetadataSchema}, Log: log}
}
