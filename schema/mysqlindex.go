package schema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrIndexLeftOut is wrapped by MySQLDialect.IndexFromPostgres for a source
// index MySQL cannot have as it is: a sink leaves it out and says why. Rows
// never depend on one: the source enforced its uniqueness already.
var ErrIndexLeftOut = errors.New("index left out on MySQL")

// MySQLIndex is a source index as MySQL has it.
type MySQLIndex struct {
	Name string // the index's name on the table (MySQLIndexName of the source's)
	SQL  string // CREATE [UNIQUE] INDEX …
}

// IndexFromPostgres turns a source index definition (pg_get_indexdef:
// CREATE [UNIQUE] INDEX name ON [ONLY] schema.table USING method (columns)
// [INCLUDE (…)] [WITH (…)] [WHERE …]) into MySQL's CREATE INDEX on t's target
// table. B-tree and hash indexes of plain columns carry over, with a prefix
// length on text and binary columns the key budget cannot hold whole (only
// for non-unique indexes: a prefix would change what is unique); INCLUDE
// columns and storage parameters are dropped. An index on expressions, a
// partial one, another access method, a JSON column, or a unique one with
// NULLS NOT DISTINCT wraps ErrIndexLeftOut with the reason.
func (d *MySQLDialect) IndexFromPostgres(t *Table, def string) (MySQLIndex, error) {
	leftOut := func(why string) (MySQLIndex, error) {
		return MySQLIndex{}, fmt.Errorf("%w: %s (%s)", ErrIndexLeftOut, why, def)
	}
	p := &defParser{s: def}
	if !p.word("CREATE") {
		return leftOut("not a CREATE INDEX")
	}
	unique := p.word("UNIQUE")
	if !p.word("INDEX") {
		return leftOut("not a CREATE INDEX")
	}
	name, ok := p.ident()
	if !ok || !p.word("ON") {
		return leftOut("cannot read the index name")
	}
	p.word("ONLY")
	if _, ok := p.ident(); !ok {
		return leftOut("cannot read the table name")
	}
	if p.peek(".") {
		p.i++
		if _, ok := p.ident(); !ok {
			return leftOut("cannot read the table name")
		}
	}
	if !p.word("USING") {
		return leftOut("no access method")
	}
	method, _ := p.ident()
	if method != "btree" && method != "hash" {
		return leftOut("a " + method + " index has no MySQL counterpart")
	}
	p.space()
	list, ok := p.parens()
	if !ok {
		return leftOut("cannot read the column list")
	}
	for rest := strings.TrimSpace(p.s[p.i:]); rest != ""; rest = strings.TrimSpace(p.s[p.i:]) {
		switch {
		case p.word("INCLUDE"), p.word("WITH"):
			p.space()
			if _, ok := p.parens(); !ok {
				return leftOut("cannot read the definition")
			}
		case p.word("WHERE"):
			return leftOut("a partial index (WHERE) has no MySQL counterpart")
		case p.word("NULLS"):
			return leftOut("NULLS NOT DISTINCT has no MySQL counterpart")
		case p.word("TABLESPACE"):
			p.ident()
		default:
			return leftOut("cannot read the definition")
		}
	}
	m, err := d.Table(t)
	if err != nil {
		return MySQLIndex{}, err
	}
	type part struct {
		col  int
		desc bool
	}
	var parts []part
	for _, item := range splitTopLevel(list) {
		ip := &defParser{s: item}
		colName, ok := ip.ident()
		if !ok || strings.ContainsAny(item, "()") {
			return leftOut("an index on an expression has no MySQL counterpart")
		}
		col := -1
		for i := range t.Columns {
			if t.Columns[i].Name == colName {
				col = i
			}
		}
		if col < 0 {
			return leftOut("column " + colName + " is not replicated")
		}
		desc := strings.Contains(" "+strings.ToUpper(item)+" ", " DESC ")
		parts = append(parts, part{col, desc})
	}
	if len(parts) == 0 || len(parts) > mysqlMaxKeyColumns {
		return leftOut(fmt.Sprintf("%d columns (MySQL takes 1 to %d)", len(parts), mysqlMaxKeyColumns))
	}
	// The key budget: fixed-size columns first, the rest shared.
	budget := mysqlMaxKeyBytes
	var sized []int
	for k, pt := range parts {
		c := &m.cols[pt.col]
		switch {
		case c.json:
			return leftOut("column " + t.Columns[pt.col].Name + " is JSON, which MySQL cannot index")
		case c.fixedBytes > 0:
			budget -= c.fixedBytes
		default:
			sized = append(sized, k)
		}
	}
	prefix := make([]int, len(parts))
	if len(sized) > 0 {
		share := budget / len(sized)
		for _, k := range sized {
			c := &m.cols[parts[k].col]
			per := utf8mb4Bytes
			if c.binary {
				per = 1
			}
			whole := varLength(c.sqlType) // 0 for TEXT and BLOB kinds
			if whole > 0 && whole*per <= share {
				continue
			}
			if unique {
				return leftOut("column " + t.Columns[parts[k].col].Name + " is too long for a unique MySQL index, which cannot use a prefix without changing what is unique")
			}
			prefix[k] = max(1, share/per)
		}
	}
	cols := make([]string, len(parts))
	for k, pt := range parts {
		cols[k] = d.QuoteIdent(t.Columns[pt.col].Name)
		if prefix[k] > 0 {
			cols[k] += "(" + strconv.Itoa(prefix[k]) + ")"
		}
		if pt.desc {
			cols[k] += " DESC"
		}
	}
	idx := MySQLIndex{Name: MySQLIndexName(name)}
	kind := "INDEX "
	if unique {
		kind = "UNIQUE INDEX "
	}
	idx.SQL = "CREATE " + kind + d.QuoteIdent(idx.Name) + " ON " + d.QualifiedTable(t) + " (" + strings.Join(cols, ", ") + ")"
	return idx, nil
}

// varLength is n of VARCHAR(n), CHAR(n), VARBINARY(n); 0 for other types.
func varLength(sqlType string) int {
	open := strings.IndexByte(sqlType, '(')
	if open < 0 || !(strings.HasPrefix(sqlType, "VARCHAR") || strings.HasPrefix(sqlType, "CHAR") || strings.HasPrefix(sqlType, "VARBINARY")) {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(sqlType[open+1:], ")"))
	return n
}

// defParser reads pg_get_indexdef's output.
type defParser struct {
	s string
	i int
}

func (p *defParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *defParser) peek(s string) bool { return strings.HasPrefix(p.s[p.i:], s) }

// word consumes the keyword w (followed by a space or the end).
func (p *defParser) word(w string) bool {
	p.space()
	if !strings.HasPrefix(p.s[p.i:], w) {
		return false
	}
	end := p.i + len(w)
	if end < len(p.s) && p.s[end] != ' ' && p.s[end] != '(' {
		return false
	}
	p.i = end
	return true
}

// ident consumes an identifier, quoted ("a""b") or bare.
func (p *defParser) ident() (string, bool) {
	p.space()
	if p.i >= len(p.s) {
		return "", false
	}
	if p.s[p.i] == '"' {
		var b strings.Builder
		for j := p.i + 1; j < len(p.s); j++ {
			if p.s[j] == '"' {
				if j+1 < len(p.s) && p.s[j+1] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				p.i = j + 1
				return b.String(), true
			}
			b.WriteByte(p.s[j])
		}
		return "", false
	}
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] == '$' || p.s[p.i] >= '0' && p.s[p.i] <= '9' ||
		p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.s[p.i] >= 0x80) {
		p.i++
	}
	return p.s[start:p.i], p.i > start
}

// parens consumes a parenthesised list and returns what it holds.
func (p *defParser) parens() (string, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '(' {
		return "", false
	}
	depth, inQuote, inStr := 0, false, false
	for j := p.i; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case inQuote:
			inQuote = c != '"'
		case inStr:
			inStr = c != '\''
		case c == '"':
			inQuote = true
		case c == '\'':
			inStr = true
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				inner := p.s[p.i+1 : j]
				p.i = j + 1
				return inner, true
			}
		}
	}
	return "", false
}

// splitTopLevel splits a list at commas outside parentheses and quotes.
func splitTopLevel(s string) []string {
	var out []string
	depth, inQuote, inStr, start := 0, false, false, 0
	for j := 0; j < len(s); j++ {
		switch c := s[j]; {
		case inQuote:
			inQuote = c != '"'
		case inStr:
			inStr = c != '\''
		case c == '"':
			inQuote = true
		case c == '\'':
			inStr = true
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:j]))
			start = j + 1
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}
