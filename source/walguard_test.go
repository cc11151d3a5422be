package source

import (
	"strings"
	"testing"
)

func TestWALWarnings(t *testing.T) {
	const gb = int64(1) << 30
	safe := int64(5 << 20)
	base := WALRetention{Slot: "s1", Exists: true, Major: 16, WALStatus: "reserved", MaxSlotWALKeepSize: 10 * gb}
	with := func(f func(*WALRetention)) WALRetention { r := base; f(&r); return r }
	share := WALAlert{Share: 0.8}
	for _, c := range []struct {
		name  string
		r     WALRetention
		alert WALAlert
		want  []WALRisk
		says  []string // substrings of the first warning
	}{
		{"well within", with(func(r *WALRetention) { r.RetainedBytes = 1 * gb; r.SafeWALSize = &safe }), share, nil, nil},
		{"at the share", with(func(r *WALRetention) { r.RetainedBytes = 8 * gb }), share,
			[]WALRisk{WALRetained}, []string{`slot "s1"`, "8 GB", "80%", "max_slot_wal_keep_size (10 GB)"}},
		{"share off", with(func(r *WALRetention) { r.RetainedBytes = 9 * gb }), WALAlert{}, nil, nil},
		{"extended is no risk by itself", with(func(r *WALRetention) { r.WALStatus = "extended"; r.RetainedBytes = 2 * gb }), share, nil, nil},
		{"unreserved", with(func(r *WALRetention) { r.WALStatus = "unreserved"; r.RetainedBytes = 11 * gb }), share,
			[]WALRisk{WALUnreserved}, []string{"wal_status unreserved", "next checkpoint", "max_slot_wal_keep_size = '22528MB'"}},
		{"unreserved without alert", with(func(r *WALRetention) { r.WALStatus = "unreserved"; r.RetainedBytes = 11 * gb }), WALAlert{},
			[]WALRisk{WALUnreserved}, nil},
		{"lost", with(func(r *WALRetention) { r.WALStatus = "lost"; r.RetainedBytes = 0 }), share,
			[]WALRisk{WALLost}, []string{"wal_status lost", "PGRELAY_SNAPSHOT=always"}},
		{"invalidated (17)", with(func(r *WALRetention) { r.WALStatus = "lost"; r.InvalidationReason = "wal_removed" }), share,
			[]WALRisk{WALLost}, []string{"invalidated: wal_removed"}},
		{"unlimited", with(func(r *WALRetention) { r.MaxSlotWALKeepSize = -1; r.RetainedBytes = 50 * gb }), share,
			[]WALRisk{WALUnlimited}, []string{"max_slot_wal_keep_size is -1", "fill the source's disk", `slot "s1"`}},
		{"unlimited over bytes", with(func(r *WALRetention) { r.MaxSlotWALKeepSize = -1; r.RetainedBytes = 50 * gb }), WALAlert{Bytes: 40 * gb},
			[]WALRisk{WALRetained, WALUnlimited}, []string{"50 GB", "PGRELAY_SLOT_WAL_ALERT (40 GB)"}},
		{"under bytes", with(func(r *WALRetention) { r.MaxSlotWALKeepSize = -1; r.RetainedBytes = 30 * gb }), WALAlert{Bytes: 40 * gb},
			[]WALRisk{WALUnlimited}, nil},
		{"postgres 12", WALRetention{Slot: "s1", Exists: true, Major: 12, MaxSlotWALKeepSize: -1}, share,
			[]WALRisk{WALUnlimited}, []string{"PostgreSQL 12", "without limit", "PostgreSQL 13"}},
		{"no slot yet, unlimited", WALRetention{Slot: "s1", Major: 15, MaxSlotWALKeepSize: -1}, share,
			[]WALRisk{WALUnlimited}, []string{"max_slot_wal_keep_size is -1"}},
		{"no slot yet, bounded", WALRetention{Slot: "s1", Major: 15, MaxSlotWALKeepSize: gb}, share, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := WALWarnings(c.r, c.alert)
			var risks []WALRisk
			for _, w := range got {
				risks = append(risks, w.Risk)
				if strings.Contains(w.Message, "\n") || w.Message == "" {
					t.Errorf("message is not one line: %q", w.Message)
				}
			}
			if len(risks) != len(c.want) {
				t.Fatalf("risks %v, want %v (%v)", risks, c.want, got)
			}
			for i := range risks {
				if risks[i] != c.want[i] {
					t.Fatalf("risks %v, want %v", risks, c.want)
				}
			}
			for _, s := range c.says {
				if !strings.Contains(got[0].Message, s) {
					t.Errorf("message %q lacks %q", got[0].Message, s)
				}
			}
		})
	}
}

func TestWALRiskAtRisk(t *testing.T) {
	for k, want := range map[WALRisk]bool{0: false, WALUnlimited: false, WALRetained: true, WALUnreserved: true, WALLost: true} {
		if k.AtRisk() != want {
			t.Errorf("%v.AtRisk() = %v", k, !want)
		}
	}
}

func TestParseWALAlert(t *testing.T) {
	for in, want := range map[string]WALAlert{
		"80%": {Share: 0.8}, " 50 % ": {Share: 0.5}, "100%": {Share: 1}, "1%": {Share: 0.01},
		"50GB": {Bytes: 50 << 30}, "512MB": {Bytes: 512 << 20}, "0": {},
	} {
		got, err := ParseWALAlert(in)
		if err != nil || got != want {
			t.Errorf("ParseWALAlert(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := ParseWALAlert(got.String()); err != nil || back != got {
			t.Errorf("ParseWALAlert(%q.String() = %q) = %+v, %v", in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "0%", "101%", "x%", "-5%", "eighty", "-1GB"} {
		if got, err := ParseWALAlert(in); err == nil {
			t.Errorf("ParseWALAlert(%q) = %+v, want an error", in, got)
		}
	}
}

func TestSettingBytes(t *testing.T) {
	for _, c := range []struct {
		setting, unit string
		want          int64
	}{
		{"-1", "MB", -1}, {"1024", "MB", 1 << 30}, {"1", "MB", 1 << 20}, {"3", "8kB", 3 * 8192}, {"100", "", 100},
	} {
		got, err := settingBytes(c.setting, c.unit)
		if err != nil || got != c.want {
			t.Errorf("settingBytes(%q, %q) = %d, %v; want %d", c.setting, c.unit, got, err, c.want)
		}
	}
	if _, err := settingBytes("x", "MB"); err == nil {
		t.Error("settingBytes(x) without error")
	}
	if _, err := settingBytes("1", "parsecs"); err == nil {
		t.Error("settingBytes(1 parsecs) without error")
	}
}

func TestReadWALRetentionSQL(t *testing.T) {
	for _, c := range []struct {
		major       int
		has, hasNot []string
	}{
		{12, nil, []string{"wal_status", "safe_wal_size", "max_slot_wal_keep_size", "invalidation_reason"}},
		{13, []string{"wal_status", "safe_wal_size", "max_slot_wal_keep_size"}, []string{"invalidation_reason"}},
		{17, []string{"wal_status", "safe_wal_size", "max_slot_wal_keep_size", "invalidation_reason"}, nil},
	} {
		sql := readWALRetentionSQL(c.major)
		for _, s := range c.has {
			if !strings.Contains(sql, s) {
				t.Errorf("%d: no %s in %s", c.major, s, sql)
			}
		}
		for _, s := range c.hasNot {
			if strings.Contains(sql, s) {
				t.Errorf("%d: %s in %s", c.major, s, sql)
			}
		}
	}
}
