package canon

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// FromMySQL is the form of a value a MySQL/MariaDB target holds for a source
// column of Type t, stored as DESIGN.md's type mapping has it:
//
//	bool                 TINYINT(1) 1/0                  -> t/f
//	int2, int4, int8     SMALLINT, INT, BIGINT           -> as is
//	float4               FLOAT                           -> read it as float32 (the
//	                                                        binary protocol) or
//	                                                        CAST(c AS DOUBLE): FLOAT's
//	                                                        text has 6 digits only
//	float8               DOUBLE
//	numeric              DECIMAL(p,s), DECIMAL(65,30)    -> trailing zeros dropped
//	money                LONGTEXT of the C locale's text -> its amount, as numeric
//	text, varchar        LONGTEXT, VARCHAR               -> as is
//	char(n)              CHAR(n)                         -> without trailing spaces
//	bytea                LONGBLOB, VARBINARY             -> \x hex
//	date                 DATE
//	time                 TIME(6)
//	timestamp            DATETIME(6)
//	timestamptz          DATETIME(6) holding UTC         -> +00
//	uuid                 CHAR(36), or BINARY(16)         -> lower-case
//	json, jsonb          JSON                            -> jsonb's text
//	arrays               JSON array                      -> PostgreSQL's array text
//	other                VARCHAR/TEXT of PostgreSQL's text form -> as is
//
// v is what go-sql-driver/mysql returns when scanned into an any: nil,
// int64, uint64, float32, float64, []byte (sql.RawBytes too), string or
// time.Time. A time.Time is read as its wall clock for a date or timestamp
// and as an instant for a timestamptz, so open the connection with loc=UTC
// (the driver's default) when parseTime is on. A value the mapping cannot
// have written (2 in a TINYINT(1) of a bool) comes back in a form that
// differs from every form of the type, never as an error: verify reports the
// row.
func FromMySQL(t Type, v any) (Value, error) {
	if v == nil {
		return Null, nil
	}
	s, err := fromMySQL(t, v)
	if err != nil {
		return Null, fmt.Errorf("%s value %s: %w", t, describeDriverValue(v), err)
	}
	return V(s), nil
}

func describeDriverValue(v any) string {
	switch x := v.(type) {
	case []byte:
		if len(x) > 40 {
			return fmt.Sprintf("%q…", x[:40])
		}
		return fmt.Sprintf("%q", x)
	case string:
		if len(x) > 40 {
			return fmt.Sprintf("%q…", x[:40])
		}
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

func fromMySQL(t Type, v any) (string, error) {
	if tm, ok := v.(time.Time); ok {
		switch t.Kind {
		case KindDate:
			return Date(tm), nil
		case KindTimestamp:
			return Timestamp(tm), nil
		case KindTimestampTZ:
			return TimestampTZ(tm), nil
		}
		return "", fmt.Errorf("a time for a column of type %s", t)
	}
	switch t.Kind {
	case KindBool:
		n, isInt := mysqlInt(v)
		switch {
		case isInt && n == "1":
			return "t", nil
		case isInt && n == "0":
			return "f", nil
		case isInt:
			return n, nil // not a bool: a difference, not an error
		}
	case KindInt:
		if n, ok := mysqlInt(v); ok {
			return n, nil
		}
	case KindFloat4, KindFloat8:
		bits := 64
		if t.Kind == KindFloat4 {
			bits = 32
		}
		switch x := v.(type) {
		case float32:
			return Float(float64(x), bits), nil
		case float64:
			if bits == 32 && !math.IsNaN(x) && !math.IsInf(x, 0) {
				x = float64(float32(x))
			}
			return Float(x, bits), nil
		case int64:
			return Float(float64(x), bits), nil
		}
		if s, ok := mysqlText(v); ok {
			return FloatText(s, bits)
		}
	case KindNumeric, KindMoney:
		switch x := v.(type) {
		case int64:
			return strconv.FormatInt(x, 10), nil
		case uint64:
			return strconv.FormatUint(x, 10), nil
		}
		if s, ok := mysqlText(v); ok {
			if t.Kind == KindMoney {
				s = moneyAmount(s)
			}
			return NumericText(s)
		}
	case KindText, KindOther:
		switch x := v.(type) {
		case int64:
			return strconv.FormatInt(x, 10), nil
		case uint64:
			return strconv.FormatUint(x, 10), nil
		}
		if s, ok := mysqlText(v); ok {
			return s, nil
		}
	case KindChar:
		if s, ok := mysqlText(v); ok {
			return CharText(s), nil
		}
	case KindBytea:
		switch x := v.(type) {
		case []byte:
			return Bytes(x), nil
		case string:
			return Bytes([]byte(x)), nil
		}
	case KindDate:
		if s, ok := mysqlText(v); ok {
			if _, err := time.Parse(time.DateOnly, s); err != nil {
				return "", fmt.Errorf("expected YYYY-MM-DD")
			}
			return s, nil
		}
	case KindTime:
		if s, ok := mysqlText(v); ok {
			return TimeText(s)
		}
	case KindTimestamp, KindTimestampTZ:
		if s, ok := mysqlText(v); ok {
			day, clock, found := strings.Cut(s, " ")
			if !found {
				return "", fmt.Errorf("expected YYYY-MM-DD hh:mm:ss[.ffffff]")
			}
			if _, err := time.Parse(time.DateOnly, day); err != nil {
				return "", fmt.Errorf("expected YYYY-MM-DD hh:mm:ss[.ffffff]")
			}
			c, err := TimeText(clock)
			if err != nil {
				return "", err
			}
			if t.Kind == KindTimestampTZ {
				return day + " " + c + "+00", nil
			}
			return day + " " + c, nil
		}
	case KindUUID:
		if b, ok := v.([]byte); ok && len(b) == 16 {
			return UUIDBytes(b)
		}
		if s, ok := mysqlText(v); ok {
			return UUID(s)
		}
	case KindJSON, KindJSONB:
		if s, ok := mysqlText(v); ok {
			return JSON(s, t.DoubleNumbers)
		}
	case KindArray:
		if s, ok := mysqlText(v); ok {
			return ArrayFromJSON(s, t)
		}
	}
	return "", fmt.Errorf("unexpected driver value for a column of type %s", t)
}

// moneyAmount is the amount of a money value a MySQL column holds as
// PostgreSQL's text form in the C locale ("$1,234.56", "-$0.01": the type
// mapping keeps money as text): the number without "$" and the thousands'
// commas. A value without them (a DECIMAL) is returned as it is.
func moneyAmount(s string) string {
	neg := strings.HasPrefix(s, "-")
	rest := strings.TrimPrefix(s, "-")
	if !strings.HasPrefix(rest, "$") {
		return s
	}
	rest = strings.ReplaceAll(rest[1:], ",", "")
	if neg {
		return "-" + rest
	}
	return rest
}

func mysqlText(v any) (string, bool) {
	switch x := v.(type) {
	case []byte:
		return string(x), true
	case string:
		return x, true
	}
	return "", false
}

// mysqlInt is an integer value's decimal text.
func mysqlInt(v any) (string, bool) {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	}
	s, ok := mysqlText(v)
	if !ok || s == "" {
		return "", false
	}
	if _, err := strconv.ParseInt(s, 10, 64); err != nil {
		if _, err := strconv.ParseUint(s, 10, 64); err != nil {
			return "", false
		}
	}
	return s, true
}

// MySQLArg is the value to bind in a MySQL statement for a key value given
// in its form (from the source: key ranges and key lists): the inverse of
// FromMySQL for the types a key can have. Booleans bind as 1 and 0,
// timestamps without the +00 (the column holds UTC), bytea as bytes; others as
// their text, which MySQL converts to the column's type.
func MySQLArg(t Type, s string) (any, error) {
	switch t.Kind {
	case KindBool:
		switch s {
		case "t":
			return int64(1), nil
		case "f":
			return int64(0), nil
		}
		return nil, fmt.Errorf("bool key %q: expected t or f", s)
	case KindTimestampTZ:
		if !strings.HasSuffix(s, "+00") {
			return nil, fmt.Errorf("timestamptz key %q: expected UTC (+00)", s)
		}
		return strings.TrimSuffix(s, "+00"), nil
	case KindBytea:
		if !strings.HasPrefix(s, `\x`) {
			return nil, fmt.Errorf("bytea key %q: expected \\x and hex digits", s)
		}
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return nil, fmt.Errorf("bytea key %q: %w", s, err)
		}
		return b, nil
	}
	return s, nil
}
