package canon

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"math/big"
	"math/bits"
	"strconv"
)

// AppendRecord appends a row's canonical text, PostgreSQL's record text of
// its values, ROW(v1, v2, …)::text: (v1,v2,…), NULL as nothing, a value
// quoted when it is empty or holds a quote, backslash, parenthesis, comma or
// white space, with quotes and backslashes doubled inside.
func AppendRecord(b []byte, row []Value) []byte {
	b = append(b, '(')
	for i, v := range row {
		if i > 0 {
			b = append(b, ',')
		}
		if !v.Valid {
			continue
		}
		s := v.S
		quote := s == ""
		for j := 0; j < len(s) && !quote; j++ {
			switch s[j] {
			case '"', '\\', '(', ')', ',', ' ', '\t', '\n', '\r', '\v', '\f':
				quote = true
			}
		}
		if !quote {
			b = append(b, s...)
			continue
		}
		b = append(b, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b = append(b, s[j])
			}
			b = append(b, s[j])
		}
		b = append(b, '"')
	}
	return append(b, ')')
}

// RecordText is AppendRecord as a string.
func RecordText(row []Value) string { return string(AppendRecord(nil, row)) }

// Hash is a row's md5.
type Hash [md5.Size]byte

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// RowHash is the md5 of a row's canonical text: in SQL,
// md5(ROW(v1, v2, …)::text).
func RowHash(row []Value) Hash {
	var buf [512]byte
	return md5.Sum(AppendRecord(buf[:0], row))
}

// Checksum counts rows and sums their hashes, whatever their order: the sum
// of the first 8 bytes of each row's md5 read as a signed 64-bit integer (in
// SQL, ('x' || left(md5, 16))::bit(64)::int8, summed as numeric). Duplicate
// rows count as often as they occur. 64 bits of hash and the count tell sets
// apart well enough to find a chunk that differs; its rows are then compared
// by their whole md5.
type Checksum struct {
	Rows int64
	sum  int128
}

// Add adds one row.
func (c *Checksum) Add(row []Value) { c.AddHash(RowHash(row)) }

// AddHash adds one row by its hash.
func (c *Checksum) AddHash(h Hash) {
	c.Rows++
	c.sum.add(int64(binary.BigEndian.Uint64(h[:8])))
}

// String is the checksum as the sum in decimal, or "" when there are no
// rows.
func (c *Checksum) String() string {
	if c.Rows == 0 {
		return ""
	}
	return c.sum.String()
}

// int128 is a two's complement 128-bit integer: enough for 2^63 sums of
// 64-bit values.
type int128 struct {
	hi int64
	lo uint64
}

func (x *int128) add(v int64) {
	var carry uint64
	x.lo, carry = bits.Add64(x.lo, uint64(v), 0)
	x.hi += int64(carry)
	if v < 0 {
		x.hi--
	}
}

func (x int128) String() string {
	if x.hi == 0 && x.lo <= 1<<63-1 || x.hi == -1 && x.lo >= 1<<63 {
		return strconv.FormatInt(int64(x.lo), 10)
	}
	n := new(big.Int).SetInt64(x.hi)
	n.Lsh(n, 64)
	return n.Add(n, new(big.Int).SetUint64(x.lo)).String()
}
