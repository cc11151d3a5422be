package schema

import (
	"errors"
	"fmt"
	"slices"
)

// ErrColumnsAmbiguous is returned by MatchNumbers when a Relation message's
// columns cannot be told apart from the target's.
var ErrColumnsAmbiguous = errors.New("the source's columns cannot be told apart")

// MatchNumbers checks the attribute numbers the catalog gave t's columns
// against what t's Relation message says of them, and repairs them from
// prev, what the target table was built to, before the columns are matched
// (matchColumns) and InferRenamed runs.
//
// The catalog reads numbers by name from the source as it is now, which may
// be past the message: after `RENAME a TO b; RENAME d TO a` the message's a
// gets d's number and its d none, and matching by number would rename d to a
// and drop the real a. A message lists its columns by number, numbers are
// never reused, and a column the catalog has but the message does not name
// existed when it was sent if a later-numbered column did: numbers that break
// these rules were read under names that moved since. The columns prev knows
// by name then take prev's numbers (nothing of the message's can have been
// renamed since prev without the numbers showing it), and a number read now
// that prev gives another column is dropped. Where that does not fit either,
// the change stops with ErrColumnsAmbiguous rather than guess.
func MatchNumbers(prev, t *Table) error {
	if prev == nil || t == nil || t.Uncommitted {
		return nil
	}
	nums := make([]int16, len(t.Columns))
	for i, c := range t.Columns {
		nums[i] = c.Attnum
	}
	if numbersFit(nums, t, true) {
		InferRenamed(prev, t)
		return nil
	}
	byPrev := make([]bool, len(nums)) // the number is prev's
	prevNums := map[int16]bool{}
	for i, c := range t.Columns {
		if p := prev.Column(c.Name); p != nil && p.Attnum > 0 {
			nums[i], byPrev[i] = p.Attnum, true
			prevNums[p.Attnum] = true
		}
	}
	for i := range nums {
		if !byPrev[i] && prevNums[nums[i]] {
			nums[i] = 0
		}
	}
	// A column list leaves columns out of the message legitimately: that
	// rule only chose to look at prev.
	if !numbersFit(nums, t, false) {
		return fmt.Errorf("schema: %s: %w: its columns were renamed on the source while pgrelay was behind, so that names now belong to other columns, in a way the change's column order does not settle; copy the tables again (PGRELAY_SNAPSHOT=always)",
			t.QualifiedName(), ErrColumnsAmbiguous)
	}
	for i := range t.Columns {
		t.Columns[i].Attnum = nums[i]
	}
	// A column the catalog lists besides the message's under a number the
	// message's columns now have is one of them, renamed since.
	t.Generated = slices.DeleteFunc(t.Generated, func(g GeneratedColumn) bool {
		return g.Expr == "" && g.Attnum > 0 && slices.Contains(nums, g.Attnum)
	})
	InferRenamed(prev, t)
	return nil
}

// numbersFit tells whether nums, the numbers of t's columns in the message's
// order (0 unknown), can be the numbers the columns had when it was sent:
// the known ones rise, there is room between them for the unknown ones, and
// (with listed) every column the catalog has besides, numbered below the
// highest known number, has a place among the unknown ones.
func numbersFit(nums []int16, t *Table, listed bool) bool {
	var last, high int16
	unknown := 0
	type gap struct{ lo, hi int16 } // numbers lo < n < hi hold unknown columns
	var gaps []gap
	for _, n := range nums {
		if n == 0 {
			unknown++
			continue
		}
		if n <= last || int(n-last-1) < unknown {
			return false
		}
		if unknown > 0 {
			gaps = append(gaps, gap{last, n})
		}
		last, high, unknown = n, n, 0
	}
	if unknown > 0 {
		gaps = append(gaps, gap{last, 1<<15 - 1})
	}
	if !listed {
		return true
	}
	for _, g := range t.Generated {
		if g.Expr != "" || g.Attnum <= 0 || g.Attnum > high || slices.Contains(nums, g.Attnum) {
			continue
		}
		if !slices.ContainsFunc(gaps, func(p gap) bool { return p.lo < g.Attnum && g.Attnum < p.hi }) {
			return false
		}
	}
	return true
}
