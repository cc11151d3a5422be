package schema

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrUnfit is wrapped by every UnfitError: a source value the MySQL column
// cannot hold as it is (NaN, an infinite date, a year outside 1000-9999, more
// digits than the DECIMAL keeps). pgrelay never stores a changed value in its
// place.
var ErrUnfit = errors.New("the value does not fit its MySQL column")

// UnfitError says which value of which column MySQL cannot hold, and why.
type UnfitError struct {
	Column string // the column's name
	Type   string // the source type
	Value  string // the source value's text, cut to 64 characters
	Reason string
}

func (e *UnfitError) Error() string {
	return fmt.Sprintf("column %q (%s) value %s: %s", e.Column, e.Type, quoteValue(e.Value), e.Reason)
}

// Is makes errors.Is(err, ErrUnfit) hold.
func (e *UnfitError) Is(target error) bool { return target == ErrUnfit }

// quoteValue quotes a value for an error message on one line, cut to 64
// characters.
func quoteValue(s string) string {
	if utf8.RuneCountInString(s) > 64 {
		r := []rune(s)
		s = string(r[:63]) + "…"
	}
	return strconv.Quote(s)
}

// MySQLValueKind says how a converted value is written to MySQL.
type MySQLValueKind uint8

const (
	// MySQLNull is SQL NULL.
	MySQLNull MySQLValueKind = iota
	// MySQLNumber is a numeric literal, written without quotes: an integer
	// column compared with a quoted string is compared as a double, which
	// makes 2^53+1 equal to 2^53.
	MySQLNumber
	// MySQLString is text, written as a quoted string.
	MySQLString
	// MySQLBytes are raw bytes (bytea), written as a hex literal.
	MySQLBytes
)

// MySQLValue is a source value converted for its MySQL column. Data may
// share memory with the source value's text.
type MySQLValue struct {
	Kind MySQLValueKind
	Data []byte
}

// myKind is how a column's values convert.
type myKind uint8

const (
	myText        myKind = iota // text form as it is
	myChar                      // CHAR(n): text form without trailing spaces (CHAR drops them)
	myBinary                    // bytea: hex or escape form to bytes
	myBool                      // t/f to 1/0
	myInt                       // integer literal
	myFloat                     // float4: no NaN or infinity
	myDouble                    // float8: no NaN or infinity
	myDecimal                   // numeric: exact, within DECIMAL(p,s)
	myDate                      // years 1000-9999, no infinity
	myTime                      // no 24:00:00
	myDatetime                  // timestamp: years 1000-9999, no infinity
	myDatetimeUTC               // timestamptz: to UTC, then as timestamp
	myJSON                      // json, jsonb
	myArray                     // a PostgreSQL array as a JSON array
)

// myElem is how an array's elements convert into JSON.
type myElem uint8

const (
	elemString myElem = iota // a JSON string of the element's text
	elemNumber               // a JSON number; NaN and infinities do not fit
	elemBool                 // true, false
	elemJSON                 // the element's text is JSON already
)

// converter converts the values of one column.
type converter struct {
	kind      myKind
	name      string // column name, for errors
	typeName  string // source type, for errors
	bits      int    // myInt: 16, 32, 64; 0 for oid (unsigned 32)
	precision int    // myDecimal
	scale     int    // myDecimal
	elem      myElem // myArray
	delim     byte   // myArray: the element delimiter (',' but ';' for box)
	doubles   bool   // the server's JSON keeps non-integer numbers as doubles
}

func (c *converter) unfit(text []byte, reason string, args ...any) error {
	return &UnfitError{Column: c.name, Type: c.typeName, Value: string(text), Reason: fmt.Sprintf(reason, args...)}
}

// convert turns a value's text form into what MySQL stores.
func (c *converter) convert(text []byte) (MySQLValue, error) {
	switch c.kind {
	case myText:
		return MySQLValue{Kind: MySQLString, Data: text}, nil
	case myChar:
		end := len(text)
		for end > 0 && text[end-1] == ' ' {
			end--
		}
		return MySQLValue{Kind: MySQLString, Data: text[:end]}, nil
	case myBinary:
		b, err := decodeBytea(text)
		if err != nil {
			return MySQLValue{}, c.unfit(text, "%v", err)
		}
		return MySQLValue{Kind: MySQLBytes, Data: b}, nil
	case myBool:
		switch string(text) {
		case "t", "true":
			return MySQLValue{Kind: MySQLNumber, Data: []byte("1")}, nil
		case "f", "false":
			return MySQLValue{Kind: MySQLNumber, Data: []byte("0")}, nil
		}
		return MySQLValue{}, c.unfit(text, "not a boolean")
	case myInt:
		if c.bits == 0 {
			if _, err := strconv.ParseUint(string(text), 10, 32); err != nil {
				return MySQLValue{}, c.unfit(text, "not an oid")
			}
		} else if _, err := strconv.ParseInt(string(text), 10, c.bits); err != nil {
			return MySQLValue{}, c.unfit(text, "not a %d-bit integer", c.bits)
		}
		return MySQLValue{Kind: MySQLNumber, Data: text}, nil
	case myFloat:
		if err := c.checkFloat(text); err != nil {
			return MySQLValue{}, err
		}
		// The float4 as the exact double it is: MySQL reads a literal as a
		// double, and would refuse PostgreSQL's shortest text of the largest
		// float4 (3.4028235e+38, above it as a double) and round others twice.
		f, _ := strconv.ParseFloat(string(text), 32)
		return MySQLValue{Kind: MySQLNumber, Data: strconv.AppendFloat(nil, f, 'g', -1, 64)}, nil
	case myDouble:
		if err := c.checkFloat(text); err != nil {
			return MySQLValue{}, err
		}
		return MySQLValue{Kind: MySQLNumber, Data: text}, nil
	case myDecimal:
		d, err := fitDecimal(text, c.precision, c.scale)
		if err != nil {
			return MySQLValue{}, c.unfit(text, "%v", err)
		}
		return MySQLValue{Kind: MySQLNumber, Data: d}, nil
	case myDate:
		if err := checkDate(text); err != nil {
			return MySQLValue{}, c.unfit(text, "%v", err)
		}
		return MySQLValue{Kind: MySQLString, Data: text}, nil
	case myTime:
		if len(text) >= 8 && string(text[:8]) == "24:00:00" {
			return MySQLValue{}, c.unfit(text, "24:00:00 is the end of a day, which a MySQL TIME holds as a duration: the value would read back differently")
		}
		return MySQLValue{Kind: MySQLString, Data: text}, nil
	case myDatetime:
		if err := checkTimestamp(text); err != nil {
			return MySQLValue{}, c.unfit(text, "%v", err)
		}
		return MySQLValue{Kind: MySQLString, Data: text}, nil
	case myDatetimeUTC:
		utc, err := timestamptzToUTC(text)
		if err != nil {
			return MySQLValue{}, c.unfit(text, "%v", err)
		}
		return MySQLValue{Kind: MySQLString, Data: utc}, nil
	case myJSON:
		if c.doubles {
			if err := checkJSONNumbers(text); err != nil {
				return MySQLValue{}, c.unfit(text, "%v", err)
			}
		}
		return MySQLValue{Kind: MySQLString, Data: text}, nil
	case myArray:
		js, err := c.arrayToJSON(text)
		if err != nil {
			return MySQLValue{}, c.unfit(text, "%v", err)
		}
		return MySQLValue{Kind: MySQLString, Data: js}, nil
	}
	return MySQLValue{}, c.unfit(text, "no conversion for this type")
}

func (c *converter) checkFloat(text []byte) error {
	s := string(text)
	switch s {
	case "NaN", "Infinity", "-Infinity":
		return c.unfit(text, "MySQL's FLOAT and DOUBLE hold no NaN or infinity")
	}
	if !isDecimalNumber(s, true) {
		return c.unfit(text, "not a number")
	}
	bits := 64
	if c.kind == myFloat {
		bits = 32
	}
	if _, err := strconv.ParseFloat(s, bits); err != nil {
		return c.unfit(text, "out of range")
	}
	return nil
}

// isDecimalNumber reports whether s is [-]digits[.digits][e[+-]digits] (the
// exponent only with exp), the forms PostgreSQL prints numbers in and JSON
// takes.
func isDecimalNumber(s string, exp bool) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	digits := i - start
	if i < len(s) && s[i] == '.' {
		i++
		f := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		digits += i - f
	}
	if digits == 0 {
		return false
	}
	if exp && i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		e := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == e {
			return false
		}
	}
	return i == len(s)
}

// fitDecimal returns numeric text as DECIMAL(precision, scale) takes it
// without rounding: leading zeros of the integer part and trailing zeros of
// the fraction dropped. More digits than the column keeps on either side is
// an error, as are NaN and the infinities.
func fitDecimal(text []byte, precision, scale int) ([]byte, error) {
	s := string(text)
	switch s {
	case "NaN", "Infinity", "-Infinity":
		return nil, errors.New("MySQL's DECIMAL holds no NaN or infinity")
	}
	if !isDecimalNumber(s, true) {
		return nil, errors.New("not a number")
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 1000 || e < -1000 {
			return nil, errors.New("exponent out of range")
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	point := len(intPart) + exp // digits before the point
	for point < 0 {
		digits, point = "0"+digits, point+1
	}
	for point > len(digits) {
		digits += "0"
	}
	intPart, frac = strings.TrimLeft(digits[:point], "0"), strings.TrimRight(digits[point:], "0")
	if len(intPart) > precision-scale {
		return nil, fmt.Errorf("%d digits before the point; DECIMAL(%d,%d) keeps %d", len(intPart), precision, scale, precision-scale)
	}
	if len(frac) > scale {
		return nil, fmt.Errorf("%d digits after the point; DECIMAL(%d,%d) keeps %d", len(frac), precision, scale, scale)
	}
	var b strings.Builder
	if neg && (intPart != "" || frac != "") {
		b.WriteByte('-')
	}
	if intPart == "" {
		intPart = "0"
	}
	b.WriteString(intPart)
	if frac != "" {
		b.WriteString("." + frac)
	}
	return []byte(b.String()), nil
}

// decodeBytea decodes bytea's text form: hex (\x…) or the escape form.
func decodeBytea(text []byte) ([]byte, error) {
	if len(text) >= 2 && text[0] == '\\' && text[1] == 'x' {
		out := make([]byte, (len(text)-2)/2)
		if _, err := hex.Decode(out, text[2:]); err != nil {
			return nil, errors.New("bad hex in bytea")
		}
		return out, nil
	}
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			out = append(out, text[i])
			continue
		}
		switch {
		case i+1 < len(text) && text[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(text) && isOctal(text[i+1]) && isOctal(text[i+2]) && isOctal(text[i+3]):
			out = append(out, (text[i+1]-'0')<<6|(text[i+2]-'0')<<3|(text[i+3]-'0'))
			i += 3
		default:
			return nil, errors.New("bad escape in bytea")
		}
	}
	return out, nil
}

func isOctal(b byte) bool { return b >= '0' && b <= '7' }

const unfitYears = "MySQL's DATE and DATETIME hold years 1000 to 9999"

// checkDate accepts YYYY-MM-DD with a year MySQL holds.
func checkDate(text []byte) error {
	s := string(text)
	if s == "infinity" || s == "-infinity" {
		return errors.New("MySQL has no infinite dates")
	}
	if strings.HasSuffix(s, " BC") {
		return errors.New(unfitYears)
	}
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		if len(s) > 10 && s[4] != '-' {
			return errors.New(unfitYears)
		}
		return errors.New("not a date in ISO form (YYYY-MM-DD)")
	}
	if y, err := strconv.Atoi(s[:4]); err != nil || y < 1000 {
		return errors.New(unfitYears)
	}
	return nil
}

// checkTimestamp accepts YYYY-MM-DD HH:MM:SS[.ffffff] with a year MySQL holds.
func checkTimestamp(text []byte) error {
	s := string(text)
	if s == "infinity" || s == "-infinity" {
		return errors.New("MySQL has no infinite timestamps")
	}
	if len(s) < 19 || s[10] != ' ' {
		if len(s) > 10 && s[4] != '-' || strings.HasSuffix(s, " BC") {
			return errors.New(unfitYears)
		}
		return errors.New("not a timestamp in ISO form (YYYY-MM-DD HH:MM:SS)")
	}
	if strings.HasSuffix(s, " BC") {
		return errors.New(unfitYears)
	}
	return checkDate(text[:10])
}

// timestamptzToUTC turns timestamptz's text form (ISO, with the session's
// offset: 2024-05-06 07:08:09.123456+02, +05:30, -03:00:15) into the UTC
// time MySQL's DATETIME holds.
func timestamptzToUTC(text []byte) ([]byte, error) {
	s := string(text)
	if s == "infinity" || s == "-infinity" {
		return nil, errors.New("MySQL has no infinite timestamps")
	}
	if strings.HasSuffix(s, " BC") {
		return nil, errors.New(unfitYears)
	}
	if len(s) < 22 || s[10] != ' ' || s[4] != '-' {
		if len(s) > 10 && s[4] != '-' {
			return nil, errors.New(unfitYears)
		}
		return nil, errors.New("not a timestamp with time zone in ISO form")
	}
	// The offset starts at the last + or - after the time.
	at := strings.LastIndexAny(s[19:], "+-")
	if at < 0 {
		return nil, errors.New("no time zone offset")
	}
	at += 19
	local, zone := s[:at], s[at:]
	sign := 1
	if zone[0] == '-' {
		sign = -1
	}
	var offset int
	for i, part := range strings.Split(zone[1:], ":") {
		n, err := strconv.Atoi(part)
		if err != nil || i > 2 || len(part) != 2 {
			return nil, errors.New("bad time zone offset")
		}
		offset += n * []int{3600, 60, 1}[i]
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", local, time.FixedZone("", sign*offset))
	if err != nil {
		return nil, errors.New("not a timestamp with time zone in ISO form")
	}
	t = t.UTC()
	if t.Year() < 1000 || t.Year() > 9999 {
		return nil, errors.New(unfitYears + " (in UTC)")
	}
	return []byte(t.Format("2006-01-02 15:04:05.999999")), nil
}

// checkJSONNumbers fails on a number of a JSON document that a server keeping
// numbers as doubles would change: one that is neither a 64-bit integer nor
// read back the same from the nearest double.
func checkJSONNumbers(doc []byte) error {
	for i := 0; i < len(doc); {
		c := doc[i]
		switch {
		case c == '"':
			i++
			for i < len(doc) && doc[i] != '"' {
				if doc[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(doc) && (doc[j] >= '0' && doc[j] <= '9' || doc[j] == '.' || doc[j] == 'e' || doc[j] == 'E' || doc[j] == '+' || doc[j] == '-') {
				j++
			}
			if err := jsonNumberFits(string(doc[i:j])); err != nil {
				return err
			}
			i = j
		default:
			i++
		}
	}
	return nil
}

// jsonNumberFits reports whether MySQL's JSON keeps the number tok as it is.
func jsonNumberFits(tok string) error {
	if !strings.ContainsAny(tok, ".eE") {
		if _, err := strconv.ParseInt(tok, 10, 64); err == nil {
			return nil
		}
		if _, err := strconv.ParseUint(tok, 10, 64); err == nil {
			return nil
		}
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return fmt.Errorf("the JSON number %s is beyond a double, which MySQL's JSON keeps numbers in", tok)
	}
	if sameDecimal(tok, strconv.FormatFloat(f, 'e', -1, 64)) {
		return nil
	}
	return fmt.Errorf("the JSON number %s has more precision than a double, which MySQL's JSON keeps numbers in: it would read back as %s",
		tok, strconv.FormatFloat(f, 'g', -1, 64))
}

// sameDecimal reports whether two decimal numbers in text are the same number.
func sameDecimal(a, b string) bool {
	na, ea, oka := normDecimal(a)
	nb, eb, okb := normDecimal(b)
	return oka && okb && na == nb && (na == "" || na == "-" || ea == eb)
}

// normDecimal returns a number's significant digits (with its sign) and the
// exponent of the first of them.
func normDecimal(s string) (digits string, exp int, ok bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	mant := s
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return "", 0, false
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	all := intPart + frac
	exp += len(intPart)
	trimmed := strings.TrimLeft(all, "0")
	exp -= len(all) - len(trimmed)
	trimmed = strings.TrimRight(trimmed, "0")
	if trimmed == "" {
		return "", 0, true // zero, whatever its sign
	}
	if neg {
		trimmed = "-" + trimmed
	}
	return trimmed, exp, true
}

// arrayToJSON turns an array's text form ({1,2}, {{"a b",NULL}}) into a JSON
// array, nested for several dimensions. Arrays whose lower bound is not 1
// (the text starts with [l:u]=) do not fit: JSON arrays start at 0 with no
// bound to keep.
func (c *converter) arrayToJSON(text []byte) ([]byte, error) {
	if len(text) > 0 && text[0] == '[' {
		return nil, errors.New("an array with explicit bounds ([l:u]={…}) has no JSON form that keeps them")
	}
	p := arrayParser{s: text, delim: c.delim}
	out := make([]byte, 0, len(text)+8)
	out, err := p.array(out, c)
	if err != nil {
		return nil, err
	}
	if p.i != len(p.s) {
		return nil, errors.New("bad array text")
	}
	return out, nil
}

type arrayParser struct {
	s     []byte
	i     int
	delim byte
}

func (p *arrayParser) array(out []byte, c *converter) ([]byte, error) {
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return nil, errors.New("bad array text")
	}
	p.i++
	out = append(out, '[')
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return append(out, ']'), nil
	}
	for first := true; ; first = false {
		if !first {
			out = append(out, ',')
		}
		var err error
		switch {
		case p.i < len(p.s) && p.s[p.i] == '{':
			out, err = p.array(out, c)
		case p.i < len(p.s) && p.s[p.i] == '"':
			var elem []byte
			if elem, err = p.quoted(); err == nil {
				out, err = c.element(out, elem)
			}
		default:
			start := p.i
			for p.i < len(p.s) && p.s[p.i] != p.delim && p.s[p.i] != '}' {
				p.i++
			}
			elem := p.s[start:p.i]
			if string(elem) == "NULL" {
				out = append(out, "null"...)
			} else {
				out, err = c.element(out, elem)
			}
		}
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.s) {
			return nil, errors.New("bad array text")
		}
		if p.s[p.i] == '}' {
			p.i++
			return append(out, ']'), nil
		}
		if p.s[p.i] != p.delim {
			return nil, errors.New("bad array text")
		}
		p.i++
	}
}

func (p *arrayParser) quoted() ([]byte, error) {
	p.i++ // opening quote
	var elem []byte
	for p.i < len(p.s) {
		switch b := p.s[p.i]; b {
		case '\\':
			if p.i+1 >= len(p.s) {
				return nil, errors.New("bad array text")
			}
			elem = append(elem, p.s[p.i+1])
			p.i += 2
		case '"':
			p.i++
			return elem, nil
		default:
			elem = append(elem, b)
			p.i++
		}
	}
	return nil, errors.New("bad array text")
}

// element appends one array element as JSON.
func (c *converter) element(out, elem []byte) ([]byte, error) {
	switch c.elem {
	case elemNumber:
		s := string(elem)
		switch s {
		case "NaN", "Infinity", "-Infinity":
			return nil, fmt.Errorf("JSON has no %s", s)
		}
		if !isDecimalNumber(s, true) {
			return nil, fmt.Errorf("the element %s is not a number", quoteValue(s))
		}
		if c.doubles {
			if err := jsonNumberFits(s); err != nil {
				return nil, err
			}
		}
		s = strings.TrimPrefix(s, "+")
		return append(out, s...), nil
	case elemBool:
		switch string(elem) {
		case "t", "true":
			return append(out, "true"...), nil
		case "f", "false":
			return append(out, "false"...), nil
		}
		return nil, fmt.Errorf("the element %s is not a boolean", quoteValue(string(elem)))
	case elemJSON:
		if c.doubles {
			if err := checkJSONNumbers(elem); err != nil {
				return nil, err
			}
		}
		return append(out, elem...), nil
	}
	return appendJSONString(out, elem), nil
}

// appendJSONString appends s as a JSON string.
func appendJSONString(out, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for _, b := range s {
		switch {
		case b == '"' || b == '\\':
			out = append(out, '\\', b)
		case b == '\n':
			out = append(out, '\\', 'n')
		case b == '\r':
			out = append(out, '\\', 'r')
		case b == '\t':
			out = append(out, '\\', 't')
		case b < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&15])
		default:
			out = append(out, b)
		}
	}
	return append(out, '"')
}
