package bytesize

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"1048576", 1 << 20}, {"512MB", 512 << 20}, {"64 kB", 64 << 10},
		{"1GB", 1 << 30}, {"1gib", 1 << 30}, {"1.5GB", 3 << 29}, {"2TB", 2 << 40}, {"10B", 10}, {" 3M ", 3 << 20},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "MB", "-1", "1PB", "1.2.3GB", "1e3", "x", "99999999999TB", "1 GB extra"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"}, {900, "900 B"}, {1024, "1 kB"}, {16 << 20, "16 MB"}, {3 << 29, "1.5 GB"}, {-(2 << 30), "-2 GB"}, {5 << 40, "5 TB"},
	} {
		if got := Format(c.in); got != c.want {
			t.Errorf("Format(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}
