package canon

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Bool is the form of a boolean: t or f.
func Bool(b bool) string {
	if b {
		return "t"
	}
	return "f"
}

// Int is the form of an integer.
func Int(i int64) string { return strconv.FormatInt(i, 10) }

// Float is the form of a float8 (bits 64) or float4 (bits 32) value:
// PostgreSQL 12+'s output. That is the shortest decimal strictly inside the
// value's rounding interval (never the exact midpoint to a neighbour, which
// only reads back under round-half-even), laid out fixed-point for decimal
// exponents from -4 up to 14 (float4: 5), otherwise d.ddde±XX. -0 is 0: as
// PostgreSQL's = says, and MySQL and MariaDB cannot hold -0.
func Float(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	sign := ""
	if f < 0 {
		sign = "-"
	}
	digits, exp := shortestDigits(math.Abs(f), bits)
	limit := 15
	if bits == 32 {
		limit = 6
	}
	if exp < -4 || exp >= limit {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		esign := "+"
		if exp < 0 {
			esign, exp = "-", -exp
		}
		es := strconv.Itoa(exp)
		if len(es) < 2 {
			es = "0" + es
		}
		return sign + m + "e" + esign + es
	}
	switch {
	case exp < 0:
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	case len(digits) <= exp+1:
		return sign + digits + strings.Repeat("0", exp+1-len(digits))
	default:
		return sign + digits[:exp+1] + "." + digits[exp+1:]
	}
}

// splitE splits strconv's d.ddde±x into its digits and decimal exponent.
func splitE(s string) (digits string, exp int) {
	e := strings.IndexByte(s, 'e')
	exp, _ = strconv.Atoi(s[e+1:])
	return strings.Replace(s[:e], ".", "", 1), exp
}

// shortestDigits are the digits and decimal exponent (d.ddd × 10^exp) of
// the shortest decimal strictly inside the rounding interval of f > 0, the
// one nearest f among those. strconv's shortest may be a midpoint between
// f and a neighbour (it reads back to f only by round-half-even); then the
// next lengths are tried, as PostgreSQL's Ryu (built without
// STRICTLY_SHORTEST) does.
func shortestDigits(f float64, bits int) (string, int) {
	digits, exp := splitE(strconv.FormatFloat(f, 'e', -1, bits))
	if !isMidpoint(digits, exp, f, bits) {
		return digits, exp
	}
	fb := new(big.Float).SetPrec(256).SetFloat64(f)
	for p := len(digits); p <= 17; p++ {
		best, bestDist := "", (*big.Float)(nil)
		bestExp := 0
		near := strconv.FormatFloat(f, 'e', p-1, bits) // correctly rounded to p digits
		nd, ne := splitE(near)
		for _, step := range []int{0, 1, -1} {
			cd, ce, ok := stepDigits(nd, ne, step)
			if !ok || !inside(cd, ce, f, bits) {
				continue
			}
			d := decimalFloat(cd, ce)
			d.Sub(d, fb).Abs(d)
			if bestDist == nil || d.Cmp(bestDist) < 0 {
				best, bestExp, bestDist = cd, ce, d
			}
		}
		if best != "" {
			return strings.TrimRight(best, "0"), bestExp
		}
	}
	return digits, exp
}

// stepDigits adds step (±1, or 0) to the last of digits (d.ddd × 10^exp),
// keeping their number; ok is false when that would change it.
func stepDigits(digits string, exp, step int) (string, int, bool) {
	if step == 0 {
		return digits, exp, true
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return "", 0, false
	}
	n.Add(n, big.NewInt(int64(step)))
	s := n.String()
	if len(s) != len(digits) || s[0] == '0' {
		return "", 0, false
	}
	return s, exp, true
}

// decimalFloat is d.ddd × 10^exp as a big.Float of ample precision.
func decimalFloat(digits string, exp int) *big.Float {
	x, _, err := big.ParseFloat(digits[:1]+"."+digits[1:]+"e"+strconv.Itoa(exp), 10, 256, big.ToNearestEven)
	if err != nil {
		return new(big.Float)
	}
	return x
}

// inside reports whether the decimal reads back to f and is no midpoint.
func inside(digits string, exp int, f float64, bits int) bool {
	v, err := strconv.ParseFloat(digits[:1]+"."+digits[1:]+"e"+strconv.Itoa(exp), bits)
	return err == nil && v == f && !isMidpoint(digits, exp, f, bits)
}

// isMidpoint reports whether the decimal is exactly halfway between f and
// one of its neighbours (of the given size). A midpoint has at most 55
// significant bits, so 256 bits hold it exactly; a decimal of at most 17
// digits that is not one lies too far from it to round onto it.
func isMidpoint(digits string, exp int, f float64, bits int) bool {
	x := decimalFloat(digits, exp)
	var lo, hi float64
	if bits == 32 {
		f32 := float32(f)
		lo, hi = float64(math.Nextafter32(f32, float32(math.Inf(-1)))), float64(math.Nextafter32(f32, float32(math.Inf(1))))
	} else {
		lo, hi = math.Nextafter(f, math.Inf(-1)), math.Nextafter(f, math.Inf(1))
	}
	for _, n := range []float64{lo, hi} {
		if math.IsInf(n, 0) {
			continue
		}
		mid := new(big.Float).SetPrec(256).SetFloat64(f)
		mid.Add(mid, new(big.Float).SetPrec(256).SetFloat64(n))
		mid.Quo(mid, big.NewFloat(2))
		if x.Cmp(mid) == 0 {
			return true
		}
	}
	return false
}

// FloatText is the form of a float read as text in any spelling strconv or
// PostgreSQL takes (1.5, 1.5E+10, NaN, Infinity, -inf); bits as for Float.
func FloatText(s string, bits int) (string, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "nan":
		return "NaN", nil
	case "infinity", "+infinity", "inf", "+inf":
		return "Infinity", nil
	case "-infinity", "-inf":
		return "-Infinity", nil
	}
	f, err := strconv.ParseFloat(t, bits)
	if err != nil {
		return "", fmt.Errorf("float %q: %w", s, err)
	}
	return Float(f, bits), nil
}

// decimal is a number as digits: sign, integer digits without leading zeros
// ("" for zero), fraction digits as written.
type decimal struct {
	neg         bool
	whole, frac string
	nan         bool
	infinity    bool // with neg: -Infinity
}

var errNotNumber = errors.New("not a number")

// parseDecimal reads [+-]digits[.digits][e[+-]digits] (or .5, 5.) as
// PostgreSQL's numeric input does, the exponent moved into the digits: the
// fraction has max(0, fraction digits - exponent) digits. NaN and
// [+-]Infinity are read too.
func parseDecimal(s string) (decimal, error) {
	var d decimal
	switch strings.ToLower(s) {
	case "nan":
		return decimal{nan: true}, nil
	case "infinity", "+infinity", "inf", "+inf":
		return decimal{infinity: true}, nil
	case "-infinity", "-inf":
		return decimal{infinity: true, neg: true}, nil
	}
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		d.neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[start:i]
	fracPart := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		fracPart = s[fs:i]
	}
	if intPart == "" && fracPart == "" {
		return d, errNotNumber
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		es := i
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		ds := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if ds == i || i-ds > 6 {
			return d, errNotNumber
		}
		exp, _ = strconv.Atoi(s[es:i])
	}
	if i != len(s) {
		return d, errNotNumber
	}
	// Move the point by exp.
	digits := intPart + fracPart
	point := len(intPart) + exp // digits before the point
	switch {
	case point <= 0:
		d.whole, d.frac = "", strings.Repeat("0", -point)+digits
	case point >= len(digits):
		d.whole, d.frac = digits+strings.Repeat("0", point-len(digits)), ""
	default:
		d.whole, d.frac = digits[:point], digits[point:]
	}
	d.whole = strings.TrimLeft(d.whole, "0")
	if d.whole == "" && strings.Trim(d.frac, "0") == "" {
		d.neg = false // -0 and -0.00 are 0, 0.00
	}
	return d, nil
}

func (d decimal) String() string {
	switch {
	case d.nan:
		return "NaN"
	case d.infinity && d.neg:
		return "-Infinity"
	case d.infinity:
		return "Infinity"
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	if d.whole == "" {
		b.WriteByte('0')
	} else {
		b.WriteString(d.whole)
	}
	if d.frac != "" {
		b.WriteByte('.')
		b.WriteString(d.frac)
	}
	return b.String()
}

// NumericText is the form of a numeric (or DECIMAL) value read as text:
// trailing fractional zeros dropped, so 1.50, 1.5 and MySQL's
// 1.500000000000000000000000000000 are one value; -0 is 0; an exponent
// (1.5e3) is read as numeric reads it.
func NumericText(s string) (string, error) {
	d, err := parseDecimal(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("numeric %q: %w", s, err)
	}
	d.frac = strings.TrimRight(d.frac, "0")
	if !d.nan && !d.infinity && d.whole == "" && d.frac == "" {
		d.neg = false
	}
	return d.String(), nil
}

// CharText is the form of a char(n) value: without trailing spaces.
func CharText(s string) string { return strings.TrimRight(s, " ") }

// Bytes is the form of a bytea value: \x and lower-case hex.
func Bytes(b []byte) string {
	out := make([]byte, 2+2*len(b))
	out[0], out[1] = '\\', 'x'
	hex.Encode(out[2:], b)
	return string(out)
}

// appendYear writes a year as PostgreSQL's ISO output does: at least four
// digits, and years up to 0 as 1 BC, 2 BC, …, the BC going at the end.
func appendYear(b []byte, year int) (out []byte, bc bool) {
	if year <= 0 {
		year, bc = 1-year, true
	}
	s := strconv.Itoa(year)
	for i := len(s); i < 4; i++ {
		b = append(b, '0')
	}
	return append(b, s...), bc
}

func append2(b []byte, n int) []byte {
	return append(b, byte('0'+n/10), byte('0'+n%10))
}

// appendClock writes hh:mm:ss and, when not zero, a fraction of microseconds
// without trailing zeros.
func appendClock(b []byte, h, m, s, micro int) []byte {
	b = append2(b, h)
	b = append(b, ':')
	b = append2(b, m)
	b = append(b, ':')
	b = append2(b, s)
	if micro != 0 {
		frac := strconv.Itoa(1_000_000 + micro)[1:]
		b = append(b, '.')
		b = append(b, strings.TrimRight(frac, "0")...)
	}
	return b
}

// Date is the form of a date: YYYY-MM-DD (of t's own calendar day).
func Date(t time.Time) string {
	b, bc := appendYear(make([]byte, 0, 16), t.Year())
	b = append(b, '-')
	b = append2(b, int(t.Month()))
	b = append(b, '-')
	b = append2(b, t.Day())
	if bc {
		b = append(b, " BC"...)
	}
	return string(b)
}

func appendTimestamp(t time.Time) ([]byte, bool) {
	b, bc := appendYear(make([]byte, 0, 40), t.Year())
	b = append(b, '-')
	b = append2(b, int(t.Month()))
	b = append(b, '-')
	b = append2(b, t.Day())
	b = append(b, ' ')
	b = appendClock(b, t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1000)
	return b, bc
}

// Timestamp is the form of a timestamp (without time zone): t's wall clock,
// whatever its location, to the microsecond (finer digits are cut, as a
// timestamp cannot hold them).
func Timestamp(t time.Time) string {
	b, bc := appendTimestamp(t)
	if bc {
		b = append(b, " BC"...)
	}
	return string(b)
}

// TimestampTZ is the form of a timestamptz: the instant t in UTC.
func TimestampTZ(t time.Time) string {
	b, bc := appendTimestamp(t.UTC())
	b = append(b, "+00"...)
	if bc {
		b = append(b, " BC"...)
	}
	return string(b)
}

// TimeText is the form of a time of day read as hh:mm:ss[.ffffff] (MySQL's
// TIME(6) text): the fraction without trailing zeros, none when zero.
func TimeText(s string) (string, error) {
	clock, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
	if len(clock) < 8 || clock[len(clock)-3] != ':' || clock[len(clock)-6] != ':' {
		return "", fmt.Errorf("time %q: expected hh:mm:ss[.ffffff]", s)
	}
	for _, c := range frac {
		if c < '0' || c > '9' {
			return "", fmt.Errorf("time %q: expected hh:mm:ss[.ffffff]", s)
		}
	}
	if len(frac) > 6 {
		return "", fmt.Errorf("time %q: finer than microseconds", s)
	}
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		return clock, nil
	}
	return clock + "." + frac, nil
}

// UUID is the form of a uuid read as text (36 characters with hyphens, or
// 32 hex digits): lower-case 8-4-4-4-12.
func UUID(s string) (string, error) {
	h := s
	if len(s) == 36 {
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return "", fmt.Errorf("uuid %q: expected 8-4-4-4-12 hex digits", s)
		}
		h = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	}
	var raw [16]byte
	if len(h) != 32 {
		return "", fmt.Errorf("uuid %q: expected 8-4-4-4-12 hex digits", s)
	}
	if _, err := hex.Decode(raw[:], []byte(h)); err != nil {
		return "", fmt.Errorf("uuid %q: expected 8-4-4-4-12 hex digits", s)
	}
	return UUIDBytes(raw[:])
}

// UUIDBytes is the form of a uuid held as its 16 bytes (BINARY(16)).
func UUIDBytes(b []byte) (string, error) {
	if len(b) != 16 {
		return "", fmt.Errorf("uuid: %d bytes, expected 16", len(b))
	}
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
