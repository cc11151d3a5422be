package schema

import (
	"errors"
	"slices"
	"testing"
)

// numbered is a table of the named columns with those attribute numbers
// (0 unknown) and, as the catalog lists columns the message leaves out,
// generated ones without expression.
func numbered(names []string, nums []int16, others map[string]int16) *Table {
	t := &Table{Schema: "public", Name: "sw"}
	for i, n := range names {
		t.Columns = append(t.Columns, Column{Name: n, TypeName: "text", Attnum: nums[i]})
	}
	for n, a := range others {
		t.Generated = append(t.Generated, GeneratedColumn{Name: n, TypeName: "text", Attnum: a})
	}
	return t
}

func attnums(t *Table) []int16 {
	var out []int16
	for _, c := range t.Columns {
		out = append(out, c.Attnum)
	}
	return out
}

func TestMatchNumbers(t *testing.T) {
	prev := numbered([]string{"id", "a", "d"}, []int16{1, 2, 3}, nil)
	for _, c := range []struct {
		name      string
		t         *Table
		want      []int16
		generated int // how many of the catalog's other columns stay listed
		ambiguous bool
	}{
		// The catalog is where the message is: nothing to repair.
		{"current", numbered([]string{"id", "a", "d", "x"}, []int16{1, 2, 3, 4}, nil), []int16{1, 2, 3, 4}, 0, false},
		// A rename since, the message names the column by its old name:
		// numbers that fit are left as they are (matchColumns pairs a by
		// name now, and with b when b's message comes).
		{"renamed since", numbered([]string{"id", "a", "d"}, []int16{1, 0, 3}, map[string]int16{"b": 2}), []int16{1, 0, 3}, 1, false},
		// RENAME a TO b2; RENAME d TO a after the message: its a got d's
		// number, its d none, with no room for d between 3 and 4.
		{"name reused", numbered([]string{"id", "a", "d", "x"}, []int16{1, 3, 0, 4}, map[string]int16{"b2": 2}), []int16{1, 2, 3, 4}, 0, false},
		// RENAME a TO b; ADD a after the message: its a got the new
		// column's number, while b, numbered below it, is not in the message.
		{"name reused by an added column", numbered([]string{"id", "a", "d"}, []int16{1, 4, 3}, map[string]int16{"b": 2}), []int16{1, 2, 3}, 0, false},
		{"name reused, added column last", numbered([]string{"id", "a"}, []int16{1, 4}, map[string]int16{"b": 2, "c": 3}), []int16{1, 2}, 1, false},
		// a and d swapped between prev and the message, renamed again since:
		// neither the numbers nor prev's names settle it.
		{"swapped", numbered([]string{"id", "d", "a"}, []int16{1, 3, 2}, nil), nil, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := MatchNumbers(prev, c.t)
			if c.ambiguous {
				if !errors.Is(err, ErrColumnsAmbiguous) {
					t.Fatalf("MatchNumbers: %v, want ErrColumnsAmbiguous", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := attnums(c.t); !slices.Equal(got, c.want) {
				t.Errorf("numbers %v, want %v", got, c.want)
			}
			if len(c.t.Generated) != c.generated {
				t.Errorf("catalog's other columns %+v, want %d", c.t.Generated, c.generated)
			}
		})
	}
}
