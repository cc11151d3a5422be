package schema

import (
	"fmt"
	"strings"
	"testing"
)

func TestEnumRenames(t *testing.T) {
	for _, tc := range []struct {
		target, source string
		want           string // renames as from>to, or "error"
	}{
		{"sad,ok,happy", "sad,ok,happy", ""},
		{"sad,ok", "calm,sad,happy,ok,angry", ""},           // only added
		{"sad,ok,happy", "blue,ok,happy", "sad>blue"},       // the tester's case
		{"sad,ok,happy", "blue,ok,happy,green", "sad>blue"}, // renamed, and one added elsewhere
		{"sad,ok,happy", "sad,fine,cheerful", "ok>fine happy>cheerful"},
		{"a,b", "b,a", "a>b b>a"},     // swapped through three renames
		{"a,b", "b,c", "a>b b>c"},     // b to c, then a to b
		{"a,b,c", "a,x,y,c", "error"}, // b renamed and one added between a and c
		{"a,b", "b,c,d", "error"},     // a chain plus an addition
		{"a,b,c,d", "a,d", ""},        // more on the target: created again on the source
	} {
		split := func(s string) []string { return strings.Split(s, ",") }
		got, err := EnumRenames(split(tc.target), split(tc.source))
		var s []string
		for _, r := range got {
			s = append(s, r.From+">"+r.To)
		}
		res := strings.Join(s, " ")
		if err != nil {
			res = "error"
		}
		if res != tc.want {
			t.Errorf("target %s, source %s: renames %q (%v), want %q", tc.target, tc.source, res, err, tc.want)
		}
	}
}

func TestRenameEnumLabels(t *testing.T) {
	typ := &Type{OID: 17001, Namespace: "app", Name: "mood", Category: CategoryEnum, EnumLabels: []string{"blue", "ok", "it's"}}
	got, err := Postgres.(PostgresDialect).RenameEnumLabels(typ, []string{"sad", "ok", "happy"})
	if err != nil {
		t.Fatal(err)
	}
	want := `ALTER TYPE "app"."mood" RENAME VALUE 'sad' TO 'blue'` + "\n" + `ALTER TYPE "app"."mood" RENAME VALUE 'happy' TO 'it''s'`
	if strings.Join(got, "\n") != want {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	// A swap goes through temporary names, none of them a label.
	typ.EnumLabels = []string{"pgrelay rename 0", "a"}
	got, err = Postgres.(PostgresDialect).RenameEnumLabels(typ, []string{"a", "pgrelay rename 0"})
	if err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprint([]string{
		`ALTER TYPE "app"."mood" RENAME VALUE 'a' TO 'pgrelay rename 1'`,
		`ALTER TYPE "app"."mood" RENAME VALUE 'pgrelay rename 0' TO 'pgrelay rename 2'`,
		`ALTER TYPE "app"."mood" RENAME VALUE 'pgrelay rename 1' TO 'pgrelay rename 0'`,
		`ALTER TYPE "app"."mood" RENAME VALUE 'pgrelay rename 2' TO 'a'`,
	})
	if fmt.Sprint(got) != want {
		t.Errorf("swap: got %v\nwant %s", got, want)
	}
	// Renamed and added at the same place: an error saying what to do.
	typ.EnumLabels = []string{"x", "y", "ok"}
	if _, err := Postgres.(PostgresDialect).RenameEnumLabels(typ, []string{"sad", "ok"}); err == nil ||
		!strings.Contains(err.Error(), `the target has 'sad' where the source has 'x', 'y'`) || !strings.Contains(err.Error(), "RENAME VALUE") {
		t.Errorf("ambiguous: got %v", err)
	}
}
