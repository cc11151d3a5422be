// Package bytesize reads and writes amounts of bytes the way PostgreSQL's
// settings do (16MB, 1GB: units of 1024), for the thresholds pgrelay takes
// from its configuration and the sizes it prints.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

const (
	kB = 1 << 10
	mB = 1 << 20
	gB = 1 << 30
	tB = 1 << 40
)

// units maps the accepted unit names (lower case) to their size. kB and KiB
// are the same 1024 bytes, as in PostgreSQL.
var units = map[string]int64{
	"": 1, "b": 1,
	"k": kB, "kb": kB, "kib": kB,
	"m": mB, "mb": mB, "mib": mB,
	"g": gB, "gb": gB, "gib": gB,
	"t": tB, "tb": tB, "tib": tB,
}

// Parse reads a non-negative size: a number of bytes (1048576) or a number
// with a unit (512MB, 1.5GB, 64 kB; units of 1024, case-insensitive).
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := units[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("%q is not a size: expected bytes or a number with kB, MB, GB or TB, e.g. 512MB", s)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("%q is not a size: too large", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: expected bytes or a number with kB, MB, GB or TB, e.g. 512MB", s)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size: too large", s)
	}
	return int64(v), nil
}

// Format writes n bytes in the largest unit that keeps a whole number before
// the point, with at most one decimal: 0 B, 900 B, 16 MB, 1.5 GB.
func Format(n int64) string {
	neg := ""
	if n < 0 {
		neg, n = "-", -n
	}
	for _, u := range []struct {
		size int64
		name string
	}{{tB, "TB"}, {gB, "GB"}, {mB, "MB"}, {kB, "kB"}} {
		if n >= u.size {
			v := strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64)
			return neg + strings.TrimSuffix(v, ".0") + " " + u.name
		}
	}
	return neg + strconv.FormatInt(n, 10) + " B"
}
