package source

import (
	"strings"
	"testing"
)

// accountsRow is a pgbench_accounts row in text format: aid int, bid int,
// abalance int, filler char(84).
func accountsRow(aid, abalance string) []Value {
	return []Value{tval(aid), tval("1"), tval(abalance), tval(strings.Repeat(" ", 84))}
}

// accountsInsert is the Insert pgbench -i sends for one pgbench_accounts row.
func accountsInsert() []byte {
	return pgmsg(MsgInsert).i32(16397).i8('N').tuple(accountsRow("123456", "0")...).bytes()
}

// accountsUpdate is pgbench's "UPDATE pgbench_accounts SET abalance = abalance + :delta":
// the key does not change, so no old tuple is sent.
func accountsUpdate() []byte {
	return pgmsg(MsgUpdate).i32(16397).i8('N').tuple(accountsRow("123456", "-4217")...).bytes()
}

// wideRow is a 10-column row of mixed types in text format, with a NULL and an
// unchanged TOASTed value.
func wideRow() []Value {
	return []Value{
		tval("9876543210"),                    // bigint
		tval("42"),                            // int
		tval("Hendrik Lorentz"),               // text
		tval("2025-09-28 14:03:11.123456+00"), // timestamptz
		tval("12345.6789"),                    // numeric
		tval("t"),                             // bool
		nullVal,                               // nullable varchar
		unchangedVal,                          // TOASTed text not changed
		tval("1b4e28ba-2fa1-11d2-883f-0016d3cca427"),                      // uuid
		tval(`{"id": 17, "tags": ["a", "b"], "ok": true, "score": 0.75}`), // jsonb
	}
}

func wideInsert() []byte {
	return pgmsg(MsgInsert).i32(16500).i8('N').tuple(wideRow()...).bytes()
}

// wideUpdateFull is an update of a REPLICA IDENTITY FULL table: the old row and the new.
func wideUpdateFull() []byte {
	old := wideRow()
	old[7] = tval(strings.Repeat("toast ", 20))
	return pgmsg(MsgUpdate).i32(16500).i8('O').tuple(old...).i8('N').tuple(wideRow()...).bytes()
}

func benchDecode(b *testing.B, buf []byte) {
	d := NewDecoder(4)
	if _, err := d.Decode(buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeInsert(b *testing.B) {
	b.Run("pgbench_accounts", func(b *testing.B) { benchDecode(b, accountsInsert()) })
	b.Run("wide10", func(b *testing.B) { benchDecode(b, wideInsert()) })
}

func BenchmarkDecodeUpdate(b *testing.B) {
	b.Run("pgbench_accounts", func(b *testing.B) { benchDecode(b, accountsUpdate()) })
	b.Run("wide10_full", func(b *testing.B) { benchDecode(b, wideUpdateFull()) })
}

func BenchmarkDecodeDelete(b *testing.B) {
	b.Run("pgbench_accounts_key", func(b *testing.B) {
		benchDecode(b, pgmsg(MsgDelete).i32(16397).i8('K').tuple(tval("123456"), nullVal, nullVal, nullVal).bytes())
	})
}
