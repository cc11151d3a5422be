// Package pgquote quotes identifiers and string literals for PostgreSQL SQL
// text, for the statements whose names and values cannot be bind parameters
// (DDL, replication commands, catalog lookups by name).
package pgquote

import "strings"

// Ident double-quotes an identifier, doubling embedded double quotes. NUL,
// which no PostgreSQL name can hold, is dropped.
func Ident(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), `"`, `""`) + `"`
}

// Literal quotes a string literal that means the same whatever the server's
// standard_conforming_strings says: embedded single quotes are doubled, and a
// string with backslashes becomes an E-prefixed literal with them doubled.
// NUL, which no PostgreSQL text can hold, is dropped.
func Literal(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	s = strings.ReplaceAll(s, "'", "''")
	if strings.Contains(s, `\`) {
		return `E'` + strings.ReplaceAll(s, `\`, `\\`) + `'`
	}
	return "'" + s + "'"
}

// CommandLiteral quotes a string literal of a replication command
// (START_REPLICATION's options), whose grammar knows no E-prefixed strings
// and takes backslashes as they are: embedded single quotes are doubled, NUL
// dropped.
func CommandLiteral(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "'", "''") + "'"
}

// Name writes a qualified name (schema.table, schema.table.column) for a
// person to read, as quote_ident would (keywords aside): each part as it is
// when it is a plain lower-case identifier, double-quoted otherwise, so
// that public."a.b,c" cannot be read as three names.
func Name(parts ...string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = displayIdent(p)
	}
	return strings.Join(out, ".")
}

func displayIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return Ident(s)
}
