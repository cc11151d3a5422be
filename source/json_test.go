package source

import (
	"encoding/json"
	"testing"
	"time"
)

var (
	ts1 = time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	ts2 = time.Date(2024, 5, 6, 9, 8, 9, 0, time.FixedZone("CEST", 2*3600)) // printed in UTC
)

func testRelations() Relations {
	return Relations{
		16384: {
			RelationID: 16384, Namespace: "public", Name: "orders", ReplicaIdentity: 'd',
			Columns: []RelationColumn{
				{Flags: 1, Name: "id", TypeOID: 23, TypeMod: -1},
				{Name: "note", TypeOID: 25, TypeMod: -1},
				{Name: "blob", TypeOID: 17, TypeMod: -1},
				{Name: "big", TypeOID: 25, TypeMod: -1},
			},
		},
		16390: {RelationID: 16390, Namespace: "s", Name: "child", ReplicaIdentity: 'f'},
	}
}

func TestAppendJSONGolden(t *testing.T) {
	row := Tuple{
		{Kind: 't', Data: []byte("1")},
		{Kind: 't', Data: []byte("say \"hi\"\n\tä\x01\xff")},
		{Kind: 'b', Data: []byte{0, 1, 2, 0xff}},
		{Kind: 'u'},
	}
	keyOnly := Tuple{{Kind: 't', Data: []byte("1")}, {Kind: 'n'}, {Kind: 'n'}, {Kind: 'n'}}
	cases := []struct {
		name string
		msg  Message
		want string
	}{
		{"begin", &Begin{FinalLSN: 0x1_016B3F28, CommitTime: ts1, Xid: 750},
			`{"type":"begin","lsn":"0/16B3E00","xid":750,"final_lsn":"1/16B3F28","commit_time":"2024-05-06T07:08:09.123456Z"}`},
		{"commit", &Commit{Flags: 0, CommitLSN: 0x16B3F28, EndLSN: 0x16B3F58, CommitTime: ts2},
			`{"type":"commit","lsn":"0/16B3E00","flags":0,"commit_lsn":"0/16B3F28","end_lsn":"0/16B3F58","commit_time":"2024-05-06T07:08:09Z"}`},
		{"origin", &Origin{CommitLSN: 0xAB, Name: "node_a"},
			`{"type":"origin","lsn":"0/16B3E00","commit_lsn":"0/AB","name":"node_a"}`},
		{"relation", testRelations()[16384],
			`{"type":"relation","lsn":"0/16B3E00","relation_id":16384,"namespace":"public","name":"orders","replica_identity":"default","columns":[` +
				`{"name":"id","key":true,"flags":1,"type_oid":23,"type_mod":-1},{"name":"note","key":false,"flags":0,"type_oid":25,"type_mod":-1},` +
				`{"name":"blob","key":false,"flags":0,"type_oid":17,"type_mod":-1},{"name":"big","key":false,"flags":0,"type_oid":25,"type_mod":-1}]}`},
		{"relation streamed", &Relation{Xid: 9, RelationID: 16390, Namespace: "s", Name: "child", ReplicaIdentity: 'f'},
			`{"type":"relation","lsn":"0/16B3E00","xid":9,"relation_id":16390,"namespace":"s","name":"child","replica_identity":"full","columns":[]}`},
		{"type", &TypeMessage{TypeOID: 16500, Namespace: "public", Name: "mood"},
			`{"type":"type","lsn":"0/16B3E00","type_oid":16500,"namespace":"public","name":"mood"}`},
		{"insert", &Insert{RelationID: 16384, New: row},
			`{"type":"insert","lsn":"0/16B3E00","relation_id":16384,"namespace":"public","relation":"orders","new":{"id":"1","note":"say \"hi\"\n\tä\u0001\ufffd","blob":{"binary":"AAEC/w=="},"big":{"unchanged_toast":true}}}`},
		{"insert streamed", &Insert{Xid: 751, RelationID: 16384, New: keyOnly},
			`{"type":"insert","lsn":"0/16B3E00","xid":751,"relation_id":16384,"namespace":"public","relation":"orders","new":{"id":"1","note":null,"blob":null,"big":null}}`},
		{"update", &Update{RelationID: 16384, New: keyOnly},
			`{"type":"update","lsn":"0/16B3E00","relation_id":16384,"namespace":"public","relation":"orders","new":{"id":"1","note":null,"blob":null,"big":null}}`},
		{"update key", &Update{RelationID: 16384, OldKind: 'K', Old: keyOnly, New: row},
			`{"type":"update","lsn":"0/16B3E00","relation_id":16384,"namespace":"public","relation":"orders","old_kind":"key","old":{"id":"1"},"new":{"id":"1","note":"say \"hi\"\n\tä\u0001\ufffd","blob":{"binary":"AAEC/w=="},"big":{"unchanged_toast":true}}}`},
		{"delete full", &Delete{RelationID: 16390, OldKind: 'O', Old: Tuple{}},
			`{"type":"delete","lsn":"0/16B3E00","relation_id":16390,"namespace":"s","relation":"child","old_kind":"full","old":{}}`},
		{"truncate", &Truncate{Options: TruncateCascade | TruncateRestartIdentity, RelationIDs: []uint32{16384, 16390}},
			`{"type":"truncate","lsn":"0/16B3E00","relation_ids":[16384,16390],"relations":["public.orders","s.child"],"cascade":true,"restart_identity":true}`},
		{"truncate plain", &Truncate{Xid: 3, RelationIDs: []uint32{16390}},
			`{"type":"truncate","lsn":"0/16B3E00","xid":3,"relation_ids":[16390],"relations":["s.child"],"cascade":false,"restart_identity":false}`},
		{"message", &LogicalMessage{Flags: 1, LSN: 0x16B3E10, Prefix: "app", Content: []byte("hello")},
			`{"type":"message","lsn":"0/16B3E00","transactional":true,"flags":1,"message_lsn":"0/16B3E10","prefix":"app","content":"aGVsbG8="}`},
		{"message non-transactional", &LogicalMessage{LSN: 0x16B3E10, Prefix: "p", Content: nil},
			`{"type":"message","lsn":"0/16B3E00","transactional":false,"flags":0,"message_lsn":"0/16B3E10","prefix":"p","content":""}`},
		{"stream start", &StreamStart{Xid: 752, FirstSegment: true},
			`{"type":"stream_start","lsn":"0/16B3E00","xid":752,"first_segment":true}`},
		{"stream stop", &StreamStop{},
			`{"type":"stream_stop","lsn":"0/16B3E00"}`},
		{"stream commit", &StreamCommit{Xid: 752, CommitLSN: 0x200, EndLSN: 0x230, CommitTime: ts1},
			`{"type":"stream_commit","lsn":"0/16B3E00","xid":752,"flags":0,"commit_lsn":"0/200","end_lsn":"0/230","commit_time":"2024-05-06T07:08:09.123456Z"}`},
		{"stream abort", &StreamAbort{Xid: 752, SubXid: 753},
			`{"type":"stream_abort","lsn":"0/16B3E00","xid":752,"sub_xid":753}`},
		{"stream abort parallel", &StreamAbort{Xid: 752, SubXid: 752, HasAbortInfo: true, AbortLSN: 0x300, AbortTime: ts2},
			`{"type":"stream_abort","lsn":"0/16B3E00","xid":752,"sub_xid":752,"abort_lsn":"0/300","abort_time":"2024-05-06T07:08:09Z"}`},
		{"begin prepare", &BeginPrepare{PrepareLSN: 0x400, EndLSN: 0x430, PrepareTime: ts1, Xid: 760, GID: "g'1"},
			`{"type":"begin_prepare","lsn":"0/16B3E00","prepare_lsn":"0/400","end_lsn":"0/430","prepare_time":"2024-05-06T07:08:09.123456Z","xid":760,"gid":"g'1"}`},
		{"prepare", &Prepare{PrepareLSN: 0x400, EndLSN: 0x430, PrepareTime: ts1, Xid: 760, GID: "g1"},
			`{"type":"prepare","lsn":"0/16B3E00","flags":0,"prepare_lsn":"0/400","end_lsn":"0/430","prepare_time":"2024-05-06T07:08:09.123456Z","xid":760,"gid":"g1"}`},
		{"commit prepared", &CommitPrepared{CommitLSN: 0x500, EndLSN: 0x530, CommitTime: ts2, Xid: 760, GID: "g1"},
			`{"type":"commit_prepared","lsn":"0/16B3E00","flags":0,"commit_lsn":"0/500","end_lsn":"0/530","commit_time":"2024-05-06T07:08:09Z","xid":760,"gid":"g1"}`},
		{"rollback prepared", &RollbackPrepared{PrepareEndLSN: 0x430, RollbackEndLSN: 0x560, PrepareTime: ts1, RollbackTime: ts2, Xid: 760, GID: "g1"},
			`{"type":"rollback_prepared","lsn":"0/16B3E00","flags":0,"prepare_end_lsn":"0/430","rollback_end_lsn":"0/560","prepare_time":"2024-05-06T07:08:09.123456Z","rollback_time":"2024-05-06T07:08:09Z","xid":760,"gid":"g1"}`},
		{"stream prepare", &StreamPrepare{PrepareLSN: 0x600, EndLSN: 0x630, PrepareTime: ts1, Xid: 770, GID: "big"},
			`{"type":"stream_prepare","lsn":"0/16B3E00","flags":0,"prepare_lsn":"0/600","end_lsn":"0/630","prepare_time":"2024-05-06T07:08:09.123456Z","xid":770,"gid":"big"}`},
	}
	seen := map[MessageType]bool{}
	buf := make([]byte, 0, 16)
	for _, tc := range cases {
		var err error
		buf, err = AppendJSON(buf[:0], 0x16B3E00, tc.msg, testRelations())
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if string(buf) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, buf, tc.want)
		}
		if !json.Valid(buf) {
			t.Errorf("%s: not valid JSON: %s", tc.name, buf)
		}
		seen[tc.msg.Type()] = true
	}
	if len(seen) != 19 {
		t.Errorf("golden lines cover %d message types, want all 19", len(seen))
	}
}

func TestAppendJSONErrors(t *testing.T) {
	cases := []struct {
		msg  Message
		want string
	}{
		{&Insert{RelationID: 1, New: Tuple{}},
			"tail: insert at 0/10 is for relation id 1, which no Relation message described"},
		{&Delete{RelationID: 16390, OldKind: 'K', Old: Tuple{{Kind: 't', Data: []byte("x")}}},
			"tail: tuple at 0/10 has 1 columns but relation s.child has 0"},
		{&Truncate{RelationIDs: []uint32{16384, 7}},
			"tail: truncate at 0/10 names relation id 7, which no Relation message described"},
		{&Insert{RelationID: 16384, New: Tuple{{Kind: 'x'}, {Kind: 'n'}, {Kind: 'n'}, {Kind: 'n'}}},
			`tail: tuple at 0/10, column "id" of public.orders: unknown value kind 0x78`},
	}
	for _, tc := range cases {
		_, err := AppendJSON(nil, 0x10, tc.msg, testRelations())
		if err == nil || err.Error() != tc.want {
			t.Errorf("%T: got %v, want %s", tc.msg, err, tc.want)
		}
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\x00\x1f\x7f", "é漢字🙂", "\u2028\u2029", "bad\xc3(", "\xff\xfe"} {
		got := appendJSONString(nil, s)
		want, _ := json.Marshal(s)
		// encoding/json also escapes <, > and &; we have none of those here.
		if string(got) != string(want) {
			t.Errorf("appendJSON(%q) = %s, want %s", s, got, want)
		}
	}
}
